"""Building the cluster database: rank by rank, streamed, written atomically.

The driver creates ``<output>.tmp-<pid>`` with schema.sql, then for every rank as its task
finishes appends the rank's extract rows, with the rank as a column, to staging tables in a
scratch database beside it: the extract is attached read-only, copied by INSERT ... SELECT
and detached again, so at most the scratch database and one extract are attached at any
time (never every rank at once: SQLite attaches at most 125 databases), and no rank is ever
held in memory.
Appending is sequential whatever order the ranks finish in; at the end each cluster table
is filled from its staging table in primary-key order, one sorted build instead of
millions of inserts scattered over a B-tree (the same reason the analysis builds its large
indexes after the rows are in). Then the status rows and the metadata, and the rename. Any error before the rename removes the temporary file, so an
earlier cluster database at ``output`` stays exactly as it was.
"""
from __future__ import annotations

import os
import sqlite3
import time
from contextlib import closing
from importlib import resources
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from ._ranks import RankResult

# What the per-rank relations cannot tell (typed, instead of a silent zero).
COMM_SIZES_DETAIL = (
    "bytes per collective and peer ranks are not in the per-rank relations "
    "(traceloom_event carries no size, group or peer column): the communication views give "
    "time per collective label and rank, not a byte matrix; the source tables have them "
    "(Ascend COMMUNICATION_OP.groupName/count/dataType, COMMUNICATION_TASK_INFO.size/"
    "srcRank/dstRank; Nsight NCCL NVTX payloads)")
CLOCK_DETAIL = ("arrivals are compared across ranks on their own timestamps: the views assume "
                "one clock (ranks on one host, or hosts synchronized by PTP/NTP)")


def schema_sql() -> str:
    return resources.files(__package__).joinpath("schema.sql").read_text(encoding="utf-8")


def surfaces() -> List[tuple]:
    """(name, grain, purpose) of every cluster relation, from the `-- @cluster` lines."""
    out = []
    for line in schema_sql().splitlines():
        if line.startswith("-- @cluster "):
            name, grain, purpose = (x.strip() for x in line[len("-- @cluster "):].split("|", 2))
            out.append((name, grain, purpose))
    return out


class ClusterWriter:
    """The cluster database being built (a temporary sibling of the output until commit)."""

    def __init__(self, output: Path) -> None:
        self.output = output
        self.tmp = output.with_name(f"{output.name}.tmp-{os.getpid()}")
        self.stage = output.with_name(f"{output.name}.stage-{os.getpid()}")
        for leftover in (self.tmp, Path(str(self.tmp) + "-journal"), self.stage):
            if leftover.exists():
                leftover.unlink()
        # URI filenames on, so that each extract is attached with ?mode=ro.
        self.conn = sqlite3.connect(self.tmp.as_uri(), uri=True, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = OFF")
        self.conn.execute("PRAGMA synchronous = OFF")
        self.conn.executescript(schema_sql())
        # The one scratch database of the staging tables (plain rowid tables, appended to).
        self.conn.execute("ATTACH DATABASE ? AS stage", (self.stage.as_uri(),))
        self.conn.execute("PRAGMA stage.journal_mode = OFF")
        self.conn.execute("PRAGMA stage.synchronous = OFF")
        for table in _STAGED:
            self.conn.execute(f"CREATE TABLE stage.{table} AS SELECT * FROM main.{table} WHERE 0")
        self.merge_s = 0.0

    def add_rank(self, res: RankResult) -> None:
        """Streams one rank's extract in (or records its failure)."""
        t0 = time.monotonic()
        meta: Dict[str, str] = {}
        c = self.conn
        c.execute("BEGIN")
        if res.ok and res.extract_db:
            # One extract attached at a time (read-only), copied by INSERT ... SELECT.
            uri = Path(res.extract_db).resolve().as_uri() + "?mode=ro"
            c.execute("ATTACH DATABASE ? AS rank_extract", (uri,))
            try:
                meta = dict(c.execute("SELECT key, value FROM rank_extract.meta"))
                for sql in _COPY_SQL:
                    c.execute(sql, (res.rank,))
            finally:
                c.execute("COMMIT")
                c.execute("DETACH DATABASE rank_extract")
                c.execute("BEGIN")
        c.execute("INSERT INTO traceloom_cluster_rank VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", (
            res.rank, res.name, res.input_path, res.source_kind, res.status, res.error,
            res.input_sha256, res.analysis_db if res.ok else None, meta.get("device_ids"),
            _int(meta.get("anchors")), _int(meta.get("collective_rows")), res.worker,
            round(res.hash_s, 3), round(res.analysis_s, 3), round(res.extract_s, 3),
            res.peak_rss_kb))
        if not res.ok:
            c.execute("INSERT INTO traceloom_cluster_status VALUES(?,?,?)",
                      (res.rank, "rank_failed", f"{res.input_path}: {res.error}"))
        elif "," in (meta.get("device_ids") or ""):
            c.execute("INSERT INTO traceloom_cluster_status VALUES(?,?,?)",
                      (res.rank, "multi_device_rank",
                       f"{res.input_path} holds devices {meta['device_ids']}: each (rank, device) "
                       "is its own participant in the cross-rank views"))
        c.execute("COMMIT")
        self.merge_s += time.monotonic() - t0

    def commit(self, metadata: Dict[str, str]) -> None:
        """Final status rows and metadata, then the atomic rename."""
        t0 = time.monotonic()
        c = self.conn
        c.execute("BEGIN")
        for table, key in _STAGED.items():
            c.execute(f"INSERT INTO main.{table} SELECT * FROM stage.{table} ORDER BY {key}")
        c.execute("COMMIT")
        c.execute("DETACH DATABASE stage")
        self.stage.unlink()
        c.execute("BEGIN")
        if c.execute("SELECT 1 FROM traceloom_cluster_collective LIMIT 1").fetchone():
            c.execute("INSERT INTO traceloom_cluster_status VALUES(NULL, 'comm_sizes_unavailable', ?)",
                      (COMM_SIZES_DETAIL,))
            c.execute("INSERT INTO traceloom_cluster_status VALUES(NULL, 'clock_assumption', ?)",
                      (CLOCK_DETAIL,))
        differing = c.execute("SELECT count(*) FROM traceloom_cluster_v_tree_diff").fetchone()[0]
        if differing:
            c.execute("INSERT INTO traceloom_cluster_status VALUES(NULL, 'trees_differ', ?)",
                      (f"{differing} row(s) in traceloom_cluster_v_tree_diff say where and why",))
        self.merge_s += time.monotonic() - t0
        metadata = dict(metadata, merge_s=f"{self.merge_s:.3f}")
        c.executemany("INSERT INTO traceloom_cluster_metadata VALUES(?,?)", sorted(metadata.items()))
        c.execute("COMMIT")
        c.close()
        os.replace(self.tmp, self.output)

    def abort(self) -> None:
        try:
            self.conn.close()
        finally:
            for leftover in (self.tmp, Path(str(self.tmp) + "-journal"), self.stage):
                try:
                    leftover.unlink()
                except FileNotFoundError:
                    pass


# Copies of one attached extract into the staging tables, the rank bound as ?1.
_COPY_SQL = (
    "INSERT INTO stage.traceloom_cluster_node SELECT struct_path, ?1, device_id, parent_path, "
    "kind, symbol, depth, repeat_count, occurrences, compute_ns, comm_ns, idle_ns, total_ns "
    "FROM rank_extract.node",
    "INSERT INTO stage.traceloom_cluster_iteration SELECT struct_path, iteration, ?1, device_id, "
    "iteration_idx, start_ns, end_ns, anchors, compute_ns, comm_ns, idle_ns, total_ns "
    "FROM rank_extract.iteration",
    "INSERT INTO stage.traceloom_cluster_collective SELECT label, seq, ?1, device_id, symbol, "
    "struct_path, iteration, start_ns, end_ns FROM rank_extract.collective",
)

# The staged tables and their primary keys (schema.sql), the order they are built in.
_STAGED = {
    "traceloom_cluster_node": "struct_path, rank, device_id",
    "traceloom_cluster_iteration": "struct_path, iteration, rank, device_id",
    "traceloom_cluster_collective": "label, seq, rank, device_id",
}


def _int(value: Optional[str]) -> Optional[int]:
    return int(value) if value not in (None, "") else None


def ok_analyses(cluster_db: Path, ranks: Optional[Iterable[int]] = None) -> List[tuple]:
    """(rank, analysis db) of the ranks whose analysis succeeded, optionally only ``ranks``."""
    uri = Path(cluster_db).resolve().as_uri() + "?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as c:
        rows = c.execute("SELECT rank, analysis_db FROM traceloom_cluster_rank "
                         "WHERE status <> 'failed' ORDER BY rank").fetchall()
    if ranks is not None:
        wanted = set(ranks)
        rows = [r for r in rows if r[0] in wanted]
    return rows

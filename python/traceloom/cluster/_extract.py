"""The per-rank facts a cluster database needs, read from one rank's analysis database.

A worker runs this right after the rank's analysis, so the expensive part (grouping every
occurrence of the rank by structural path) runs in parallel, and writes the result into a
small extract database beside the analysis (``cluster_extract.db``). The driver then
streams the extracts into the cluster database one rank at a time.

Only public relations of the analysis database are read (traceloom_v_tree_node,
traceloom_position_occurrence, traceloom_anchor, traceloom_metadata), so the extraction
works in either node model (a DAG of shared positions, or one node per structural
position): every structural key is built from an occurrence's own rooted path.

Structural paths. A position is named by kind and symbol, never by its rank-local id:
``seq``, ``repeat``, ``exec:RmsNorm``, ``comm:AllReduce``. An occurrence's rooted path
``node-N001/s1/node-N002/s2/node-N004`` becomes ``seq/s1/repeat/s2/repeat``: the same
string on every rank that ran the same model, whatever its node numbering. An iteration of
a repeat is that repeat's structural path plus the iteration numbers of every enclosing
repeat, outermost first (``1.2`` = iteration 2 of the inner repeat within iteration 1 of
the outer one), read from the occurrence's repeat context. A collective instance is its
label (the communication op name) and its sequence number among the rank's collectives of
that label, in the device's anchor order: collectives on one communicator are issued in
the same order on every rank, so (label, sequence) names the same instance everywhere,
never matched by time.
"""
from __future__ import annotations

import os
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Dict, Iterator, Tuple

EXTRACT_VERSION = "1"

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE node(device_id INTEGER, struct_path TEXT, parent_path TEXT, kind TEXT, symbol TEXT,
  depth INTEGER, repeat_count INTEGER, occurrences INTEGER, compute_ns INTEGER, comm_ns INTEGER,
  idle_ns INTEGER, total_ns INTEGER, PRIMARY KEY(device_id, struct_path));
CREATE TABLE iteration(device_id INTEGER, struct_path TEXT, iteration TEXT, iteration_idx INTEGER,
  start_ns INTEGER, end_ns INTEGER, anchors INTEGER, compute_ns INTEGER, comm_ns INTEGER,
  idle_ns INTEGER, total_ns INTEGER, PRIMARY KEY(device_id, struct_path, iteration));
CREATE TABLE collective(device_id INTEGER, label TEXT, seq INTEGER, symbol TEXT,
  struct_path TEXT, iteration TEXT, start_ns INTEGER, end_ns INTEGER,
  PRIMARY KEY(device_id, label, seq));
"""

# Microseconds with three decimals (as the analysis publishes costs) to exact nanoseconds.
_NS = "CAST(round({0} * 1000) AS INTEGER)"

# An atom is named by its anchor role (exec, comm, graph: from the node's category, which
# names collectives 'collective' and graph launches by their slot), so a collective and a
# kernel of one name stay apart.
_POSITIONS_SQL = """
SELECT db_idx, device_id, node_id,
       CASE WHEN kind <> 'atom' THEN kind
            WHEN category IN ('collective', 'comm') THEN 'comm'
            WHEN category LIKE 'graph%' THEN 'graph'
            ELSE COALESCE(category, 'exec') END, symbol,
       repeat_count
FROM traceloom_v_tree_node
"""

_NODE_SQL = f"""
SELECT db_idx, device_id, rooted_position_path, count(*),
       sum({_NS.format('compute_us')}), sum({_NS.format('comm_us')}),
       sum({_NS.format('idle_us')}), sum({_NS.format('total_us')})
  FROM traceloom_position_occurrence
 GROUP BY db_idx, device_id, rooted_position_path
"""

# The iterations of a repeat: its child occurrences grouped by parent occurrence and
# iteration number (a body of several slots is several child occurrences per iteration).
_ITERATION_SQL = f"""
SELECT c.db_idx, c.device_id, p.position_id, p.rooted_position_path, min(c.repeat_context),
       c.repeat_iteration,
       min(c.start_ns), max(c.end_ns), sum(c.anchor_end_n - c.anchor_first_n),
       sum({_NS.format('c.compute_us')}), sum({_NS.format('c.comm_us')}),
       sum({_NS.format('c.idle_us')}), sum({_NS.format('c.total_us')})
  FROM traceloom_position_occurrence c
  JOIN traceloom_position_refinement r ON r.child_n = c.node_n
  JOIN traceloom_position_occurrence p ON p.occurrence_n = c.parent_n
 WHERE r.edge_kind = 'repeat_body'
 GROUP BY c.parent_n, c.repeat_iteration
"""

_COLLECTIVE_SQL = """
SELECT a.db_idx, a.device_id, a.label, a.symbol, a.start_ns, a.end_ns, o.rooted_position_path,
       o.repeat_context
  FROM traceloom_anchor a
  LEFT JOIN traceloom_position_occurrence o
    ON o.occurrence_id = a.node_id || '-occurrence-' || a.occurrence_idx
   AND o.db_idx = a.db_idx AND o.device_id = a.device_id
 WHERE a.role = 'comm'
 ORDER BY a.db_idx, a.device_id, a.anchor_n
"""

_NODE_TOKEN = re.compile(r"^node-(.+)$")
_CONTEXT_NUMBER = re.compile(r"[:#](\d+)")   # N002#1/N004#2 (older analyses: N002:1,N004:2)


def _signature(kind: str, symbol: str) -> str:
    if kind in ("seq", "repeat"):
        return kind
    # '/' separates path steps: keep it out of symbols (kernel names may contain one).
    return f"{kind}:{(symbol or '').replace('%', '%25').replace('/', '%2F')}"


class _Paths:
    """Rank-local rooted paths to structural paths, memoised (a tree has few distinct paths).

    Node ids are local to a tree (one per input and device), so they are keyed by
    (db_idx, device_id, node id)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.sig: Dict[tuple, str] = {}
        self.kind: Dict[tuple, str] = {}
        self.symbol: Dict[tuple, str] = {}
        self.repeat_count: Dict[tuple, int] = {}
        for db, device, node_id, kind, symbol, repeat_count in conn.execute(_POSITIONS_SQL):
            key = (db, device, node_id)
            self.sig[key] = _signature(kind, symbol)
            self.kind[key] = kind
            self.symbol[key] = symbol
            self.repeat_count[key] = repeat_count
        self._memo: Dict[tuple, Tuple[str, str, int, tuple]] = {}

    def convert(self, db: int, device: int, rooted: str) -> Tuple[str, str, int, tuple]:
        """(structural path, parent structural path, depth, last node key) of a rooted path."""
        hit = self._memo.get((db, device, rooted))
        if hit is not None:
            return hit
        parts = rooted.split("/")
        out, last, depth, in_repeat = [], (), 0, False
        for i, part in enumerate(parts):
            if _NODE_TOKEN.match(part):
                key = (db, device, part)
                if key not in self.sig:
                    raise ValueError(f"rooted path {rooted!r} names {part}, which "
                                     f"traceloom_v_tree_node does not list for db_idx {db}, "
                                     f"device {device}")
                out.append(self.sig[key])
                last = key
                in_repeat = in_repeat or self.kind[key] == "repeat"
            else:
                # Outside every repeat, an operator's slot number only counts the unrepeated
                # work before it (noise shifts it from rank to rank): such operators are
                # one node per symbol, 'seq/*/exec:MatMul'. Repeats and sequences keep
                # their slots, and everything inside a repeat keeps its exact slot.
                child = (db, device, parts[i + 1]) if i + 1 < len(parts) else None
                atom = child is not None and self.kind.get(child) not in ("seq", "repeat")
                out.append("*" if atom and not in_repeat else part)
                depth += 1
        struct = "/".join(out)
        parent = "/".join(out[:-2]) if len(out) > 2 else None
        hit = (struct, parent, depth, last)
        self._memo[(db, device, rooted)] = hit
        return hit


def _iteration_key(context: str, iteration: int) -> str:
    """Iteration numbers, outermost first, from a repeat context such as 'N002#1/N004#2'."""
    numbers = _CONTEXT_NUMBER.findall(context or "")
    if not numbers or int(numbers[-1]) != iteration:
        numbers.append(str(iteration))   # a context that stops above the repeat itself
    return ".".join(numbers)


def _node_rows(conn: sqlite3.Connection, paths: _Paths) -> Iterator[tuple]:
    """One row per (device, structural path): several rooted paths of operators outside every
    repeat become one ('seq/*/exec:MatMul'), so their sums are added up here."""
    acc: Dict[Tuple[int, str], list] = {}
    for db, device, rooted, occ, comp, comm, idle, total in conn.execute(_NODE_SQL):
        struct, parent, depth, node = paths.convert(db, device, rooted)
        row = acc.get((device, struct))
        if row is None:
            acc[(device, struct)] = [parent, paths.kind[node], paths.symbol[node], depth,
                                     paths.repeat_count[node], occ, comp, comm, idle, total]
        else:
            for i, v in enumerate((occ, comp, comm, idle, total), start=5):
                row[i] += v
    for (device, struct) in sorted(acc):
        yield (device, struct, *acc[(device, struct)])


def _iteration_rows(conn: sqlite3.Connection, paths: _Paths) -> Iterator[tuple]:
    for db, device, parent, rooted, context, it, start, end, anchors, comp, comm, idle, total in \
            conn.execute(_ITERATION_SQL):
        if paths.kind.get((db, device, parent)) != "repeat":
            continue      # the parent is a sequence: its children are not iterations
        struct = paths.convert(db, device, rooted)[0]
        yield (device, struct, _iteration_key(context, it), it, start, end, anchors,
               comp, comm, idle, total)


def _collective_rows(conn: sqlite3.Connection, paths: _Paths) -> Iterator[tuple]:
    seq: Dict[Tuple[int, int, str], int] = {}
    for db, device, label, symbol, start, end, rooted, context in conn.execute(_COLLECTIVE_SQL):
        key = (db, device, label)
        n = seq.get(key, 0)
        seq[key] = n + 1
        struct = paths.convert(db, device, rooted)[0] if rooted else None
        numbers = ".".join(_CONTEXT_NUMBER.findall(context or "")) if rooted else None
        yield (device, label, n, symbol, struct, numbers or None, start, end)


def write_extract(analysis_db: Path, extract_db: Path, meta: Dict[str, str]) -> Dict[str, int]:
    """Writes the extract of ``analysis_db`` to ``extract_db`` atomically; returns row counts."""
    tmp = extract_db.with_name(f"{extract_db.name}.tmp-{os.getpid()}")
    if tmp.exists():
        tmp.unlink()
    src = sqlite3.connect(analysis_db.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        src.execute("PRAGMA query_only = ON")
        with closing(sqlite3.connect(tmp, isolation_level=None)) as out:
            out.execute("PRAGMA journal_mode = OFF")
            out.execute("PRAGMA synchronous = OFF")
            out.executescript(SCHEMA)
            out.execute("BEGIN")
            paths = _Paths(src)
            out.executemany("INSERT INTO node VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", _node_rows(src, paths))
            out.executemany("INSERT INTO iteration VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                            _iteration_rows(src, paths))
            out.executemany("INSERT INTO collective VALUES(?,?,?,?,?,?,?,?)",
                            _collective_rows(src, paths))
            counts = {t: out.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                      for t in ("node", "iteration", "collective")}
            devices = [r[0] for r in src.execute(
                "SELECT DISTINCT device_id FROM traceloom_v_tree_node ORDER BY device_id")]
            anchors = src.execute("SELECT count(*) FROM traceloom_anchor").fetchone()[0]
            full = dict(meta, extract_version=EXTRACT_VERSION,
                        device_ids=",".join(str(d) for d in devices), anchors=str(anchors),
                        **{f"{t}_rows": str(n) for t, n in counts.items()})
            out.executemany("INSERT INTO meta VALUES(?,?)", sorted(full.items()))
            out.execute("COMMIT")
    except BaseException:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise
    finally:
        src.close()
    os.replace(tmp, extract_db)
    return dict(counts, anchors=anchors, devices=len(devices))


def read_meta(extract_db: Path) -> Dict[str, str]:
    """The meta table of an extract, or {} when there is none or it is unreadable."""
    if not extract_db.is_file():
        return {}
    try:
        with closing(sqlite3.connect(extract_db.resolve().as_uri() + "?mode=ro", uri=True)) as c:
            return dict(c.execute("SELECT key, value FROM meta"))
    except sqlite3.Error:
        return {}

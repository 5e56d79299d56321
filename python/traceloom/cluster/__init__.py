"""traceloom.cluster: analyse every rank of a run on Dask, into one cluster database.

    import traceloom.cluster

    result = traceloom.cluster.analyze("run_dir", output="cluster.db")       # a LocalCluster
    result = traceloom.cluster.analyze("run_dir", output="cluster.db",
                                       client="tcp://scheduler:8786")         # a running cluster
    result.failed                        # [RankResult] of the ranks that failed, with errors
    result.db.query("SELECT * FROM traceloom_cluster_v_wait_cause ORDER BY times_last DESC")
    traceloom.cluster.export_perfetto("cluster.db", "ranks.perfetto.json.gz")

One Dask task per rank runs the bundled CLI on a worker (so profiles and outputs must be on
a filesystem every worker sees, as for Nsight's recipes), and writes the rank's analysis
database and a small extract into ``<output stem>.ranks/<rank name>/``. The driver streams
each extract into the cluster database as its task finishes and renames the database into
place at the end. A rank whose input hash, options and TraceLoom version match its earlier
extract is reused instead of analysed again. docs/CLUSTER.md describes the views.

Importing this module does not import Dask; analyze() does, unless ``client=False`` (the
plain local run: every rank one after another in this process, without Dask).
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

from .. import _paths
from .._database import AnalysisDatabase
from .._native import run_cli
from ._merge import ClusterWriter, ok_analyses, surfaces
from ._ranks import RankResult, RankSpec, make_specs, options_key, run_rank

PathLike = Union[str, "os.PathLike[str]"]
Progress = Callable[[RankResult, int, int], None]

__all__ = ["ClusterDatabase", "ClusterResult", "RankResult", "analyze", "export_perfetto"]


class ClusterDatabase(AnalysisDatabase):
    """A cluster database, read-only; query() as for an analysis database."""

    def __init__(self, path: PathLike) -> None:  # pylint: disable=super-init-not-called
        p = Path(os.fspath(path))
        if not p.is_file():
            raise FileNotFoundError(2, "cluster database not found", str(p))
        self.path = p.resolve()
        try:
            self.query("SELECT 1 FROM traceloom_cluster_metadata LIMIT 1")
        except Exception as e:  # sqlite3.DatabaseError
            raise ValueError(f"{self.path} is not a TraceLoom cluster database ({e})") from None

    def __repr__(self) -> str:
        return f"ClusterDatabase({str(self.path)!r})"

    def tables(self) -> List[str]:
        return sorted(name for name, _, _ in surfaces())

    def metadata(self) -> Dict[str, Optional[str]]:
        rows = self.query("SELECT key, value FROM traceloom_cluster_metadata ORDER BY key",
                          limit=None, as_tuples=True)
        return {k: v for k, v in rows}


@dataclass
class ClusterResult:
    """What analyze() did: the database, every rank's result, the time spent."""

    path: Path
    ranks: List[RankResult]
    engine: str
    elapsed_s: float
    merge_s: float
    ranks_dir: Path
    failed: List[RankResult] = field(default_factory=list)

    @property
    def db(self) -> ClusterDatabase:
        return ClusterDatabase(self.path)


def _cli_version() -> str:
    r = subprocess.run([str(_paths.cli_path()), "--version"], capture_output=True, text=True,
                       errors="replace", timeout=60)
    return (r.stdout or r.stderr).strip()


def _print_progress(res: RankResult, done: int, total: int) -> None:
    what = {"analysed": f"analysed in {res.analysis_s:.1f} s",
            "reused": "reused (same input hash)",
            "failed": f"FAILED: {res.error}"}[res.status]
    print(f"traceloom cluster: [{done}/{total}] rank {res.rank} {res.name}: {what}",
          file=sys.stderr, flush=True)


def _sources(run_dir_or_paths: Any) -> List[Path]:
    if isinstance(run_dir_or_paths, (str, os.PathLike)):
        items = [run_dir_or_paths]
    else:
        try:
            items = list(run_dir_or_paths)
        except TypeError:
            raise TypeError("run_dir_or_paths must be a path or a sequence of paths, not "
                            f"{type(run_dir_or_paths).__name__}") from None
    if not items:
        raise ValueError("run_dir_or_paths names no profile")
    paths = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)) or isinstance(item, bytes):
            raise TypeError(f"each profile must be a str or os.PathLike, not {type(item).__name__}")
        p = Path(os.fspath(item))
        if not p.exists():
            raise FileNotFoundError(2, "profile not found", str(p))
        paths.append(p)
    return paths


def _engine(client: Any, workers: Optional[int], n_ranks: int):
    """(client or None, a description, a cleanup function)."""
    if client is False:
        return None, "serial (this process, no Dask)", lambda: None
    from distributed import Client, LocalCluster  # imported only when needed
    if client is None:
        n = workers or max(1, min(n_ranks, os.cpu_count() or 1))
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        c = Client(cluster)

        def close() -> None:
            c.close()
            cluster.close()
        return c, f"dask LocalCluster ({n} worker process(es))", close
    if isinstance(client, str):
        c = Client(client)
        return c, f"dask cluster at {client}", c.close
    return client, f"dask client {getattr(client, 'scheduler', client)}", lambda: None


def analyze(
    run_dir_or_paths: Union[PathLike, Sequence[PathLike]],
    output: PathLike = "cluster.db",
    client: Any = None,
    *,
    workers: Optional[int] = None,
    threads_per_rank: int = 1,
    rules_config: Optional[str] = None,
    ranks_dir: Optional[PathLike] = None,
    progress: Union[bool, Progress, None] = None,
) -> ClusterResult:
    """Analyses every rank of a run and builds one cluster database.

    Args:
        run_dir_or_paths: a run directory (each profile input in it is a rank, in sorted order)
            or a sequence of profiles, one rank each, in rank order.
        output: the cluster database; replaced atomically (a failure leaves an earlier one).
        client: None for a LocalCluster on this machine (``workers`` processes), a scheduler
            address such as ``"tcp://host:8786"``, a ``distributed.Client``, or False to run
            the ranks one after another in this process without Dask.
        workers: LocalCluster worker processes (default: min(ranks, CPU cores)).
        threads_per_rank: ``--threads`` of each rank's analysis (results never depend on it).
        rules_config: a bundled config name or a rules file, as for traceloom.analyze().
        ranks_dir: where the per-rank analyses go (default ``<output stem>.ranks`` beside it).
        progress: True prints a line per finished rank to stderr (default: when stderr is a
            terminal), or a callable ``(rank_result, done, total)``.

    Returns:
        A ClusterResult; ``result.failed`` lists the ranks that failed (their errors are also
        in ``traceloom_cluster_rank`` and ``traceloom_cluster_status``).
    """
    t_start = time.monotonic()
    out = Path(os.fspath(output)).resolve()
    if not out.parent.is_dir():
        raise FileNotFoundError(2, "the folder of the output does not exist", str(out.parent))
    if out.is_dir():
        raise IsADirectoryError(21, "output must be a file path, not a folder", str(out))
    if isinstance(threads_per_rank, bool) or not isinstance(threads_per_rank, int) \
            or not 1 <= threads_per_rank <= 256:
        raise ValueError(f"threads_per_rank must be an int from 1 to 256, not {threads_per_rank!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive int, not {workers!r}")
    sources = _sources(run_dir_or_paths)
    rdir = Path(os.fspath(ranks_dir)).resolve() if ranks_dir is not None else \
        out.with_name(out.stem + ".ranks")
    cli_args = ["--threads", str(threads_per_rank)]
    if rules_config is not None:
        from .._analyze import _rules_option
        cli_args += ["--rules-config", str(_rules_option(rules_config))]
    specs = make_specs(sources, rdir, cli_args, options_key(cli_args))
    rdir.mkdir(parents=True, exist_ok=True)
    version = _cli_version()
    if progress is None:
        progress = sys.stderr.isatty()
    report: Optional[Progress] = _print_progress if progress is True else (progress or None)

    writer = ClusterWriter(out)
    results: Dict[int, RankResult] = {}
    try:
        dask_client, engine, close = _engine(client, workers, len(specs))
        try:
            for res in _run_all(dask_client, specs, version):
                results[res.rank] = res
                writer.add_rank(res)
                if report:
                    report(res, len(results), len(specs))
        finally:
            close()
        ranks = [results[s.rank] for s in specs]
        writer.commit({
            "cluster_schema_version": "1",
            "traceloom_version": version,
            "sources": "\n".join(str(p.resolve()) for p in sources),
            "ranks": str(len(ranks)),
            "ranks_ok": str(sum(r.ok for r in ranks)),
            "ranks_failed": str(sum(not r.ok for r in ranks)),
            "ranks_dir": str(rdir),
            "options": options_key(cli_args),
            "engine": engine,
        })
    except BaseException:
        writer.abort()
        raise
    return ClusterResult(out, ranks, engine, time.monotonic() - t_start, writer.merge_s, rdir,
                         [r for r in ranks if not r.ok])


def _run_all(client: Any, specs: List[RankSpec], version: str) -> Iterable[RankResult]:
    """Each rank's result as soon as it is known (completion order)."""
    if client is None:
        for spec in specs:
            yield run_rank(spec, version)
        return
    from distributed import as_completed
    futures = {client.submit(run_rank, spec, version, pure=False,
                             key=f"traceloom-rank-{spec.rank}-{os.getpid()}-{time.time_ns()}"): spec
               for spec in specs}
    for fut in as_completed(futures):
        spec = futures[fut]
        try:
            yield fut.result()
        except Exception as e:  # noqa: BLE001 - a worker lost mid-task, for example
            yield RankResult(spec.rank, spec.name, spec.input_path, "failed",
                             error=f"{type(e).__name__}: {e}", source_kind=spec.source_kind)


def export_perfetto(cluster_db: PathLike, output: PathLike, *, ranks: Optional[Iterable[int]] = None,
                    align: Optional[str] = None, timeout: Optional[float] = None) -> Path:
    """A multi-rank Perfetto timeline of the ranks a cluster database records.

    Runs ``traceloom export-perfetto DB0 --rank 0=DB0 --rank R=DB ...`` over the per-rank
    analysis databases (the first exported rank is the display reference, rank 0 of the
    timeline; the others keep their cluster rank numbers). ``ranks`` picks some ranks (the
    exporter opens every database it is given at once, so keep the list to what you want to
    look at for hundreds of ranks); failed ranks are left out.
    """
    rows = ok_analyses(Path(os.fspath(cluster_db)), ranks)
    if not rows:
        raise ValueError(f"{cluster_db}: no successfully analysed rank to export")
    out = Path(os.fspath(output)).resolve()
    base_rank, base_db = rows[0]
    args = ["export-perfetto", base_db, "--output", str(out)]
    for rank, db in rows:
        args += ["--rank", f"{0 if rank == base_rank else rank}={db}"]
    if align is not None:
        args += ["--align", align]
    run_cli(args, timeout=timeout, output=out)
    return out

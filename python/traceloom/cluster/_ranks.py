"""Which ranks a run holds, and the one task that analyses a rank on a worker.

Discovery asks the extension (``traceloom_profile(run_dir)``: the same discovery the
analysis uses, so every profile family it reads is a rank here, one per input, in its
sorted order). A rank's task (`run_rank`) runs on a Dask worker or in this process: it
hashes the rank's input files, reuses an earlier analysis whose extract records the same
input hash, options and TraceLoom version, and otherwise runs the bundled CLI into the
rank's folder and writes the extract (``_extract.py``). It never raises for a bad rank:
the error comes back in the result, so one rank cannot lose the others.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .. import _paths
from .._errors import AnalysisError
from .._native import load
from . import _extract

_HASH_CHUNK = 1 << 20


@dataclass
class RankSpec:
    """One rank to analyse: everything a worker needs (plain data, so it pickles)."""

    rank: int
    name: str                # a label unique in the run (the input's folder or file name)
    input_path: str          # what the CLI is given
    files: List[str]         # the files whose bytes make up the input (hashed for reuse)
    source_kind: str
    out_dir: str             # <cluster stem>.ranks/<name>: analysis.db, cluster_extract.db
    cli_args: List[str] = field(default_factory=list)   # options for every rank
    options_key: str = ""    # what, besides the input, decides the analysis
    error: Optional[str] = None   # discovery already failed for this rank


@dataclass
class RankResult:
    """What became of one rank; failed ranks carry the error instead of an analysis."""

    rank: int
    name: str
    input_path: str
    status: str              # 'analysed', 'reused' or 'failed'
    error: Optional[str] = None
    input_sha256: Optional[str] = None
    source_kind: Optional[str] = None
    analysis_db: Optional[str] = None
    extract_db: Optional[str] = None
    analysis_s: float = 0.0
    extract_s: float = 0.0
    hash_s: float = 0.0
    worker: str = ""
    peak_rss_kb: int = 0     # peak RSS of this rank's analysis (the CLI), 0 when reused

    @property
    def ok(self) -> bool:
        return self.status != "failed"

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _profile_rows(run_dir: Path) -> List[tuple]:
    """(db_idx, item, source_kind, path) rows of traceloom_profile(run_dir)."""
    try:
        import apsw  # type: ignore[import-not-found]
    except ImportError:
        apsw = None
    sql = ("SELECT db_idx, item, source_kind, path FROM traceloom_profile(?) "
           "WHERE item IN ('input', 'file') ORDER BY db_idx")
    if apsw is not None:
        conn = apsw.Connection(":memory:")
        try:
            load(conn)
            return list(conn.execute(sql, (str(run_dir),)))
        finally:
            conn.close()
    import sqlite3
    c = sqlite3.connect(":memory:")
    try:
        load(c)   # raises ExtensionLoadingUnavailable (pointing to apsw) where it cannot
        return c.execute(sql, (str(run_dir),)).fetchall()
    finally:
        c.close()


def _unique_names(paths: Sequence[Path]) -> List[str]:
    """Short names that tell the ranks apart: the file or folder name, else more of the path."""
    def name_at(p: Path, depth: int) -> str:
        parts = p.parts[-depth:]
        return "_".join(x.replace(os.sep, "_") for x in parts)
    for depth in range(1, max((len(p.parts) for p in paths), default=1) + 1):
        names = [name_at(p, depth) for p in paths]
        if len(set(names)) == len(names):
            return names
    return [f"rank{i}" for i in range(len(paths))]


def _rank_label(input_path: Path, run_dir: Optional[Path]) -> Path:
    """The part of an input path that names its rank: the input relative to the run dir, up
    to its first folder (PROF_3, rank_3.sqlite, host_123_ascend_pt)."""
    if run_dir is not None:
        try:
            rel = input_path.relative_to(run_dir)
            return Path(rel.parts[0]) if rel.parts else Path(input_path.name)
        except ValueError:
            pass
    return input_path


# Where discovery of a whole run directory fails (one rank's input is broken), each entry
# of the directory that looks like a rank is discovered on its own, so that the broken one
# becomes a failed rank and the others are analysed.
_RANK_DIR_PATTERNS = ("PROF_*", "*_ascend_pt")
_RANK_FILE_PATTERNS = ("*.db", "*.sqlite", "*.pt.trace.json", "*.pt.trace.json.gz")


def _rank_candidates(run_dir: Path) -> List[Path]:
    out = []
    for child in sorted(run_dir.iterdir()):
        pats = _RANK_DIR_PATTERNS if child.is_dir() else _RANK_FILE_PATTERNS
        if any(child.match(p) for p in pats):
            out.append(child)
    return out


def _discover_one(src: Path) -> tuple:
    """(input, files, kind, label, error) of a path that must be exactly one input."""
    try:
        rows = _profile_rows(src)
    except Exception as e:  # noqa: BLE001 - the extension's message names file, table, column
        return (str(src), [], None, src, str(e))
    inputs = sorted({(r[0], r[3]) for r in rows if r[1] == "input"})
    if len(inputs) != 1:
        raise ValueError(f"{src}: a rank must be exactly one profile input, and this holds "
                         f"{len(inputs)}; pass the run directory instead to take each as a rank")
    files = [r[3] for r in rows if r[1] == "file" and r[3]]
    kind = next(r[2] for r in rows if r[1] == "input")
    return (str(src), files or [str(src)], kind, src, None)


def discover(sources: Sequence[Path]) -> List[tuple]:
    """[(input path, files, source kind, label, error)] for a run directory or a list of profiles.

    A single directory is one run: each input the extension discovers in it is a rank. A
    list names the ranks itself: each entry must be exactly one input. A rank whose
    discovery fails comes back with its error (and no files).
    """
    found = []
    if len(sources) == 1 and sources[0].is_dir():
        run_dir = sources[0].resolve()
        try:
            rows = _profile_rows(run_dir)
        except Exception:  # noqa: BLE001 - one broken rank: discover the ranks one by one
            found = [_discover_one(c) for c in _rank_candidates(run_dir)]
            if not found:
                raise
            return found
        by_idx: Dict[int, Dict[str, Any]] = {}
        for idx, item, kind, path in rows:
            entry = by_idx.setdefault(idx, {"input": None, "files": [], "kind": kind})
            if item == "input":
                entry["input"] = path
            elif path:
                entry["files"].append(path)
        for idx in sorted(by_idx):
            e = by_idx[idx]
            if e["input"] is None:
                continue
            found.append((e["input"], e["files"] or [e["input"]], e["kind"],
                          _rank_label(Path(e["input"]), run_dir), None))
        if not found:
            raise ValueError(f"{run_dir}: no profile found (traceloom_profile lists no input)")
        return found
    return [_discover_one(src.resolve()) for src in sources]


def make_specs(sources: Sequence[Path], ranks_dir: Path, cli_args: List[str],
               options_key: str) -> List[RankSpec]:
    found = discover(sources)
    names = _unique_names([label for _, _, _, label, _ in found])
    return [RankSpec(rank=i, name=names[i], input_path=inp, files=sorted(set(files)),
                     source_kind=kind, out_dir=str(ranks_dir / names[i]), cli_args=list(cli_args),
                     options_key=options_key, error=err)
            for i, (inp, files, kind, _, err) in enumerate(found)]


def input_sha256(files: Sequence[str]) -> str:
    """One SHA-256 over the rank's files (their names relative to nothing, sizes and bytes)."""
    h = hashlib.sha256()
    for f in sorted(files):
        p = Path(f)
        h.update(p.name.encode() + b"\0" + str(p.stat().st_size).encode() + b"\0")
        with open(p, "rb") as fh:
            while True:
                chunk = fh.read(_HASH_CHUNK)
                if not chunk:
                    break
                h.update(chunk)
    return h.hexdigest()


# The CLI runs under a small Python that waits for it with wait4(): the rusage of a child
# started straight from a worker would count the worker's own memory (the child runs in a
# copy of it until exec), while the grandchild starts from this small process.
_MEASURED = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
sys.stderr.write("\\ntraceloom-cluster-peak-rss-kb %d\\n" % usage.ru_maxrss)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""
_PEAK_MARK = "traceloom-cluster-peak-rss-kb "


def _run_cli_measured(args: List[str]) -> int:
    """Runs the bundled CLI; returns its peak RSS in KiB; AnalysisError when it fails."""
    cmd = [str(_paths.cli_path()), *args]
    r = subprocess.run([sys.executable, "-c", _MEASURED, *cmd], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, errors="replace")
    peak, kept = 0, []
    for line in r.stderr.splitlines():
        if line.startswith(_PEAK_MARK):
            peak = int(line[len(_PEAK_MARK):])
        else:
            kept.append(line)
    if r.returncode != 0:
        code = r.returncode if r.returncode < 128 else -(r.returncode - 128)
        raise AnalysisError(code, cmd, "\n".join(kept) or r.stdout)
    return peak


def run_rank(spec: RankSpec, version: str) -> RankResult:
    """Analyses one rank (or reuses its earlier analysis); never raises for a bad rank."""
    res = RankResult(spec.rank, spec.name, spec.input_path, "failed", source_kind=spec.source_kind,
                     worker=f"{socket.gethostname()}:{os.getpid()}")
    out = Path(spec.out_dir)
    analysis = out / "analysis.db"
    extract = out / "cluster_extract.db"
    if spec.error is not None:
        res.error = spec.error
        return res
    try:
        t0 = time.monotonic()
        digest = input_sha256(spec.files)
        res.hash_s = time.monotonic() - t0
        res.input_sha256 = digest
        meta = {"input_sha256": digest, "options_key": spec.options_key,
                "traceloom_version": version, "input_path": spec.input_path}
        old = _extract.read_meta(extract)
        if (analysis.is_file() and all(old.get(k) == v for k, v in meta.items())
                and old.get("extract_version") == _extract.EXTRACT_VERSION):
            res.status = "reused"
        else:
            out.mkdir(parents=True, exist_ok=True)
            if extract.exists():
                extract.unlink()     # stale: never pair a new analysis with an old extract
            t0 = time.monotonic()
            res.peak_rss_kb = _run_cli_measured(
                [spec.input_path, "--output", str(analysis), *spec.cli_args])
            res.analysis_s = time.monotonic() - t0
            t0 = time.monotonic()
            _extract.write_extract(analysis, extract, meta)
            res.extract_s = time.monotonic() - t0
            res.status = "analysed"
        res.analysis_db, res.extract_db = str(analysis), str(extract)
    except AnalysisError as e:
        tail = [ln for ln in e.diagnostic_tail.splitlines() if ln.strip()]
        res.error = tail[-1] if tail else str(e)
    except Exception as e:  # noqa: BLE001 - any failure is this rank's, reported by name
        res.error = f"{type(e).__name__}: {e}"
    return res


def options_key(cli_args: Sequence[str]) -> str:
    return json.dumps(list(cli_args))

"""traceloom.compare(): two analysis databases in, a comparison database out, through the CLI."""
from __future__ import annotations

import json
import numbers
import os
from contextlib import closing
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

from ._database import AnalysisDatabase
from ._native import run_cli

PathLike = Union[str, "os.PathLike[str]"]


class ComparisonDatabase(AnalysisDatabase):
    """A comparison database: the traceloom_compare_* relations (docs/COMPARE.md).

    Opened read-only like an AnalysisDatabase; query() works the same. It holds only the
    comparison (traceloom compare --output), not the two analyses.
    """

    def __init__(self, path: PathLike) -> None:  # noqa: D107 (documented on the class)
        p = Path(os.fspath(path))
        if not p.is_file():
            raise FileNotFoundError(2, "comparison database not found", str(p))
        self.path = p.resolve()
        with closing(self._connect()) as conn:
            try:
                conn.execute("SELECT 1 FROM traceloom_compare_run LIMIT 1").fetchall()
            except Exception as e:  # sqlite3.DatabaseError: not a comparison
                raise ValueError(f"{self.path} is not a TraceLoom comparison database ({e})") from None

    def __repr__(self) -> str:
        return f"ComparisonDatabase({str(self.path)!r})"

    def summary(self) -> List[Dict[str, Any]]:
        """traceloom_compare_summary: per tree pair the end-to-end delta (rank 0), then the ranked
        changes with their path, per-unit figures, share of the delta and noise status."""
        return self.query("SELECT * FROM traceloom_compare_summary", limit=None)  # type: ignore[return-value]

    def report(self, options: Optional[Mapping[str, Any]] = None) -> str:
        """The Markdown report: ``SELECT traceloom_compare_report([options])`` (options: top,
        symbols). Needs the extension loaded into SQLite, as loop_tree() does."""
        return self._extension_scalar("traceloom_compare_report", options, "report()")


def _as_file(value: object, what: str) -> Path:
    if isinstance(value, (str, os.PathLike)) and not isinstance(value, bytes):
        p = Path(os.fspath(value))
        if not p.is_file():
            raise FileNotFoundError(2, f"{what} not found", str(p))
        return p.resolve()
    raise TypeError(f"{what} must be a str or os.PathLike path, not {type(value).__name__}")


def compare(
    base: PathLike,
    new: PathLike,
    *,
    output: Optional[PathLike] = None,
    markdown: Optional[PathLike] = None,
    options: Optional[Mapping[str, Any]] = None,
    timeout: Optional[float] = None,
) -> ComparisonDatabase:
    """Compares two analysis databases by structure, running ``traceloom compare`` in a child.

    Args:
        base: the earlier (reference) analysis database.
        new: the analysis database to explain against it.
        output: where to write the comparison database (replaced atomically); default
            ``<new without .db>.compare.db`` beside ``new``.
        markdown: also write the Markdown report there.
        options: traceloom_compare options, e.g. ``{"top": 30, "noise_z": 3}``
            (docs/COMPARE.md); ``new`` is set from the argument.
        timeout: seconds before the child is stopped and subprocess.TimeoutExpired raised.

    Returns:
        A ComparisonDatabase for the output.

    Raises:
        FileNotFoundError: an input or the output's folder does not exist.
        TypeError, ValueError: bad arguments.
        subprocess.TimeoutExpired: the comparison took longer than ``timeout``.
        traceloom.AnalysisError: the comparison failed (for example an input is not an analysis).
    """
    b = _as_file(base, "base analysis database")
    n = _as_file(new, "new analysis database")
    args: List[str] = ["compare", str(b), str(n)]
    out: Optional[Path] = None
    if output is not None:
        out = Path(os.fspath(output)).resolve()
        if not out.parent.is_dir():
            raise FileNotFoundError(2, "the folder of the output does not exist", str(out.parent))
        args += ["--output", str(out)]
    else:
        out = n.with_name((n.name[:-3] if n.name.endswith(".db") else n.name) + ".compare.db")
    if markdown is not None:
        md = Path(os.fspath(markdown)).resolve()
        if not md.parent.is_dir():
            raise FileNotFoundError(2, "the folder of the report does not exist", str(md.parent))
        args += ["--markdown", str(md)]
    if options is not None:
        if not isinstance(options, Mapping):
            raise TypeError(f"options must be a mapping, not {type(options).__name__}")
        if "new" in options:
            raise ValueError("options must not set 'new': pass the new analysis as the argument")
        args += ["--options", json.dumps(dict(options))]
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
            raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout}")
    run_cli(args, timeout=timeout, output=out)
    return ComparisonDatabase(out)

"""AnalysisDatabase: read-only access to an analysis database written by traceloom."""
from __future__ import annotations

import json
import os
import sqlite3
import warnings
import sys
from contextlib import closing
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _paths
from ._errors import ExtensionLoadingUnavailable, FeatureNotAvailable, RowLimitExceeded
from ._native import cli_help, load, run_cli

Parameters = Union[Sequence[Any], Mapping[str, Any]]


# Tables with an index on a generated column (or an expression) that also have planner
# statistics: the analysis writes none for them (ext/publish/publish.c, TEXT_ID_COLUMNS), and
# a user's ANALYZE adds them back.
_INDEXED_GENERATED_WITH_STATS = """
SELECT DISTINCT t.name FROM sqlite_schema t JOIN sqlite_stat1 s ON s.tbl = t.name
WHERE t.type = 'table' AND EXISTS (
  SELECT 1 FROM pragma_index_list(t.name) l JOIN pragma_index_xinfo(l.name) x ON x.key
  LEFT JOIN pragma_table_xinfo(t.name) c ON c.cid = x.cid
  WHERE x.cid = -2 OR c.hidden IN (2, 3))
ORDER BY t.name"""


def _warn_bloom_filter_hazard(conn: sqlite3.Connection, path: Path) -> None:
    """SQLite 3.38.0 to 3.41.1 build a wrong Bloom filter on an index of a generated column
    (fixed in 3.41.2) and build one only for a table with sqlite_stat1 rows: warn when this
    SQLite is one of them and such a table has rows (README.md, the text ids)."""
    if not (3, 38, 0) <= sqlite3.sqlite_version_info < (3, 41, 2):
        return
    try:
        tables = [r[0] for r in conn.execute(_INDEXED_GENERATED_WITH_STATS)]
    except sqlite3.DatabaseError:  # no sqlite_stat1
        return
    if tables:
        names = ", ".join(f"'{t}'" for t in tables)
        warnings.warn(
            f"{path}: sqlite_stat1 has rows for {names} (an ANALYZE or PRAGMA optimize since "
            f"the analysis?); SQLite {sqlite3.sqlite_version} may then answer joins on their "
            f"indexed generated ids wrongly (a Bloom filter bug fixed in 3.41.2). Remove them: "
            f"DELETE FROM sqlite_stat1 WHERE tbl IN ({names})",
            RuntimeWarning, stacklevel=3)


class AnalysisDatabase:
    """An analysis database (the output of traceloom.analyze() or the `traceloom` CLI).

    Every connection it opens is read-only (``file:...?mode=ro`` plus ``PRAGMA query_only``),
    so nothing done through it can change the file.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        p = Path(os.fspath(path))
        if not p.is_file():
            raise FileNotFoundError(2, "analysis database not found", str(p))
        self.path: Path = p.resolve()
        with closing(self._connect()) as conn:
            try:
                conn.execute("SELECT 1 FROM traceloom_metadata LIMIT 1").fetchall()
            except sqlite3.DatabaseError as e:
                raise ValueError(f"{self.path} is not a TraceLoom analysis database ({e})") from None
            _warn_bloom_filter_hazard(conn, self.path)

    def __repr__(self) -> str:
        return f"AnalysisDatabase({str(self.path)!r})"

    def __fspath__(self) -> str:
        return str(self.path)

    def _uri(self) -> str:
        return self.path.as_uri() + "?mode=ro"

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._uri(), uri=True)
        conn.execute("PRAGMA query_only = ON")
        return conn

    def query(
        self,
        sql: str,
        parameters: Parameters = (),
        *,
        limit: Optional[int] = 1000,
        as_tuples: bool = False,
    ) -> Union[List[Dict[str, Any]], List[Tuple[Any, ...]]]:
        """Runs one SQL statement on a read-only connection and returns its rows.

        Args:
            sql: a single statement; bind values with ``?`` / ``:name`` placeholders.
            parameters: a sequence (for ``?``) or a mapping (for ``:name``).
            limit: the most rows accepted; more rows raise RowLimitExceeded (results are never
                truncated). None means no limit.
            as_tuples: return tuples instead of dicts.

        Returns:
            A list of dicts, one per row, keyed by column name in select-list order (or a list
            of tuples with ``as_tuples=True``).

        Raises:
            RowLimitExceeded: the statement produced more than ``limit`` rows.
            sqlite3.Error: the statement failed (including any attempt to write).
        """
        if not isinstance(sql, str):
            raise TypeError(f"sql must be a str, not {type(sql).__name__}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValueError(f"limit must be a non-negative int or None, not {limit!r}")
        with closing(self._connect()) as conn:
            cur = conn.execute(sql, parameters)
            rows = cur.fetchall() if limit is None else cur.fetchmany(limit + 1)
            if limit is not None and len(rows) > limit:
                raise RowLimitExceeded(
                    f"the query returned more than {limit} rows; narrow it (WHERE / LIMIT) "
                    "or raise limit=")
            if as_tuples:
                return rows
            names = [d[0] for d in cur.description or ()]
            return [dict(zip(names, row)) for row in rows]

    def tables(self) -> List[str]:
        """The names of the published relations (tables and views), from traceloom_analysis_surface."""
        rows = self.query("SELECT surface_name FROM traceloom_analysis_surface ORDER BY surface_name",
                          limit=None, as_tuples=True)
        return [r[0] for r in rows]

    def metadata(self) -> Dict[str, Optional[str]]:
        """The provenance of the analysis: traceloom_metadata as a dict."""
        rows = self.query("SELECT key, value FROM traceloom_metadata ORDER BY key",
                          limit=None, as_tuples=True)
        return {k: v for k, v in rows}

    def loop_tree(self, options: Optional[Mapping[str, Any]] = None) -> str:
        """The loop tree as Markdown: ``SELECT traceloom_loop_tree([options])``.

        The extension is loaded into a read-only connection: apsw when it is installed, else
        the stdlib sqlite3 module when it can load extensions (ExtensionLoadingUnavailable
        otherwise).
        """
        return self._extension_scalar("traceloom_loop_tree", options, "loop_tree()")

    def _extension_scalar(self, function: str, options: Optional[Mapping[str, Any]],
                          caller: str) -> str:
        """``SELECT function([options_json])`` with the extension loaded read-only."""
        args: Tuple[Any, ...] = () if options is None else (json.dumps(dict(options)),)
        sql = f"SELECT {function}(" + ", ".join("?" * len(args)) + ")"
        try:
            import apsw  # type: ignore[import-not-found]
        except ImportError:
            apsw = None
        if apsw is not None:
            conn = apsw.Connection(self._uri(), flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
            try:
                load(conn)
                return str(next(iter(conn.execute(sql, args)))[0])
            finally:
                conn.close()
        with closing(self._connect()) as conn2:
            if not hasattr(conn2, "enable_load_extension"):
                raise ExtensionLoadingUnavailable(
                    f"{caller} needs the extension loaded into SQLite, and this Python's sqlite3 "
                    "module cannot load extensions; traceloom depends on apsw for that, but it is "
                    f"not installed here: `{sys.executable} -m pip install apsw`")
            load(conn2)
            return str(conn2.execute(sql, args).fetchone()[0])

    def export_perfetto(self, output: Union[str, "os.PathLike[str]"], *,
                        timeout: Optional[float] = None) -> Path:
        """Writes a Perfetto trace of the analysis with ``traceloom export-perfetto``.

        The path goes to the native exporter unchanged, and its name chooses the format there
        (``.perfetto-trace`` / ``.pftrace``: Perfetto protobuf; ``.json``: Chrome JSON; either
        with ``.gz``). Runs the bundled CLI in a child process, like analyze().
        Raises FeatureNotAvailable when the bundled CLI predates the export-perfetto
        subcommand, subprocess.TimeoutExpired and traceloom.AnalysisError like analyze().
        """
        out = Path(os.fspath(output)).resolve()
        if not out.parent.is_dir():
            raise FileNotFoundError(2, "the folder of the output does not exist", str(out.parent))
        if "export-perfetto" not in cli_help():
            raise FeatureNotAvailable(
                f"the bundled traceloom CLI ({_paths.cli_path()}) has no export-perfetto "
                "subcommand; upgrade the traceloom package")
        run_cli(["export-perfetto", str(self.path), "--output", str(out)],
                timeout=timeout, output=out)
        return out

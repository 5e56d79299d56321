"""Loading the extension into a connection, and running the bundled CLI in a child process.

The CLI runs out of process so that a crash, a hang or a runaway allocation in native code
cannot take the interpreter down: a timeout kills the child, and the CLI's atomic
replacement of its output means a failed or killed run leaves the previous output as it was.
"""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from . import _paths
from ._errors import AnalysisError, ExtensionLoadingUnavailable

# How long a child that was asked to stop (SIGTERM: the CLI interrupts SQLite and removes
# its temporary file) gets before it is killed outright.
_TERMINATE_GRACE_S = 5.0


def loadable_path() -> str:
    """Path of the bundled loadable extension without its suffix.

    SQLite's load_extension() appends the platform suffix (.so) itself and derives the entry
    point (sqlite3_traceloom_init) from the file name, so the result works as is with
    ``sqlite3.Connection.load_extension``, ``apsw.Connection.load_extension`` and the sqlite3
    shell's ``.load``. (Where another file has the bare name, as in a development build
    folder, the full name with ``.so`` is returned instead.)
    """
    so = _paths.extension_file()
    bare = so.with_suffix("")
    # SQLite tries the name as given before appending the suffix: where some other file has
    # the bare name (the CLI, in a build folder), only the full name is safe.
    return str(so) if os.path.lexists(bare) else str(bare)


def load(conn: Any) -> None:
    """Loads the TraceLoom extension into ``conn`` (an apsw.Connection or sqlite3.Connection).

    Extension loading is enabled only for the duration of the call. Raises
    ExtensionLoadingUnavailable when ``conn`` is a sqlite3.Connection of a Python built without
    extension loading (then use apsw: ``pip install apsw``), and TypeError for anything else.
    """
    apsw = sys.modules.get("apsw")  # an apsw connection implies apsw is imported
    if apsw is not None and isinstance(conn, apsw.Connection):
        conn.enable_load_extension(True)
        try:
            conn.load_extension(loadable_path())
        finally:
            conn.enable_load_extension(False)
        return
    if isinstance(conn, sqlite3.Connection):
        if not hasattr(conn, "enable_load_extension"):
            raise ExtensionLoadingUnavailable(
                "this Python's sqlite3 module was built without extension loading "
                "(no Connection.enable_load_extension), so it cannot load traceloom; use apsw "
                "(a dependency of traceloom) instead: traceloom.load(apsw.Connection(path))"
                + apsw_hint()
            )
        conn.enable_load_extension(True)
        try:
            conn.load_extension(loadable_path())
        finally:
            conn.enable_load_extension(False)
        return
    raise TypeError(
        f"traceloom.load() expects an apsw.Connection or sqlite3.Connection, not {type(conn).__name__}"
    )


def apsw_hint() -> str:
    """The exact command that installs apsw into this interpreter, when it is missing."""
    try:
        import apsw  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return f"; apsw is not installed here: `{sys.executable} -m pip install apsw`"
    return ""


def cli_help() -> str:
    """The bundled CLI's --help text (used to check which features it has)."""
    r = subprocess.run([str(_paths.cli_path()), "--help"], capture_output=True, text=True,
                       errors="replace", timeout=60)
    return r.stdout


def run_cli(args: Sequence[str], *, timeout: Optional[float], output: Optional[Path]) -> str:
    """Runs the bundled CLI with ``args``; returns its stdout.

    Raises subprocess.TimeoutExpired after ``timeout`` seconds (the child is stopped first),
    and AnalysisError when the child exits non-zero or dies of a signal. ``output`` names the
    file the child writes, so that a temporary file a killed child leaves behind is removed.
    """
    cmd = [str(_paths.cli_path()), *map(str, args)]
    # A session of its own: a Ctrl-C at the terminal reaches this process, which then stops
    # the child below, instead of racing it.
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace",
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stdout, stderr = _stop(proc, output)
        raise subprocess.TimeoutExpired(cmd, timeout if timeout is not None else 0,
                                        output=stdout, stderr=stderr) from None
    except BaseException:
        _stop(proc, output)
        raise
    if proc.returncode != 0:
        raise AnalysisError(proc.returncode, cmd, stderr or stdout)
    return stdout


def _stop(proc: subprocess.Popen, output: Optional[Path]) -> tuple[str, str]:
    """Stops a child: SIGTERM (the CLI cleans up after itself), SIGKILL after a grace period."""
    proc.terminate()
    try:
        stdout, stderr = proc.communicate(timeout=_TERMINATE_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    if output is not None:
        # The CLI writes <output>.tmp-<pid> and renames it only on success.
        tmp = f"{output}.tmp-{proc.pid}"
        for leftover in (tmp, tmp + "-journal"):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass
    return stdout or "", stderr or ""

"""The exceptions of the traceloom package."""
from __future__ import annotations

import signal
from typing import Sequence


class AnalysisError(RuntimeError):
    """The native traceloom program failed (an analysis error, a crash or an interrupt).

    Attributes:
        returncode: the child's exit status; negative for a signal (e.g. -11 for SIGSEGV).
        command: the command line that was run.
        diagnostic_tail: the end of the child's stderr (at most DIAGNOSTIC_TAIL_CHARS characters).
    """

    DIAGNOSTIC_TAIL_CHARS = 4000

    def __init__(self, returncode: int, command: Sequence[str], diagnostics: str) -> None:
        self.returncode = returncode
        self.command = [str(c) for c in command]
        self.diagnostic_tail = diagnostics[-self.DIAGNOSTIC_TAIL_CHARS:]
        if returncode < 0:
            try:
                how = f"was killed by {signal.Signals(-returncode).name}"
            except ValueError:
                how = f"was killed by signal {-returncode}"
        else:
            how = f"exited with status {returncode}"
        lines = [ln for ln in self.diagnostic_tail.splitlines() if ln.strip()]
        detail = f": {lines[-1]}" if lines else ""
        super().__init__(f"traceloom {how}{detail}")


class RowLimitExceeded(ValueError):
    """A query returned more rows than its limit (results are never silently truncated)."""


class ExtensionLoadingUnavailable(RuntimeError):
    """This Python's sqlite3 module cannot load SQLite extensions; use apsw instead."""


class FeatureNotAvailable(RuntimeError):
    """The bundled native program lacks a feature this call needs (an older build)."""

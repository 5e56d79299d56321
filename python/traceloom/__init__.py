"""TraceLoom for Python: analyse inference profiler timelines into a queryable SQLite database.

The package bundles the TraceLoom loadable SQLite extension, the `traceloom` CLI, the rule
manifests and the bundled configs::

    import traceloom

    db = traceloom.analyze("PROF_0/", output="analysis.db")      # runs the CLI in a child
    db.query("SELECT * FROM traceloom_v_position_occurrence WHERE device_id = ?", (0,))
    print(db.loop_tree())
    cmp = traceloom.compare("base.db", "analysis.db")             # what changed, where

    import apsw
    conn = apsw.Connection("analysis.db")
    traceloom.load(conn)                                          # the SQL functions in-process

Importing traceloom imports only the standard library (never torch or vLLM).
"""
from __future__ import annotations

from ._analyze import analyze, bundled_rules
from ._compare import ComparisonDatabase, compare
from ._database import AnalysisDatabase
from ._errors import AnalysisError, ExtensionLoadingUnavailable, FeatureNotAvailable, RowLimitExceeded
from ._native import load, loadable_path

__version__ = "0.1.0"

__all__ = [
    "AnalysisDatabase",
    "AnalysisError",
    "ComparisonDatabase",
    "ExtensionLoadingUnavailable",
    "FeatureNotAvailable",
    "RowLimitExceeded",
    "analyze",
    "bundled_rules",
    "compare",
    "load",
    "loadable_path",
    "__version__",
]

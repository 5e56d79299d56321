"""traceloom.analyze(): a profile in, an analysis database out, through the bundled CLI."""
from __future__ import annotations

import json
import numbers
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Union

from . import _paths
from ._database import AnalysisDatabase
from ._native import run_cli

PathLike = Union[str, "os.PathLike[str]"]


def bundled_rules(name: str) -> Path:
    """Path of a bundled rules config: 'scheduler-step', 'deepseekv4' or 'qwen35-serving'.

    Raises ValueError for any other name.
    """
    if not isinstance(name, str):
        raise TypeError(f"bundled_rules() expects a config name (str), not {type(name).__name__}")
    if name not in _paths.BUNDLED_CONFIGS:
        raise ValueError(f"unknown bundled rules config {name!r}: expected one of "
                         + ", ".join(_paths.BUNDLED_CONFIGS))
    path = _paths.data_dir("configs") / f"{name}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"traceloom: the bundled config {name!r} is missing at {path}")
    return path


def _as_path(value: object, what: str) -> Path:
    if isinstance(value, (str, os.PathLike)) and not isinstance(value, bytes):
        p = os.fspath(value)
        if isinstance(p, str):
            if not p:
                raise ValueError(f"{what} must not be empty")
            return Path(p)
    raise TypeError(f"{what} must be a str or os.PathLike path, not {type(value).__name__}")


def _rules_option(rules_config: object) -> Optional[str]:
    """A bundled config name passes through (the CLI knows them); anything else is a file."""
    if rules_config is None:
        return None
    if isinstance(rules_config, str) and rules_config in _paths.BUNDLED_CONFIGS:
        return rules_config
    path = _as_path(rules_config, "rules_config")
    if not path.is_file():
        raise FileNotFoundError(
            f"rules_config {str(path)!r} is neither a bundled config name ("
            + ", ".join(_paths.BUNDLED_CONFIGS) + ") nor an existing rules file")
    return str(path.resolve())


def _check_context(context: object) -> list:
    if isinstance(context, (str, bytes, os.PathLike)):
        raise TypeError("context must be a sequence of paths (e.g. a list), not a single "
                        f"{type(context).__name__}")
    try:
        items = list(context)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"context must be a sequence of paths, not {type(context).__name__}") from None
    paths = [_as_path(item, "each context entry") for item in items]
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(2, "context file not found", str(path))
    return paths


def analyze(
    source: PathLike,
    *,
    output: PathLike,
    context: Iterable[PathLike] = (),
    rules_config: Optional[PathLike] = None,
    threads: Optional[int] = None,
    timeout: Optional[float] = None,
    options: Optional[Mapping[str, Any]] = None,
) -> AnalysisDatabase:
    """Analyses a profile into an analysis database, running the bundled CLI in a child process.

    Args:
        source: a profile: an Ascend msprof / torch-npu SQLite DB, a split PROF_* directory, an
            Nsight Systems SQLite export, a Hygon hipprof DB, a PyTorch profiler (Kineto) trace
            (.json / .json.gz), or a directory of them.
        output: where to write the analysis database. It is replaced atomically: when the
            analysis fails, times out or is interrupted, a previous file there is left as it was.
        context: scheduler context files (traceloom.scheduler.v1 JSONL, as the vLLM observer
            writes them), an iterable of paths; each becomes a --context of the CLI.
        rules_config: a bundled config name ('scheduler-step', 'deepseekv4', 'qwen35-serving')
            or the path of a rules config file; None for the default rules.
        threads: worker threads, 1 to 256 (results are identical for any value).
        timeout: seconds before the child is stopped and subprocess.TimeoutExpired raised.
        options: any other analyze options, as traceloom_analyze() takes them (README.md, "Use
            it from the sqlite3 shell"): e.g. {"step_markers": "", "idle_evidence": True,
            "text_id_indexes": True}; the CLI checks them (an unknown key is an AnalysisError
            with returncode 2). The keys above (threads, context, rules_config) go by their
            own arguments.

    Returns:
        An AnalysisDatabase for ``output``.

    Raises:
        FileNotFoundError: ``source``, a rules file or the folder of ``output`` does not exist.
        TypeError, ValueError: bad arguments (a single str as ``context`` is a TypeError).
        subprocess.TimeoutExpired: the analysis took longer than ``timeout``.
        traceloom.AnalysisError: the native analysis failed, crashed or was interrupted.
    """
    src = _as_path(source, "source")
    out = _as_path(output, "output")
    contexts = _check_context(context)
    rules = _rules_option(rules_config)
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, numbers.Integral):
            raise TypeError(f"threads must be an int, not {type(threads).__name__}")
        if not 1 <= threads <= 256:
            raise ValueError(f"threads must be from 1 to 256, not {threads}")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
            raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout}")
    extra = {}
    if options is not None:
        if not isinstance(options, Mapping):
            raise TypeError(f"options must be a mapping, not {type(options).__name__}")
        extra = dict(options)
        for key in ("threads", "context", "rules_config"):
            if key in extra:
                raise ValueError(f"pass {key} as analyze()'s own {key}= argument, not in options")
    if not src.exists():
        raise FileNotFoundError(2, "profile not found", str(src))
    out = out.resolve()
    if not out.parent.is_dir():
        raise FileNotFoundError(2, "the folder of the output does not exist", str(out.parent))
    if out.is_dir():
        raise IsADirectoryError(21, "output must be a file path, not a folder", str(out))

    args: list[str] = [str(src.resolve()), "--output", str(out)]
    if threads is not None:
        args += ["--threads", str(int(threads))]
    for path in contexts:
        args += ["--context", str(path.resolve())]
    if rules is not None:
        extra["rules_config"] = rules
    if extra:
        args += ["--options", json.dumps(extra)]
    run_cli(args, timeout=timeout, output=out)
    return AnalysisDatabase(out)

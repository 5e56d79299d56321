"""traceloom.vllm: the vLLM observer's classes under the traceloom name.

    from traceloom.vllm import TracingAsyncScheduler     # == traceloom_vllm_scheduler's class

The names resolve lazily, on attribute access, from the separately installed package
`traceloom-vllm-context` (modules traceloom_vllm_scheduler and traceloom_vllm_context; see
observer/README.md). Importing traceloom, or this module, loads neither vLLM nor torch; asking
for a scheduler class imports vLLM, asking for an exporter name does not.
"""
from __future__ import annotations

from typing import Any

_SCHEDULER_NAMES = (
    "TracingScheduler",
    "TracingAsyncScheduler",
    "LinkedTracingScheduler",
    "LinkedTracingAsyncScheduler",
)
_CONTEXT_NAMES = (
    "ContextWriter",
    "close_all",
    "execution_scope",
    "make_request",
    "record_step",
    "request_coordinate",
    "scheduler_metadata",
    "trace_execution",
    "trace_worker_execute",
    "trace_worker_sample",
    "validate_record",
    "worker_metadata",
)

__all__ = list(_SCHEDULER_NAMES + _CONTEXT_NAMES)


def __getattr__(name: str) -> Any:
    if name in _SCHEDULER_NAMES:
        module_name = "traceloom_vllm_scheduler"
    elif name in _CONTEXT_NAMES:
        module_name = "traceloom_vllm_context"
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = __import__(module_name)
    except ImportError as exc:
        if exc.name != module_name:
            raise      # the observer is installed but vLLM is not: its message says so
        raise ImportError(f"traceloom.vllm.{name} needs the traceloom-vllm-context package "
                          f"(pip install ./observer)", name=module_name) from exc
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))

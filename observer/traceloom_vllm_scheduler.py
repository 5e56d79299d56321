"""TraceLoom scheduler classes for vLLM V1: record every final scheduling decision.

Use one of them as vLLM's scheduler class (an ordinary class path, not a plugin entry point):

    TRACELOOM_CONTEXT_DIR=/tmp/ctx TRACELOOM_RUN_ID=run1 \\
        vllm serve MODEL --scheduler-cls traceloom_vllm_scheduler.TracingAsyncScheduler

  TracingScheduler             vllm.v1.core.sched.scheduler.Scheduler        (--no-async-scheduling)
  TracingAsyncScheduler        vllm.v1.core.sched.async_scheduler.AsyncScheduler (--async-scheduling)
  LinkedTracingScheduler       TracingScheduler + step identity transported to the workers
  LinkedTracingAsyncScheduler  TracingAsyncScheduler + step identity transported to the workers

The Linked classes need transport-worker.patch (observer/patches/) applied to vLLM: it adds the
SchedulerOutput.traceloom_step dataclass field they fill in and the worker decorators that
record execution records and profiler markers. Without the patch they refuse to start.

This module imports vLLM V1 when it is imported (vLLM itself imports it through
--scheduler-cls); the recording itself is done by traceloom_vllm_context.
"""
from __future__ import annotations

from typing import Any

from traceloom_vllm_context import record_step

try:
    from vllm.v1.core.sched import output as _sched_output
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler
    from vllm.v1.core.sched.scheduler import Scheduler
except ImportError as exc:  # pragma: no cover - exercised by a test with vllm absent
    raise ImportError(
        "traceloom_vllm_scheduler needs vLLM V1 (vllm.v1.core.sched.scheduler.Scheduler and "
        "vllm.v1.core.sched.async_scheduler.AsyncScheduler); install vllm, or use "
        f"traceloom_vllm_context.ContextWriter to write context files without it ({exc})"
    ) from exc

__all__ = [
    "LinkedTracingAsyncScheduler",
    "LinkedTracingScheduler",
    "TracingAsyncScheduler",
    "TracingScheduler",
]

TRANSPORT_PATCH_REQUIRED = (
    "Execution-linked TraceLoom requires transport-worker.patch; use "
    "TracingScheduler/TracingAsyncScheduler for patch-free capture"
)


class _RecordingScheduler:
    """Records the output of every schedule() call; returns that same object unchanged."""

    _traceloom_scheduler_injection = True
    _traceloom_transport_identity = False

    def schedule(self, *args: Any, **kwargs: Any) -> Any:
        # super() is the vLLM scheduler: exactly one call, async post-processing included.
        # Its exceptions propagate unchanged and nothing is recorded for them.
        output = super().schedule(*args, **kwargs)  # type: ignore[misc]
        record_step(self, output, transport_identity=self._traceloom_transport_identity,
                    _injected=True)
        return output


class _ExecutionLinkedScheduler:
    """Transports {run_id, step_id} to the workers in SchedulerOutput.traceloom_step."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Fail at startup, never during inference, when vLLM lacks the real dataclass field
        # (a dynamic attribute would be lost in pickle/msgpack transport).
        fields = getattr(_sched_output.SchedulerOutput, "__dataclass_fields__", {})
        if "traceloom_step" not in fields:
            raise RuntimeError(TRANSPORT_PATCH_REQUIRED)
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self._traceloom_transport_identity = True


class TracingScheduler(_RecordingScheduler, Scheduler):
    """vLLM V1 Scheduler that records scheduler-only context (sync scheduling)."""


class TracingAsyncScheduler(_RecordingScheduler, AsyncScheduler):
    """vLLM V1 AsyncScheduler that records scheduler-only context (async scheduling)."""


class LinkedTracingScheduler(_ExecutionLinkedScheduler, TracingScheduler):
    """TracingScheduler that also transports the step identity to patched workers."""


class LinkedTracingAsyncScheduler(_ExecutionLinkedScheduler, TracingAsyncScheduler):
    """TracingAsyncScheduler that also transports the step identity to patched workers."""

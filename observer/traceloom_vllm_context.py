"""TraceLoom runtime-context exporter: writes `traceloom.scheduler.v1` JSONL files.

This module is the exporter half of the `traceloom-vllm-context` package (the schedulers that
call it live in traceloom_vllm_scheduler). It imports only the standard library: neither torch
nor vLLM is imported when it loads, on the scheduler path, or while recording is disabled; the
worker path imports torch lazily, only to open a profiler marker.

Recording is enabled iff TRACELOOM_CONTEXT_DIR is set and non-empty. TRACELOOM_RUN_ID (the same
value on the scheduler and on every worker) names the run and must match [A-Za-z0-9_.-]{1,128}.
Each producer (one process and role) writes one file `<producer_id>.jsonl` in that directory,
created exclusively with mode 0600 (the directory with 0700).

Three ways to use it:

  * vLLM scheduler side: record_step(scheduler, scheduler_output) after each final scheduling
    decision (the traceloom_vllm_scheduler classes do this). It builds the step record on the
    caller's thread, then hands it to a bounded queue drained by a daemon thread; it never
    blocks on the disk and never raises. Request ids are exported only as salted pseudonyms.
  * vLLM worker side (execution-linked mode): execution_scope(scheduler_output, rank) around a
    model execution, or the trace_worker_execute / trace_worker_sample decorators that
    transport-worker.patch puts on vLLM's WorkerWrapperBase.
  * Tools and tests: ContextWriter, a synchronous writer that produces valid files without vLLM:

        with ContextWriter(dir, "run1", scheduler_metadata()) as w:
            step = w.step([make_request("req-a", 5, scheduled_token_start=0, prompt_tokens=5)])
        # -> session, step, summary lines; validate_record() checks any record against the schema
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import logging
import os
import queue
import re
import threading
import time
import uuid
import warnings
from typing import Any, Callable, Iterable, Iterator, Mapping

__all__ = [
    "SCHEMA",
    "ContextWriter",
    "ContextRecordError",
    "close_all",
    "enabled",
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
]

SCHEMA = "traceloom.scheduler.v1"
ENV_DIR = "TRACELOOM_CONTEXT_DIR"
ENV_RUN_ID = "TRACELOOM_RUN_ID"
MARKER_PREFIX = "traceloom.execution."
WARNING_TEXT = "TraceLoom context recording unavailable; inference continues"

MAX_LINE_BYTES = 1 << 20          # each line, its newline included
MAX_REQUESTS_PER_STEP = 4096
QUEUE_MAXSIZE = 256
WRITER_POLL_S = 0.05
CLOSE_JOIN_TIMEOUT_S = 2.0
SALT_BYTES = 32

_IDENTITY = re.compile(r"[A-Za-z0-9_.-]{1,128}\Z")
_START_BASIS = "scheduler_output_num_computed_tokens"
_PHASES = ("execute_model", "sample_tokens")
_STATUSES = ("returned", "raised")
_MARKER_STATES = ("emitted", "unavailable")
# Only these scalar config values reach the session record; prompts, model paths and full
# configs never do.
_SCHEDULER_CONFIG_KEYS = ("max_num_batched_tokens", "max_num_seqs", "policy",
                          "enable_chunked_prefill", "async_scheduling")
_CACHE_CONFIG_KEYS = ("enable_prefix_caching", "block_size")

_log = logging.getLogger("traceloom.context")


class ContextRecordError(ValueError):
    """A record does not follow `traceloom.scheduler.v1` (raised by validate_record)."""


# ------------------------------------------------------------------------------------------
# Failure reporting: the observer counts a failure as a dropped record and warns once per
# process, and the warning itself must not become an exception under -W error.

_warn_lock = threading.Lock()
_warned = False


def _report_failure(reason: str, exc: BaseException | None = None) -> None:
    global _warned
    _log.debug("traceloom context: %s", reason, exc_info=exc)
    with _warn_lock:
        if _warned:
            return
        _warned = True
    try:
        warnings.warn(WARNING_TEXT, RuntimeWarning, stacklevel=3)
    except Exception:  # warnings-as-errors: inference must still continue
        pass


# ------------------------------------------------------------------------------------------
# Environment

def context_dir() -> str | None:
    value = os.environ.get(ENV_DIR, "")
    return value or None


def enabled() -> bool:
    """True iff TRACELOOM_CONTEXT_DIR is set and non-empty."""
    return context_dir() is not None


def _env_run_id() -> str:
    run_id = os.environ.get(ENV_RUN_ID, "")
    if not _is_identity(run_id):
        raise ContextRecordError(f"{ENV_RUN_ID} must match [A-Za-z0-9_.-]{{1,128}}, got {run_id!r}")
    return run_id


def _is_identity(value: Any) -> bool:
    return isinstance(value, str) and _IDENTITY.match(value) is not None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return _is_int(value) and value >= 0


def _is_id_text(value: Any) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= 128


# ------------------------------------------------------------------------------------------
# Schema: the checks of spec §2, applied to every record before it is written, so that the
# observer drops a bad record instead of producing a file the all-or-nothing import rejects.

def validate_record(record: Mapping[str, Any]) -> None:
    """Raise ContextRecordError unless `record` is a valid traceloom.scheduler.v1 record."""
    if not isinstance(record, Mapping):
        raise ContextRecordError("a record must be a JSON object")

    def need(cond: bool, what: str) -> None:
        if not cond:
            raise ContextRecordError(f"{record.get('type')!r} record: {what}")

    need(record.get("schema") == SCHEMA, f"schema must be {SCHEMA!r}")
    need(_is_identity(record.get("run_id")), "run_id must match [A-Za-z0-9_.-]{1,128}")
    need(_is_identity(record.get("producer_id")), "producer_id must match [A-Za-z0-9_.-]{1,128}")
    kind = record.get("type")
    if kind == "session":
        need(isinstance(record.get("metadata"), Mapping), "metadata must be an object")
    elif kind == "step":
        need(_is_id_text(record.get("step_id")), "step_id must be a string of 1-128 chars")
        need(_is_count(record.get("ordinal")), "ordinal must be an int >= 0")
        need(_is_int(record.get("observed_monotonic_ns")), "observed_monotonic_ns must be an int")
        requests = record.get("requests")
        need(isinstance(requests, list) and len(requests) <= MAX_REQUESTS_PER_STEP,
             f"requests must be a list of at most {MAX_REQUESTS_PER_STEP}")
        seen = set()
        total = 0
        for req in requests:
            _validate_request(req)
            need(req["request_id"] not in seen, "duplicate request_id in one step")
            seen.add(req["request_id"])
            total += req["scheduled_tokens"]
        need(_is_count(record.get("total_scheduled_tokens")), "total_scheduled_tokens must be an int >= 0")
        need(record["total_scheduled_tokens"] == total,
             "total_scheduled_tokens must equal the sum of requests[].scheduled_tokens")
        cache = record.get("cache")
        need(isinstance(cache, Mapping) and cache.get("observation_phase") == "after_schedule",
             "cache.observation_phase must be 'after_schedule'")
        for key in ("free_blocks", "pool_blocks"):
            need(key in cache and (cache[key] is None or _is_count(cache[key])),
                 f"cache.{key} must be null or an int >= 0")
        for key, nullable in (("resumed_request_ids", True), ("finished_request_ids", False),
                              ("preempted_request_ids", True)):
            value = record.get(key, ...)
            need(value is not ... , f"{key} is required")
            if value is None:
                need(nullable, f"{key} must be a list")
                continue
            need(isinstance(value, list) and all(_is_id_text(v) for v in value)
                 and value == sorted(value), f"{key} must be a sorted list of pseudonyms")
    elif kind == "execution":
        execution_id = record.get("execution_id")
        need(_is_id_text(execution_id), "execution_id must be a string of 1-128 chars")
        need(_is_id_text(record.get("step_id")), "step_id must be a string of 1-128 chars")
        need(record.get("marker") == MARKER_PREFIX + str(execution_id),
             "marker must equal 'traceloom.execution.' + execution_id")
        need(record.get("phase", "execute_model") in _PHASES, "phase must be execute_model or sample_tokens")
        need(record.get("worker_rank") is None or _is_int(record.get("worker_rank")),
             "worker_rank must be an int or null")
        need(_is_int(record.get("process_id")), "process_id must be an int")
        need(record.get("status") in _STATUSES, "status must be returned or raised")
        need(record.get("marker_state") in _MARKER_STATES, "marker_state must be emitted or unavailable")
    elif kind == "summary":
        need(_is_count(record.get("written_records")), "written_records must be an int >= 0")
        need(_is_count(record.get("dropped_records")), "dropped_records must be an int >= 0")
    else:
        raise ContextRecordError(f"unknown record type {kind!r}")


def _validate_request(req: Any) -> None:
    def need(cond: bool, what: str) -> None:
        if not cond:
            raise ContextRecordError(f"scheduled request: {what}")

    need(isinstance(req, Mapping), "not an object")
    need(_is_id_text(req.get("request_id")), "request_id must be a string of 1-128 chars")
    need(_is_count(req.get("scheduled_tokens")), "scheduled_tokens must be an int >= 0")
    for key in ("scheduled_token_start", "computed_tokens_after_schedule", "prompt_tokens"):
        need(key in req and (req[key] is None or _is_int(req[key])), f"{key} must be an int or null")
    need(req.get("scheduled_token_start_basis", ...) in (_START_BASIS, None),
         f"scheduled_token_start_basis must be {_START_BASIS!r} or null")
    need(req.get("payload_kind") in ("new", "cached"), "payload_kind must be new or cached")


def encode_record(record: Mapping[str, Any]) -> bytes:
    """One compact, ASCII-only JSON line (newline included), at most 1 MiB."""
    try:
        line = json.dumps(record, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:   # NaN/Infinity, non-JSON values, cycles
        raise ContextRecordError(f"{record.get('type')!r} record is not encodable as JSON: {exc}") from exc
    data = line.encode("ascii")
    if len(data) > MAX_LINE_BYTES:
        raise ContextRecordError(f"{record.get('type')!r} record is {len(data)} bytes, over 1 MiB")
    return data


def scheduler_metadata(scheduler_config: Any = None, cache_config: Any = None, *,
                       runtime_version: str | None = None,
                       association_contract: str = "scheduler_only") -> dict:
    """Session metadata of a scheduler producer. The configs may be vLLM config objects,
    mappings or None; only allowlisted scalar values (int, bool, str, None) are kept."""
    if association_contract not in ("scheduler_only", "scheduler_output_field"):
        raise ValueError("association_contract must be scheduler_only or scheduler_output_field")
    return {
        "runtime": "vllm",
        "role": "scheduler",
        "scheduler_config": _allowlisted(scheduler_config, _SCHEDULER_CONFIG_KEYS),
        "cache_config": _allowlisted(cache_config, _CACHE_CONFIG_KEYS),
        "runtime_version": runtime_version,
        "association_contract": association_contract,
    }


def worker_metadata() -> dict:
    return {"runtime": "vllm", "role": "worker"}


def _allowlisted(config: Any, keys: Iterable[str]) -> dict:
    out = {}
    for key in keys:
        try:
            value = config.get(key, ...) if isinstance(config, Mapping) else getattr(config, key, ...)
        except Exception:
            continue
        if value is None or type(value) in (bool, int, str):
            out[key] = value
    return out


def make_request(request_id: str, scheduled_tokens: int, *, scheduled_token_start: int | None = None,
                 payload_kind: str = "new", computed_tokens_after_schedule: int | None = None,
                 prompt_tokens: int | None = None) -> dict:
    """A step's request object. `request_id` is written as given: pass a pseudonym."""
    return {
        "request_id": request_id,
        "scheduled_tokens": scheduled_tokens,
        "scheduled_token_start": scheduled_token_start,
        "scheduled_token_start_basis": None if scheduled_token_start is None else _START_BASIS,
        "payload_kind": payload_kind,
        "computed_tokens_after_schedule": computed_tokens_after_schedule,
        "prompt_tokens": prompt_tokens,
    }


# ------------------------------------------------------------------------------------------
# Synchronous writer

def _create_file(directory: str, producer_id: str) -> tuple[int, str]:
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, producer_id + ".jsonl")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    return os.open(path, flags, 0o600), path


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class ContextWriter:
    """Writes one producer file synchronously: the session line at construction, then step
    and execution records, then (at close) the summary line.

    It needs no vLLM and is what tools and tests use to produce valid context files; the
    observer's background thread writes through it too. With validate=False records are
    written as given (for negative tests), still as compact JSON lines.
    """

    def __init__(self, directory: str | os.PathLike, run_id: str, metadata: Mapping[str, Any] | None = None,
                 *, producer_id: str | None = None, validate: bool = True) -> None:
        self.run_id = run_id
        self.producer_id = producer_id or uuid.uuid4().hex
        self.validate = validate
        self.written_records = 0
        self.closed = False
        self._ordinal = 0
        if validate and not (_is_identity(run_id) and _is_identity(self.producer_id)):
            raise ContextRecordError("run_id and producer_id must match [A-Za-z0-9_.-]{1,128}")
        self._fd, self.path = _create_file(os.fspath(directory), self.producer_id)
        try:
            self._emit({"type": "session",
                        "metadata": dict(metadata) if metadata is not None else worker_metadata()})
        except BaseException:
            os.close(self._fd)
            raise

    def _emit(self, fields: Mapping[str, Any]) -> dict:
        if self.closed:
            raise ValueError("context writer is closed")
        record = dict(fields)
        record.update(schema=SCHEMA, run_id=self.run_id, producer_id=self.producer_id)
        if self.validate:
            validate_record(record)
        _write_all(self._fd, encode_record(record))
        return record

    def write(self, record: Mapping[str, Any]) -> dict:
        """Write a step or execution record given without its envelope (schema, run_id,
        producer_id are added); returns the full record."""
        if self.validate and record.get("type") not in ("step", "execution"):
            raise ContextRecordError("write() takes step and execution records; the writer "
                                     "emits the session and summary itself")
        out = self._emit(record)
        if record.get("type") in ("step", "execution"):
            self.written_records += 1
        return out

    def step(self, requests: Iterable[Mapping[str, Any]] = (), *, step_id: str | None = None,
             ordinal: int | None = None, observed_monotonic_ns: int | None = None,
             free_blocks: int | None = None, pool_blocks: int | None = None,
             resumed_request_ids: Iterable[str] | None = None,
             finished_request_ids: Iterable[str] = (),
             preempted_request_ids: Iterable[str] | None = None,
             total_scheduled_tokens: int | None = None) -> dict:
        """Write a step; ordinals count 0, 1, 2 ... unless given, the token total is the sum of
        the requests' tokens unless given, and the id lists are sorted."""
        requests = [dict(r) for r in requests]
        if ordinal is None:
            ordinal = self._ordinal
        self._ordinal = ordinal + 1 if _is_int(ordinal) else self._ordinal + 1
        return self.write({
            "type": "step",
            "step_id": step_id or uuid.uuid4().hex,
            "ordinal": ordinal,
            "observed_monotonic_ns": time.monotonic_ns() if observed_monotonic_ns is None else observed_monotonic_ns,
            "total_scheduled_tokens": (sum(r.get("scheduled_tokens", 0) for r in requests)
                                       if total_scheduled_tokens is None else total_scheduled_tokens),
            "requests": requests,
            "cache": {"observation_phase": "after_schedule", "free_blocks": free_blocks,
                      "pool_blocks": pool_blocks},
            "resumed_request_ids": None if resumed_request_ids is None else sorted(resumed_request_ids),
            "finished_request_ids": sorted(finished_request_ids),
            "preempted_request_ids": None if preempted_request_ids is None else sorted(preempted_request_ids),
        })

    def execution(self, step_id: str, *, execution_id: str | None = None, phase: str = "execute_model",
                  worker_rank: int | None = None, process_id: int | None = None,
                  status: str = "returned", marker_state: str = "emitted") -> dict:
        """Write an execution record; its marker is traceloom.execution.<execution_id>."""
        execution_id = execution_id or uuid.uuid4().hex
        return self.write({
            "type": "execution",
            "execution_id": execution_id,
            "step_id": step_id,
            "marker": MARKER_PREFIX + execution_id,
            "phase": phase,
            "worker_rank": worker_rank,
            "process_id": os.getpid() if process_id is None else process_id,
            "status": status,
            "marker_state": marker_state,
        })

    def close(self, *, dropped_records: int = 0, summary: bool = True) -> None:
        """Write the summary (unless summary=False, which leaves the file 'unclosed') and close."""
        if self.closed:
            return
        try:
            if summary:
                self._emit({"type": "summary", "written_records": self.written_records,
                            "dropped_records": dropped_records})
        finally:
            self.closed = True
            os.close(self._fd)

    def __enter__(self) -> "ContextWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ------------------------------------------------------------------------------------------
# Background writer: the caller only builds a dict and calls put_nowait; the file is created,
# validated and written by the daemon thread.

_registry_lock = threading.Lock()
_registry: list["_BackgroundWriter"] = []
_atexit_registered = False


class _BackgroundWriter:
    def __init__(self, directory: str, run_id: str, metadata: dict) -> None:
        self.directory = directory
        self.run_id = run_id
        self.producer_id = uuid.uuid4().hex
        self.metadata = metadata
        self.pid = os.getpid()
        self.path: str | None = None
        self._queue: queue.Queue = queue.Queue(maxsize=QUEUE_MAXSIZE)
        self._lock = threading.Lock()     # guards _closed/_failed and the drop count only
        self._closed = False
        self._failed = False
        self._dropped = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="traceloom-context-writer", daemon=True)
        _register(self)
        self._thread.start()

    @property
    def dropped(self) -> int:
        return self._dropped

    def _drop(self, reason: str, exc: BaseException | None = None) -> None:
        with self._lock:
            self._dropped += 1
        _report_failure(reason, exc)

    def submit(self, record: dict) -> None:
        """Enqueue without blocking; anything that cannot be enqueued is counted as dropped."""
        if os.getpid() != self.pid:
            self._drop("writer belongs to the parent of a forked process")
            return
        with self._lock:
            if self._closed or self._failed:
                self._dropped += 1
                reason = "writer closed or failed"
            else:
                try:
                    self._queue.put_nowait(record)
                    return
                except queue.Full:
                    self._dropped += 1
                    reason = "context queue full (slow disk?)"
        _report_failure(reason)

    def _run(self) -> None:
        try:
            writer = ContextWriter(self.directory, self.run_id, self.metadata, producer_id=self.producer_id)
        except BaseException as exc:
            with self._lock:
                self._failed = True
            self._drain_as_dropped()
            _report_failure(f"cannot create context file in {self.directory!r}", exc)
            return
        self.path = writer.path
        while True:
            try:
                record = self._queue.get(timeout=WRITER_POLL_S)
            except queue.Empty:
                if self._stop.is_set():
                    break
                continue
            try:
                writer.write(record)
            except ContextRecordError as exc:
                self._drop("invalid context record", exc)
            except BaseException as exc:
                # A failed write may have left a torn line: write nothing more, so the file
                # reads as unclosed/torn rather than as complete.
                with self._lock:
                    self._failed = True
                    self._dropped += 1
                self._drain_as_dropped()
                _report_failure("context write failed", exc)
                try:
                    writer.close(summary=False)
                except BaseException:
                    pass
                return
        try:
            writer.close(dropped_records=self._dropped)
        except BaseException as exc:
            _report_failure("cannot write context summary", exc)

    def _drain_as_dropped(self) -> None:
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return
            with self._lock:
                self._dropped += 1

    def close(self, timeout: float = CLOSE_JOIN_TIMEOUT_S) -> bool:
        """Stop accepting records, let the thread drain and write the summary; True if it
        finished within `timeout` (otherwise the file stays unclosed)."""
        with self._lock:
            self._closed = True
        self._stop.set()
        if os.getpid() != self.pid:
            return False
        self._thread.join(timeout)
        return not self._thread.is_alive()


def _register(writer: _BackgroundWriter) -> None:
    global _atexit_registered
    with _registry_lock:
        _registry.append(writer)
        if not _atexit_registered:
            atexit.register(close_all)
            _atexit_registered = True


def close_all(timeout: float = CLOSE_JOIN_TIMEOUT_S) -> None:
    """Close every writer of this process (registered with atexit on first use): each is
    joined with `timeout` seconds; a writer that does not finish leaves its file unclosed."""
    with _registry_lock:
        writers = [w for w in _registry if w.pid == os.getpid()]
        _registry[:] = []
        _worker_writers.clear()
    for writer in writers:
        try:
            writer.close(timeout)
        except BaseException:
            pass


# ------------------------------------------------------------------------------------------
# Scheduler side

class _SchedulerState:
    """Per-scheduler recording state, created lazily on the first recorded step."""

    def __init__(self, run_id: str, writer: _BackgroundWriter) -> None:
        self.run_id = run_id
        self.writer = writer
        self.salt = os.urandom(SALT_BYTES)   # never leaves the process
        self.ordinal = 0

    def pseudonym(self, raw_request_id: Any) -> str:
        return hashlib.sha256(self.salt + str(raw_request_id).encode()).hexdigest()


_STATE_ATTR = "_traceloom_context_state"


def _runtime_version() -> str | None:
    try:
        from importlib import metadata
        return metadata.version("vllm")     # reads dist-info only; vLLM is not imported
    except Exception:
        return None


def _scheduler_state(scheduler: Any, transport_identity: bool) -> _SchedulerState:
    state = scheduler.__dict__.get(_STATE_ATTR)
    if state is not None:
        return state        # in a forked child its writer counts every record as dropped
    run_id = _env_run_id()
    metadata = scheduler_metadata(
        getattr(scheduler, "scheduler_config", None), getattr(scheduler, "cache_config", None),
        runtime_version=_runtime_version(),
        association_contract="scheduler_output_field" if transport_identity else "scheduler_only")
    state = _SchedulerState(run_id, _BackgroundWriter(context_dir() or ".", run_id, metadata))
    setattr(scheduler, _STATE_ATTR, state)
    return state


def _has_transport_field(output: Any) -> bool:
    fields = getattr(type(output), "__dataclass_fields__", None)
    return isinstance(fields, Mapping) and "traceloom_step" in fields


def record_step(scheduler: Any, output: Any, *, transport_identity: bool = False,
                _injected: bool = False) -> None:
    """Record one final scheduling decision (a vLLM V1 SchedulerOutput) of `scheduler`.

    Never raises and never blocks: a failure is counted as a dropped record. In transport mode
    it also sets output.traceloom_step = {"run_id", "step_id"} for the workers.
    """
    if not enabled():
        return
    if not _injected and getattr(type(scheduler), "_traceloom_scheduler_injection", False):
        return          # the scheduler class records itself: no double recording
    try:
        if transport_identity and not _has_transport_field(output):
            # A dynamic attribute would be dropped by msgpack/pickle transport.
            raise ContextRecordError("SchedulerOutput lacks the traceloom_step dataclass field "
                                     "(transport-worker.patch not applied)")
        state = _scheduler_state(scheduler, transport_identity)
    except Exception as exc:
        _report_failure("cannot start context recording", exc)
        return
    try:
        record = _build_step(state, scheduler, output)
    except Exception as exc:
        state.writer._drop("cannot build step record", exc)
        return
    if transport_identity:
        try:
            output.traceloom_step = {"run_id": state.run_id, "step_id": record["step_id"]}
        except Exception as exc:
            state.writer._drop("cannot set SchedulerOutput.traceloom_step", exc)
            return
    state.writer.submit(record)


def _build_step(state: _SchedulerState, scheduler: Any, output: Any) -> dict:
    ordinal = state.ordinal
    state.ordinal += 1
    step_id = uuid.uuid4().hex
    observed = time.monotonic_ns()
    pseudo = state.pseudonym

    new_ids: set = set()
    new_start: dict = {}
    new_seen: dict = {}
    for data in getattr(output, "scheduled_new_reqs", None) or ():
        rid = getattr(data, "req_id", None)
        new_ids.add(rid)
        new_seen[rid] = new_seen.get(rid, 0) + 1
        new_start[rid] = getattr(data, "num_computed_tokens", None)
    cached_start = _cached_starts(getattr(output, "scheduled_cached_reqs", None))
    live = getattr(scheduler, "requests", None)
    live = live if isinstance(live, Mapping) else {}

    requests = []
    total = 0
    for rid, tokens in (getattr(output, "num_scheduled_tokens", None) or {}).items():
        if not _is_count(tokens):
            raise ContextRecordError("num_scheduled_tokens value is not an int >= 0")
        if rid in new_ids:
            kind = "new"
            start = new_start[rid] if new_seen[rid] == 1 else None
        else:
            kind = "cached"
            start = cached_start.get(rid)
        if not _is_int(start):       # booleans and anything else: unknown, never guessed
            start = None
        request = live.get(rid)
        computed = getattr(request, "num_computed_tokens", None)
        prompt = getattr(request, "num_prompt_tokens", None)
        requests.append({
            "request_id": pseudo(rid),
            "scheduled_tokens": tokens,
            "scheduled_token_start": start,
            "scheduled_token_start_basis": None if start is None else _START_BASIS,
            "payload_kind": kind,
            "computed_tokens_after_schedule": computed if _is_int(computed) else None,
            "prompt_tokens": prompt if _is_int(prompt) else None,
        })
        total += tokens
    if len(requests) > MAX_REQUESTS_PER_STEP:
        raise ContextRecordError(f"{len(requests)} requests in one step, over {MAX_REQUESTS_PER_STEP}")

    free_blocks = pool_blocks = None
    pool = getattr(getattr(scheduler, "kv_cache_manager", None), "block_pool", None)
    if pool is not None:
        try:
            free_blocks = pool.get_num_free_blocks()
        except Exception:
            free_blocks = None
        pool_blocks = getattr(pool, "num_gpu_blocks", None)
    cached = getattr(output, "scheduled_cached_reqs", None)
    resumed = getattr(cached, "resumed_req_ids", None)
    preempted = getattr(output, "preempted_req_ids", None)
    return {
        "type": "step",
        "step_id": step_id,
        "ordinal": ordinal,
        "observed_monotonic_ns": observed,
        "total_scheduled_tokens": total,
        "requests": requests,
        "cache": {"observation_phase": "after_schedule",
                  "free_blocks": free_blocks if _is_count(free_blocks) else None,
                  "pool_blocks": pool_blocks if _is_count(pool_blocks) else None},
        "resumed_request_ids": None if resumed is None else sorted(pseudo(r) for r in resumed),
        "finished_request_ids": sorted(pseudo(r) for r in (getattr(output, "finished_req_ids", None) or ())),
        "preempted_request_ids": None if preempted is None else sorted(pseudo(r) for r in preempted),
    }


def _cached_starts(cached: Any) -> dict:
    """req_id -> num_computed_tokens from CachedRequestData's parallel arrays, used only when
    both are sequences of equal length and every id occurs exactly once."""
    ids = getattr(cached, "req_ids", None)
    starts = getattr(cached, "num_computed_tokens", None)
    if not isinstance(ids, (list, tuple)) or not isinstance(starts, (list, tuple)):
        return {}
    if len(ids) != len(starts) or len(set(ids)) != len(ids):
        return {}
    return dict(zip(ids, starts))


def request_coordinate(scheduler: Any, request_id: Any) -> dict | None:
    """{run_id, scheduler_id, request_id (pseudonym)} of a request as this scheduler records
    it, for an in-process caller; None if the scheduler has not recorded anything."""
    try:
        state = scheduler.__dict__.get(_STATE_ATTR)
        if state is None:
            return None
        return {"run_id": state.run_id, "scheduler_id": state.writer.producer_id,
                "request_id": state.pseudonym(request_id)}
    except Exception:
        return None


# ------------------------------------------------------------------------------------------
# Worker side (execution-linked mode)

_worker_writers: dict = {}


def _worker_writer(run_id: str) -> _BackgroundWriter:
    key = (os.getpid(), run_id)
    with _registry_lock:
        writer = _worker_writers.get(key)
    if writer is None:
        writer = _BackgroundWriter(context_dir() or ".", run_id, worker_metadata())
        with _registry_lock:
            writer = _worker_writers.setdefault(key, writer)
    return writer


def _torch_marker(name: str) -> Any:
    from torch.profiler import record_function   # lazily: only linked-mode workers need torch
    return record_function(name)


def _transported_identity(output: Any) -> dict | None:
    identity = getattr(output, "traceloom_step", None)
    if identity is None:
        return None
    if not isinstance(identity, Mapping):
        raise ContextRecordError("traceloom_step is not a mapping")
    run_id = _env_run_id()
    if identity.get("run_id") != run_id:
        raise ContextRecordError("transported run_id differs from TRACELOOM_RUN_ID")
    if not _is_id_text(identity.get("step_id")):
        raise ContextRecordError("transported step_id is not a string of 1-128 chars")
    return {"run_id": run_id, "step_id": identity["step_id"]}


@contextlib.contextmanager
def execution_scope(output: Any, worker_rank: int | None = None,
                    marker_factory: Callable[[str], Any] | None = None, *,
                    phase: str = "execute_model") -> Iterator[None]:
    """Around one worker execution of a scheduler output carrying traceloom_step: opens the
    profiler marker traceloom.execution.<id> (torch.profiler.record_function unless
    `marker_factory(name)` gives another context manager) and records an execution record
    with status returned/raised and marker_state emitted/unavailable. Without recording or
    without a transported identity it only runs the body."""
    setup = None
    if enabled():
        try:
            identity = _transported_identity(output)
            if identity is not None:
                if phase not in _PHASES:
                    raise ContextRecordError(f"unknown execution phase {phase!r}")
                setup = (identity, _worker_writer(identity["run_id"]))
        except Exception as exc:
            _report_failure("cannot start execution recording", exc)
    if setup is None:
        yield
        return

    identity, writer = setup
    execution_id = uuid.uuid4().hex
    marker_name = MARKER_PREFIX + execution_id
    marker = None
    marker_state = "unavailable"
    try:
        marker = (marker_factory or _torch_marker)(marker_name)
        marker.__enter__()
        marker_state = "emitted"
    except Exception as exc:
        marker = None
        _log.debug("traceloom context: profiler marker unavailable", exc_info=exc)
    status = "returned"
    try:
        yield
    except BaseException:
        status = "raised"
        raise
    finally:
        if marker is not None:
            try:
                marker.__exit__(None, None, None)
            except Exception as exc:
                _log.debug("traceloom context: closing profiler marker failed", exc_info=exc)
        try:
            writer.submit({
                "type": "execution",
                "execution_id": execution_id,
                "step_id": identity["step_id"],
                "marker": marker_name,
                "phase": phase,
                "worker_rank": worker_rank if _is_int(worker_rank) else None,
                "process_id": os.getpid(),
                "status": status,
                "marker_state": marker_state,
            })
        except Exception as exc:
            _report_failure("cannot record execution", exc)


def _worker_rank(worker: Any) -> int | None:
    # WorkerWrapperBase forwards unknown attributes to its worker: read its own dict only.
    attrs = getattr(worker, "__dict__", {})
    for name in ("global_rank", "rpc_rank", "rank"):
        if _is_int(attrs.get(name)):
            return attrs[name]
    return None


_PENDING_ATTR = "_traceloom_pending_sample"
_AMBIGUOUS = object()


def trace_worker_execute(fn: Callable) -> Callable:
    """Decorates WorkerWrapperBase.execute_model(self, scheduler_output, ...). When execute
    returns None with scheduled tokens (sampling deferred to sample_tokens), the identity is
    kept for the next sample; a second execute before that sample refuses to guess."""
    @functools.wraps(fn)
    def execute_model(self: Any, scheduler_output: Any, *args: Any, **kwargs: Any) -> Any:
        if not enabled():
            return fn(self, scheduler_output, *args, **kwargs)
        ambiguous = False
        try:
            if self.__dict__.get(_PENDING_ATTR) is not None:
                ambiguous = True
                _log.warning("TraceLoom: execute_model called again before sample_tokens; "
                             "the outstanding sample is not attributed to any step")
        except Exception:
            pass
        with execution_scope(scheduler_output, _worker_rank(self), phase="execute_model"):
            result = fn(self, scheduler_output, *args, **kwargs)
        try:
            pending = None
            tokens = getattr(scheduler_output, "total_num_scheduled_tokens", 0)
            if ambiguous:
                pending = _AMBIGUOUS
            elif result is None and _is_int(tokens) and tokens > 0:
                identity = getattr(scheduler_output, "traceloom_step", None)
                pending = dict(identity) if isinstance(identity, Mapping) else None
            self.__dict__[_PENDING_ATTR] = pending
        except Exception:
            pass
        return result
    return execute_model


class _Carrier:
    __slots__ = ("traceloom_step",)

    def __init__(self, identity: Any) -> None:
        self.traceloom_step = identity


def trace_worker_sample(fn: Callable) -> Callable:
    """Decorates WorkerWrapperBase.sample_tokens(self, grammar_output, ...): the sample is
    recorded with phase sample_tokens under the step of the outstanding execute."""
    @functools.wraps(fn)
    def sample_tokens(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            pending = self.__dict__.pop(_PENDING_ATTR, None)
        except Exception:
            pending = None
        if pending is None or pending is _AMBIGUOUS or not enabled():
            return fn(self, *args, **kwargs)
        with execution_scope(_Carrier(pending), _worker_rank(self), phase="sample_tokens"):
            return fn(self, *args, **kwargs)
    return sample_tokens


def trace_execution(fn: Callable) -> Callable:
    """Legacy decorator: records fn(self, scheduler_output, ...) as one execute_model."""
    @functools.wraps(fn)
    def wrapper(self: Any, scheduler_output: Any, *args: Any, **kwargs: Any) -> Any:
        with execution_scope(scheduler_output, _worker_rank(self), phase="execute_model"):
            return fn(self, scheduler_output, *args, **kwargs)
    return wrapper

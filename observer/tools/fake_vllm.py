"""fake_vllm.py: a small CPU stand-in for the vLLM V1 scheduler surface the observer uses.

vLLM cannot run here (it needs torch and an accelerator), so the observer's tests drive the
traceloom_vllm_scheduler classes against this fake instead. It is faithful where the observer
looks, and only there:

  * NewRequestData, CachedRequestData and SchedulerOutput are dataclasses with the same fields,
    in the same order, as vLLM 0.34.0's vllm/v1/core/sched/output.py (the test
    test_observer_contract.py compares them with the real source of the wheel it checks; 0.33's
    CachedRequestData.resumed_req_ids is gone in 0.34: the observer reads it where it exists,
    tests/python/test_observer.py covers both shapes); install(transport_field=True) adds the
    traceloom_step field the way transport-worker.patch does;
  * Scheduler / AsyncScheduler have vLLM's constructor parameters and the attributes named in
    check_vllm_contract.CONTRACT (scheduler_config, cache_config, requests, kv_cache_manager
    .block_pool.get_num_free_blocks() / num_gpu_blocks), and a real, simple scheduling policy:
    running requests first, then waiting ones (FCFS), within max_num_batched_tokens and
    max_num_seqs, chunked prefill, blocks of block_size tokens, and an optimistic
    num_computed_tokens update after scheduling (as vLLM's _update_after_schedule does);
  * update_from_output() appends one sampled token to each request whose prompt is complete and
    finishes requests at max_tokens, reporting them in the next output's finished_req_ids.

Not modelled: preemption, speculative decoding, encoders, KV connectors, structured output.

    from fake_vllm import install
    mods = install(monkeypatch)            # puts vllm.v1.core.sched.* into sys.modules
    import traceloom_vllm_scheduler
"""
from __future__ import annotations

import dataclasses
import math
import sys
import types
from dataclasses import dataclass, field
from typing import Any

OUTPUT_MODULE = "vllm.v1.core.sched.output"


def _output_classes(transport_field: bool) -> dict[str, type]:
    @dataclass
    class NewRequestData:
        req_id: str
        prompt_token_ids: list | None
        mm_features: list
        sampling_params: Any
        pooling_params: Any
        block_ids: tuple
        num_computed_tokens: int
        lora_request: Any
        prefill_token_ids: list   # the prompt, plus the tokens generated before a resume
        prompt_embeds: Any = None
        prompt_is_token_ids: list | None = None
        replay_start: int = 0

    @dataclass
    class CachedRequestData:
        req_ids: list
        new_token_ids: list
        new_block_ids: list
        num_computed_tokens: list
        num_output_tokens: list

        @classmethod
        def make_empty(cls) -> "CachedRequestData":
            return cls(req_ids=[], new_token_ids=[], new_block_ids=[], num_computed_tokens=[],
                       num_output_tokens=[])

    @dataclass
    class ScheduledEncoderInputStats:
        num_inputs: int = 0
        output_tokens: int = 0

    fields = [
        ("scheduled_new_reqs", list),
        ("scheduled_cached_reqs", CachedRequestData),
        ("num_scheduled_tokens", dict),
        ("total_num_scheduled_tokens", int),
        ("scheduled_spec_decode_tokens", dict),
        ("scheduled_encoder_inputs", dict),
        ("finished_req_ids", set),
        ("free_encoder_mm_hashes", list),
        ("encoder_input_updates", dict, field(default_factory=dict)),
        ("scheduled_encoder_input_stats", Any, field(default=None)),
        ("preempted_req_ids", Any, field(default=None)),
        ("has_structured_output_requests", bool, field(default=False)),
        ("pending_structured_output_tokens", bool, field(default=False)),
        ("num_invalid_spec_tokens", Any, field(default=None)),
        ("kv_connector_metadata", Any, field(default=None)),
        ("has_sync_kv_loads", bool, field(default=False)),
        ("aux_output_connector_metadata", Any, field(default=None)),
        ("ec_connector_metadata", Any, field(default=None)),
        ("new_block_ids_to_zero", Any, field(default=None)),
        ("kv_cache_block_copies", Any, field(default=None)),
        ("kv_connector_block_state", Any, field(default=None)),
        ("num_spec_tokens_to_schedule", int, field(default=0)),
        ("skip_drafts", bool, field(default=False)),
    ]
    if transport_field:   # what transport-worker.patch adds
        fields.append(("traceloom_step", Any, field(default=None)))

    def make_empty(cls: type) -> Any:
        return cls(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData.make_empty(),
                   num_scheduled_tokens={}, total_num_scheduled_tokens=0,
                   scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
                   finished_req_ids=set(), free_encoder_mm_hashes=[])

    SchedulerOutput = dataclasses.make_dataclass(
        "SchedulerOutput", fields, namespace={"make_empty": classmethod(make_empty)})
    classes = {"NewRequestData": NewRequestData, "CachedRequestData": CachedRequestData,
               "ScheduledEncoderInputStats": ScheduledEncoderInputStats,
               "SchedulerOutput": SchedulerOutput}
    for name, cls in classes.items():
        cls.__module__ = OUTPUT_MODULE
        cls.__qualname__ = name
    return classes


class Request:
    """vllm.v1.request.Request, reduced to what scheduling needs."""

    def __init__(self, request_id: str, prompt_token_ids: list[int], max_tokens: int) -> None:
        self.request_id = request_id
        self.prompt_token_ids = list(prompt_token_ids)
        self.num_prompt_tokens = len(prompt_token_ids)
        self.max_tokens = max_tokens
        self.output_token_ids: list[int] = []
        self.num_computed_tokens = 0
        self.num_output_placeholders = 0
        self.num_blocks = 0

    @property
    def num_tokens(self) -> int:
        return self.num_prompt_tokens + len(self.output_token_ids)

    @property
    def is_prefill_chunk(self) -> bool:
        return self.num_computed_tokens < self.num_prompt_tokens


class BlockPool:
    def __init__(self, num_gpu_blocks: int) -> None:
        self.num_gpu_blocks = num_gpu_blocks
        self._free = num_gpu_blocks

    def get_num_free_blocks(self) -> int:
        return self._free


class KVCacheManager:
    def __init__(self, num_gpu_blocks: int, block_size: int) -> None:
        self.block_pool = BlockPool(num_gpu_blocks)
        self.block_size = block_size

    def allocate_slots(self, request: Request, num_new_tokens: int) -> bool:
        need = math.ceil((request.num_computed_tokens + num_new_tokens) / self.block_size) - request.num_blocks
        if need > self.block_pool._free:
            return False
        if need > 0:
            self.block_pool._free -= need
            request.num_blocks += need
        return True

    def free(self, request: Request) -> None:
        self.block_pool._free += request.num_blocks
        request.num_blocks = 0


class Scheduler:
    """vllm.v1.core.sched.scheduler.Scheduler's constructor and attribute surface."""

    def __init__(self, vllm_config: Any, kv_cache_config: Any, structured_output_manager: Any = None,
                 block_size: int = 16, hash_block_size: int | None = None, mm_registry: Any = None,
                 include_finished_set: bool = False, log_stats: bool = False) -> None:
        self.vllm_config = vllm_config
        self.scheduler_config = vllm_config.scheduler_config
        self.cache_config = vllm_config.cache_config
        self.requests: dict[str, Request] = {}
        self.waiting: list[Request] = []
        self.running: list[Request] = []
        self.finished_req_ids: set[str] = set()
        self.kv_cache_manager = KVCacheManager(kv_cache_config.num_blocks, block_size)
        self.current_step = 0
        self._output = sys.modules[OUTPUT_MODULE]

    def add_request(self, request: Request) -> None:
        self.requests[request.request_id] = request
        self.waiting.append(request)

    def has_requests(self) -> bool:
        return bool(self.requests) or bool(self.finished_req_ids)

    def schedule(self, throttle_prefills: bool = False) -> Any:
        out = self._output
        budget = self.scheduler_config.max_num_batched_tokens
        num_scheduled: dict[str, int] = {}
        new_reqs = []
        cached = out.CachedRequestData.make_empty()
        for req in self.running:
            n = min(req.num_tokens - req.num_computed_tokens, budget)
            if n <= 0 or not self.kv_cache_manager.allocate_slots(req, n):
                continue
            num_scheduled[req.request_id] = n
            cached.req_ids.append(req.request_id)
            cached.new_token_ids.append([])
            cached.new_block_ids.append(None)
            cached.num_computed_tokens.append(req.num_computed_tokens)
            cached.num_output_tokens.append(len(req.output_token_ids))
            budget -= n
        while (self.waiting and budget > 0 and not throttle_prefills
               and len(self.running) < self.scheduler_config.max_num_seqs):
            req = self.waiting[0]
            n = min(req.num_tokens - req.num_computed_tokens, budget)
            if not self.kv_cache_manager.allocate_slots(req, n):
                break
            self.waiting.pop(0)
            self.running.append(req)
            num_scheduled[req.request_id] = n
            new_reqs.append(out.NewRequestData(
                req_id=req.request_id, prompt_token_ids=req.prompt_token_ids, mm_features=[],
                sampling_params=None, pooling_params=None, block_ids=([],),
                num_computed_tokens=req.num_computed_tokens, lora_request=None,
                prefill_token_ids=list(req.prompt_token_ids)))
            budget -= n
        output = out.SchedulerOutput(
            scheduled_new_reqs=new_reqs, scheduled_cached_reqs=cached,
            num_scheduled_tokens=num_scheduled,
            total_num_scheduled_tokens=sum(num_scheduled.values()),
            scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
            finished_req_ids=self.finished_req_ids, free_encoder_mm_hashes=[])
        self.finished_req_ids = set()
        self._update_after_schedule(output)
        return output

    def _update_after_schedule(self, scheduler_output: Any) -> None:
        # Optimistic: the tokens count as computed as soon as they are scheduled.
        for req_id, n in scheduler_output.num_scheduled_tokens.items():
            self.requests[req_id].num_computed_tokens += n
        self.current_step += 1

    def update_from_output(self, scheduler_output: Any, model_runner_output: Any = None) -> dict:
        for req_id in scheduler_output.num_scheduled_tokens:
            req = self.requests.get(req_id)
            if req is None or req.num_computed_tokens < req.num_tokens:
                continue                     # prefill chunk: nothing sampled yet
            req.output_token_ids.append(0)
            req.num_output_placeholders = max(0, req.num_output_placeholders - 1)
            if len(req.output_token_ids) >= req.max_tokens:
                self.running.remove(req)
                self.kv_cache_manager.free(req)
                del self.requests[req_id]
                self.finished_req_ids.add(req_id)
        return {}


class AsyncScheduler(Scheduler):
    """vllm.v1.core.sched.async_scheduler.AsyncScheduler: post-processing inside schedule()."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.post_processed_steps = 0

    def _update_after_schedule(self, scheduler_output: Any) -> None:
        super()._update_after_schedule(scheduler_output)
        for req_id in scheduler_output.num_scheduled_tokens:
            request = self.requests[req_id]
            if request.is_prefill_chunk:
                continue
            request.num_output_placeholders += 1
        self.post_processed_steps += 1


def make_vllm_config(max_num_batched_tokens: int = 8, max_num_seqs: int = 4, block_size: int = 4,
                     async_scheduling: bool = False) -> Any:
    """The config objects the scheduler reads (vllm.config.SchedulerConfig / CacheConfig fields)."""
    scheduler_config = types.SimpleNamespace(
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, policy="fcfs",
        enable_chunked_prefill=True, async_scheduling=async_scheduling, scheduler_cls=None,
        max_model_len=1024)
    cache_config = types.SimpleNamespace(enable_prefix_caching=True, block_size=block_size,
                                         num_gpu_blocks=None, gpu_memory_utilization=0.9)
    return types.SimpleNamespace(scheduler_config=scheduler_config, cache_config=cache_config)


def install(monkeypatch: Any, transport_field: bool = False) -> dict[str, types.ModuleType]:
    """Put the fake vllm.v1.core.sched modules into sys.modules (through pytest's monkeypatch,
    so they are removed afterwards) and forget any imported traceloom_vllm_scheduler."""
    mods: dict[str, types.ModuleType] = {}
    for name in ("vllm", "vllm.v1", "vllm.v1.core", "vllm.v1.core.sched"):
        mods[name] = types.ModuleType(name)
        mods[name].__path__ = []  # type: ignore[attr-defined]
    output = types.ModuleType(OUTPUT_MODULE)
    for name, cls in _output_classes(transport_field).items():
        setattr(output, name, cls)
    mods[OUTPUT_MODULE] = output
    mods["vllm.v1.core.sched"].output = output
    sched = types.ModuleType("vllm.v1.core.sched.scheduler")
    sched.Scheduler = Scheduler
    mods["vllm.v1.core.sched.scheduler"] = sched
    asched = types.ModuleType("vllm.v1.core.sched.async_scheduler")
    asched.AsyncScheduler = AsyncScheduler
    asched.Scheduler = Scheduler
    mods["vllm.v1.core.sched.async_scheduler"] = asched
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.delitem(sys.modules, "traceloom_vllm_scheduler", raising=False)
    return mods

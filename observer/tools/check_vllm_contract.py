#!/usr/bin/env python3
"""check_vllm_contract.py: does this vLLM still offer what the TraceLoom observer relies on?

    python observer/tools/check_vllm_contract.py                    # pip download vllm --no-deps
    python observer/tools/check_vllm_contract.py --wheel vllm-0.34.0-...whl
    python observer/tools/check_vllm_contract.py --source ~/src/vllm  # a checkout or site-packages

It reads vLLM's Python source (from a wheel read as a zip, or a source tree) and never imports
vLLM or torch, so it runs on any CPU machine. It checks, by parsing the source with `ast`:

  * every entry of CONTRACT below: the classes, methods (with their leading parameters),
    dataclass/config fields, instance attributes and strings the observer and its patch use;
  * SchedulerConfig.get_scheduler_cls, executed with a stubbed resolver, resolves the four
    traceloom_vllm_scheduler classes, and their ancestry matches the real Scheduler and
    AsyncScheduler class bodies (stand-ins built from the source: same names, bases, methods);
  * the real SchedulerOutput dataclasses (executed from output.py with vLLM imports stubbed):
    record_step(..., transport_identity=False, _injected=True) leaves the pickle bytes of a
    SchedulerOutput unchanged and writes exactly one valid *.jsonl file;
  * linked mode: observer/patches/transport-worker.patch applies (git apply) to copies of
    output.py, core.py and worker_base.py; the patched SchedulerOutput has the traceloom_step
    field, it survives pickle (and msgspec.msgpack if msgspec is installed), core.py has no
    record_step call, and the worker decorators sit on execute_model and sample_tokens.

It prints one line per check and exits 1 if anything is missing (2 on a usage or download
error). The test tests/python/test_observer_contract.py runs it against a downloaded wheel.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import glob
import io
import os
import pathlib
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import types
import zipfile
from typing import Any, Callable, Iterator

HERE = pathlib.Path(__file__).resolve().parent
OBSERVER = HERE.parent
DEFAULT_PATCH = OBSERVER / "patches" / "transport-worker.patch"

SCHED = "vllm/v1/core/sched/scheduler.py"
ASYNC = "vllm/v1/core/sched/async_scheduler.py"
OUTPUT = "vllm/v1/core/sched/output.py"
KVM = "vllm/v1/core/kv_cache_manager.py"
POOL = "vllm/v1/core/block_pool.py"
REQUEST = "vllm/v1/request.py"
SCHED_CFG = "vllm/config/scheduler.py"
CACHE_CFG = "vllm/config/cache.py"
ARGS = "vllm/engine/arg_utils.py"
WORKER = "vllm/v1/worker/worker_base.py"
CORE = "vllm/v1/engine/core.py"

# The contract: (kind, file, name, why the observer needs it).
#   class      a top-level class            base       Class(Base): Base among its bases
#   method     Class.method[(p1, p2, ...)]: defined in the class body, with these leading params
#   field      Class.name: annotated field in the class body (dataclass / config field)
#   attribute  Class.name: self.name assigned in a method, or a class-level name or property
#   string     a string literal present in the file
CONTRACT: list[tuple[str, str, str, str]] = [
    ("class", SCHED, "Scheduler", "base of TracingScheduler"),
    ("method", SCHED, "Scheduler.__init__(self, vllm_config, kv_cache_config)", "Linked* __init__ forwards *args/**kwargs"),
    ("method", SCHED, "Scheduler.schedule(self)", "_RecordingScheduler.schedule wraps it"),
    ("method", SCHED, "Scheduler.update_from_output(self, scheduler_output)", "EngineCore hands back the same SchedulerOutput; mirrored by the test fake"),
    ("method", SCHED, "Scheduler._update_after_schedule(self, scheduler_output)", "async post-processing runs inside schedule()"),
    ("attribute", SCHED, "Scheduler.scheduler_config", "session metadata scheduler_config"),
    ("attribute", SCHED, "Scheduler.cache_config", "session metadata cache_config"),
    ("attribute", SCHED, "Scheduler.requests", "Request objects: prompt_tokens, computed_tokens_after_schedule"),
    ("attribute", SCHED, "Scheduler.kv_cache_manager", "cache counters"),
    ("class", ASYNC, "AsyncScheduler", "base of TracingAsyncScheduler"),
    ("base", ASYNC, "AsyncScheduler(Scheduler)", "async scheduling is a Scheduler subclass"),
    ("method", ASYNC, "AsyncScheduler._update_after_schedule(self, scheduler_output)", "async post-processing inside schedule()"),
    ("attribute", KVM, "KVCacheManager.block_pool", "cache counters"),
    ("method", POOL, "BlockPool.get_num_free_blocks(self)", "cache.free_blocks"),
    ("attribute", POOL, "BlockPool.num_gpu_blocks", "cache.pool_blocks"),
    ("attribute", REQUEST, "Request.request_id", "raw id, pseudonymised"),
    ("attribute", REQUEST, "Request.num_prompt_tokens", "requests[].prompt_tokens"),
    ("attribute", REQUEST, "Request.num_computed_tokens", "requests[].computed_tokens_after_schedule"),
    ("class", OUTPUT, "SchedulerOutput", "the recorded decision"),
    ("field", OUTPUT, "SchedulerOutput.scheduled_new_reqs", "payload_kind new, scheduled_token_start"),
    ("field", OUTPUT, "SchedulerOutput.scheduled_cached_reqs", "payload_kind cached, scheduled_token_start, resumed ids"),
    ("field", OUTPUT, "SchedulerOutput.num_scheduled_tokens", "requests[].scheduled_tokens"),
    ("field", OUTPUT, "SchedulerOutput.total_num_scheduled_tokens", "worker: tokens > 0 keeps the identity for sample_tokens"),
    ("field", OUTPUT, "SchedulerOutput.scheduled_spec_decode_tokens", "building a SchedulerOutput (contract check)"),
    ("field", OUTPUT, "SchedulerOutput.scheduled_encoder_inputs", "building a SchedulerOutput (contract check)"),
    ("field", OUTPUT, "SchedulerOutput.finished_req_ids", "finished_request_ids"),
    ("field", OUTPUT, "SchedulerOutput.free_encoder_mm_hashes", "building a SchedulerOutput (contract check)"),
    ("field", OUTPUT, "SchedulerOutput.preempted_req_ids", "preempted_request_ids (null when None)"),
    ("class", OUTPUT, "NewRequestData", "scheduled_new_reqs items"),
    ("field", OUTPUT, "NewRequestData.req_id", "request identity"),
    ("field", OUTPUT, "NewRequestData.num_computed_tokens", "scheduled_token_start of new payloads"),
    ("class", OUTPUT, "CachedRequestData", "scheduled_cached_reqs"),
    ("field", OUTPUT, "CachedRequestData.req_ids", "scheduled_token_start of cached payloads"),
    ("field", OUTPUT, "CachedRequestData.num_computed_tokens", "scheduled_token_start of cached payloads"),
    ("field", SCHED_CFG, "SchedulerConfig.max_num_batched_tokens", "session metadata"),
    ("field", SCHED_CFG, "SchedulerConfig.max_num_seqs", "session metadata"),
    ("field", SCHED_CFG, "SchedulerConfig.policy", "session metadata"),
    ("field", SCHED_CFG, "SchedulerConfig.enable_chunked_prefill", "session metadata"),
    ("field", SCHED_CFG, "SchedulerConfig.async_scheduling", "session metadata"),
    ("field", SCHED_CFG, "SchedulerConfig.scheduler_cls", "--scheduler-cls lands here"),
    ("method", SCHED_CFG, "SchedulerConfig.get_scheduler_cls(self)", "resolves the class path"),
    ("field", CACHE_CFG, "CacheConfig.enable_prefix_caching", "session metadata"),
    ("field", CACHE_CFG, "CacheConfig.block_size", "session metadata"),
    ("string", ARGS, "--scheduler-cls", "the CLI option that selects the observer"),
    ("class", WORKER, "WorkerWrapperBase", "patched by transport-worker.patch"),
    ("method", WORKER, "WorkerWrapperBase.execute_model(self, scheduler_output)", "@trace_worker_execute"),
    ("method", WORKER, "WorkerBase.sample_tokens(self, grammar_output)", "@trace_worker_sample forwards to it"),
    ("attribute", WORKER, "WorkerWrapperBase.global_rank", "execution worker_rank"),
    ("attribute", WORKER, "WorkerWrapperBase.rpc_rank", "execution worker_rank fallback"),
    ("attribute", WORKER, "WorkerWrapperBase.worker", "sample_tokens forwards to the worker"),
]

# What the observer reads where a vLLM offers it, and records as null where it does not (the
# schema's "null = not exposed by this vLLM"): reported as OK or ABSENT, never a failure.
OPTIONAL: list[tuple[str, str, str, str]] = [
    ("field", OUTPUT, "CachedRequestData.resumed_req_ids",
     "resumed_request_ids; vLLM 0.34 dropped it (a resumed request comes back in "
     "scheduled_new_reqs, with the tokens it had generated in prefill_token_ids): null there"),
]

SCHEDULER_CLASSES = {
    "TracingScheduler": ("Scheduler",),
    "TracingAsyncScheduler": ("AsyncScheduler", "Scheduler"),
    "LinkedTracingScheduler": ("Scheduler",),
    "LinkedTracingAsyncScheduler": ("AsyncScheduler", "Scheduler"),
}


# ------------------------------------------------------------------------------------------
# Reading vLLM's source

class VllmSource:
    """The .py files of a vLLM wheel (read as a zip) or of a source tree, by relative path."""

    def __init__(self, location: str | os.PathLike) -> None:
        self.location = pathlib.Path(location)
        self._cache: dict[str, str | None] = {}
        if self.location.is_file():
            self._zip: zipfile.ZipFile | None = zipfile.ZipFile(self.location)
            self.root = None
        else:
            self._zip = None
            root = self.location
            if (root / "__init__.py").exists() and root.name == "vllm":
                root = root.parent
            if not (root / "vllm" / "__init__.py").exists():
                raise FileNotFoundError(f"{location}: no vllm/__init__.py (expected a vLLM "
                                        "checkout, site-packages directory or wheel)")
            self.root = root

    def read(self, rel: str) -> str | None:
        if rel not in self._cache:
            try:
                if self._zip is not None:
                    self._cache[rel] = self._zip.read(rel).decode("utf-8")
                else:
                    self._cache[rel] = (self.root / rel).read_text("utf-8")
            except (KeyError, OSError):
                self._cache[rel] = None
        return self._cache[rel]

    def version(self) -> str:
        text = self.read("vllm/_version.py") or ""
        m = re.search(r"""__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", text)
        if m:
            return m.group(1)
        m = re.match(r"vllm-([^-]+)-", self.location.name)
        return m.group(1) if m else "unknown"


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _fields(cls: ast.ClassDef) -> list[str]:
    return [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]


def _attributes(cls: ast.ClassDef) -> set[str]:
    names = set(_fields(cls))
    for node in cls.body:
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(isinstance(d, ast.Name) and d.id in ("property", "cached_property") for d in node.decorator_list):
                names.add(node.name)
    for node in ast.walk(cls):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                names.add(t.attr)
    return names


def _base_names(cls: ast.ClassDef) -> list[str]:
    out = []
    for b in cls.bases:
        if isinstance(b, ast.Name):
            out.append(b.id)
        elif isinstance(b, ast.Attribute):
            out.append(b.attr)
    return out


class Report:
    def __init__(self, out: io.TextIOBase) -> None:
        self.out = out
        self.failures = 0

    def line(self, ok: bool | None, kind: str, where: str, what: str, note: str = "",
             optional: bool = False) -> None:
        tag = {True: "OK  ", False: "ABSENT" if optional else "MISS", None: "SKIP"}[ok]
        if ok is False and not optional:
            self.failures += 1
        self.out.write(f"{tag} {kind:<9} {where:<38} {what}{'  -- ' + note if note else ''}\n")


def check_table(src: VllmSource, report: Report) -> None:
    trees: dict[str, ast.Module | None] = {}
    for optional, (kind, rel, name, why) in [(False, item) for item in CONTRACT] + \
                                            [(True, item) for item in OPTIONAL]:
        if rel not in trees:
            text = src.read(rel)
            trees[rel] = ast.parse(text, rel) if text is not None else None
        tree = trees[rel]
        if tree is None:
            report.line(False, kind, rel, name, "file missing", optional)
            continue
        classes = _classes(tree)
        ok, note = False, why
        if kind == "class":
            ok = name in classes
        elif kind == "base":
            cls_name, base = re.fullmatch(r"(\w+)\((\w+)\)", name).groups()
            ok = cls_name in classes and base in _base_names(classes[cls_name])
        elif kind == "string":
            ok = any(isinstance(n, ast.Constant) and n.value == name for n in ast.walk(tree))
        else:
            m = re.fullmatch(r"(\w+)\.(\w+)(?:\(([^)]*)\))?", name)
            cls_name, member, params = m.group(1), m.group(2), m.group(3)
            cls = classes.get(cls_name)
            if cls is None:
                note = f"class {cls_name} missing"
            elif kind == "method":
                fn = _methods(cls).get(member)
                ok = fn is not None
                if ok and params is not None:
                    want = [p.strip() for p in params.split(",") if p.strip()]
                    have = [a.arg for a in fn.args.posonlyargs + fn.args.args]
                    ok = have[:len(want)] == want
                    note = f"signature ({', '.join(have)})" if not ok else why
            elif kind == "field":
                ok = member in _fields(cls)
            elif kind == "attribute":
                ok = member in _attributes(cls)
        report.line(ok, kind, rel, name, note, optional)


# ------------------------------------------------------------------------------------------
# Executing pieces of the real source with vLLM's imports stubbed out

class _Stub:
    """Stands in for any vLLM/torch name a stubbed module imports."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return args[0] if args else None


def _strip_imports(tree: ast.Module, keep: Callable[[str], bool]) -> tuple[ast.Module, list[str]]:
    """Top-level imports of modules not kept are replaced by stubs of the imported names."""
    body, stubbed = [], []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and not keep(node.module):
            names = [a.asname or a.name for a in node.names]
        elif isinstance(node, ast.Import) and not all(keep(a.name) for a in node.names):
            names = [(a.asname or a.name).split(".")[0] for a in node.names]
        else:
            body.append(node)
            continue
        stubbed.extend(names)
        for n in names:
            body.append(ast.parse(f"{n} = _Stub").body[0])
    tree.body = body
    return ast.fix_missing_locations(tree), stubbed


def _stdlib(module: str) -> bool:
    return module.split(".")[0] in ("collections", "dataclasses", "functools", "typing", "enum",
                                    "__future__", "abc", "itertools", "math", "time")


def exec_output_module(text: str, module_name: str) -> types.ModuleType:
    """output.py's dataclasses, for real, in a module registered as `module_name` (so pickle
    finds the classes)."""
    tree, _ = _strip_imports(ast.parse(text), _stdlib)
    module = types.ModuleType(module_name)
    module.__dict__["_Stub"] = _Stub
    sys.modules[module_name] = module
    exec(compile(tree, f"<{module_name}>", "exec"), module.__dict__)
    return module


def _required_by_version(cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """Of `values`, those naming a field of the real dataclass `cls`: fields that some vLLM
    versions require and others lack (prefill_token_ids since 0.34, num_common_prefix_blocks
    until 0.33)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in values.items() if k in names}


def build_scheduler_output(mod: types.ModuleType) -> Any:
    """A SchedulerOutput built from the real class with the fields the spec lists: one new
    request (3 tokens from 0) and one cached request (1 token at 7), one finished request."""
    new = mod.NewRequestData(req_id="req-new", prompt_token_ids=[1, 2, 3], mm_features=[],
                             sampling_params=None, pooling_params=None, block_ids=([0],),
                             num_computed_tokens=0, lora_request=None,
                             **_required_by_version(mod.NewRequestData,
                                                    {"prefill_token_ids": [1, 2, 3]}))
    cached = mod.CachedRequestData.make_empty()
    cached.req_ids.append("req-cached")
    cached.num_computed_tokens.append(7)
    cached.new_block_ids.append(None)
    cached.num_output_tokens.append(1)
    return mod.SchedulerOutput(
        scheduled_new_reqs=[new], scheduled_cached_reqs=cached,
        num_scheduled_tokens={"req-new": 3, "req-cached": 1}, total_num_scheduled_tokens=4,
        scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
        finished_req_ids={"req-done"}, free_encoder_mm_hashes=[],
        **_required_by_version(mod.SchedulerOutput, {"num_common_prefix_blocks": []}))


class _Pool:
    num_gpu_blocks = 64

    def get_num_free_blocks(self) -> int:
        return 60


class _ContractScheduler:
    """The scheduler attributes record_step reads (names checked by CONTRACT)."""
    _traceloom_scheduler_injection = True

    def __init__(self) -> None:
        self.scheduler_config = types.SimpleNamespace(max_num_batched_tokens=8192, max_num_seqs=4,
                                                      policy="fcfs", enable_chunked_prefill=True,
                                                      async_scheduling=False)
        self.cache_config = types.SimpleNamespace(enable_prefix_caching=True, block_size=16)
        self.kv_cache_manager = types.SimpleNamespace(block_pool=_Pool())
        self.requests = {"req-new": types.SimpleNamespace(num_prompt_tokens=3, num_computed_tokens=3),
                         "req-cached": types.SimpleNamespace(num_prompt_tokens=7, num_computed_tokens=8)}


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _context_module() -> types.ModuleType:
    if str(OBSERVER) not in sys.path:
        sys.path.insert(0, str(OBSERVER))
    import traceloom_vllm_context
    return traceloom_vllm_context


def record_once(output: Any, transport_identity: bool) -> tuple[bytes, bytes, list[pathlib.Path], Any]:
    """pickle bytes before and after record_step, the files written, and the writer."""
    ctx = _context_module()
    sched = _ContractScheduler()
    with tempfile.TemporaryDirectory(prefix="traceloom-contract-") as tmp, \
            _env(TRACELOOM_CONTEXT_DIR=tmp, TRACELOOM_RUN_ID="contract-check"):
        before = pickle.dumps(output)
        ctx.record_step(sched, output, transport_identity=transport_identity, _injected=True)
        after = pickle.dumps(output)
        state = sched.__dict__.get("_traceloom_context_state")
        if state is not None:
            state.writer.close(timeout=10)
        files = sorted(pathlib.Path(tmp).glob("*.jsonl"))
        contents = [(f, f.read_bytes()) for f in files]
    return before, after, contents, state


def _validate_lines(data: bytes) -> list[dict]:
    import json
    ctx = _context_module()
    records = [json.loads(line) for line in data.decode("ascii").splitlines()]
    for r in records:
        ctx.validate_record(r)
    return records


# ------------------------------------------------------------------------------------------
# Scheduler check

def _shadow_class(cls: ast.ClassDef, namespace: dict) -> type:
    """A stand-in with the real class's name, bases (resolved in `namespace`) and methods."""
    bases = tuple(namespace[b] for b in _base_names(cls) if b in namespace) or (object,)

    def stub(name: str) -> Callable:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return None
        method.__name__ = name
        return method
    body = {name: stub(name) for name in _methods(cls)}
    body["__init__"] = lambda self, *a, **k: None
    return type(cls.name, bases, body)


def _shadow_modules(src: VllmSource, output_text: str) -> dict[str, types.ModuleType]:
    mods: dict[str, types.ModuleType] = {}
    for name in ("vllm", "vllm.v1", "vllm.v1.core", "vllm.v1.core.sched"):
        mods[name] = types.ModuleType(name)
        mods[name].__path__ = []  # type: ignore[attr-defined]
    out = exec_output_module(output_text, "vllm.v1.core.sched.output")
    mods["vllm.v1.core.sched.output"] = out
    sched_cls = _classes(ast.parse(src.read(SCHED)))["Scheduler"]
    async_cls = _classes(ast.parse(src.read(ASYNC)))["AsyncScheduler"]
    sched_mod = types.ModuleType("vllm.v1.core.sched.scheduler")
    sched_mod.Scheduler = _shadow_class(sched_cls, {})
    async_mod = types.ModuleType("vllm.v1.core.sched.async_scheduler")
    async_mod.Scheduler = sched_mod.Scheduler
    async_mod.AsyncScheduler = _shadow_class(async_cls, {"Scheduler": sched_mod.Scheduler})
    mods["vllm.v1.core.sched.scheduler"] = sched_mod
    mods["vllm.v1.core.sched.async_scheduler"] = async_mod
    mods["vllm.v1.core.sched"].output = out
    return mods


@contextlib.contextmanager
def _isolated_modules(mods: dict[str, types.ModuleType]) -> Iterator[None]:
    names = [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")] + ["traceloom_vllm_scheduler"]
    saved = {n: sys.modules.pop(n) for n in names if n in sys.modules}
    sys.modules.update(mods)
    try:
        yield
    finally:
        for n in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")] + ["traceloom_vllm_scheduler"]:
            sys.modules.pop(n, None)
        sys.modules.update(saved)


def _get_scheduler_cls_function(src: VllmSource, resolver: Callable[[str], Any]) -> Callable:
    tree = ast.parse(src.read(SCHED_CFG))
    fn = _methods(_classes(tree)["SchedulerConfig"])["get_scheduler_cls"]
    fn.decorator_list = []
    module = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
    logger = types.SimpleNamespace(warning_once=lambda *a, **k: None, warning=lambda *a, **k: None,
                                   info=lambda *a, **k: None)
    from typing import cast
    ns: dict[str, Any] = {"cast": cast, "logger": logger, "resolve_obj_by_qualname": resolver}
    exec(compile(module, "<get_scheduler_cls>", "exec"), ns)
    return ns["get_scheduler_cls"]


def check_scheduler(src: VllmSource, report: Report) -> None:
    output_text = src.read(OUTPUT)
    if output_text is None or src.read(SCHED_CFG) is None:
        report.line(False, "behaviour", SCHED_CFG, "get_scheduler_cls", "source missing")
        return
    if str(OBSERVER) not in sys.path:
        sys.path.insert(0, str(OBSERVER))
    mods = _shadow_modules(src, output_text)
    with _isolated_modules(mods):
        import importlib

        def resolver(qualname: str) -> Any:
            module_name, _, attr = qualname.rpartition(".")
            return getattr(importlib.import_module(module_name), attr)
        try:
            get_cls = _get_scheduler_cls_function(src, resolver)
        except Exception as exc:
            report.line(False, "behaviour", SCHED_CFG, "SchedulerConfig.get_scheduler_cls", f"cannot execute: {exc}")
            return
        real = {"Scheduler": mods["vllm.v1.core.sched.scheduler"].Scheduler,
                "AsyncScheduler": mods["vllm.v1.core.sched.async_scheduler"].AsyncScheduler}
        for name, ancestors in SCHEDULER_CLASSES.items():
            cfg = types.SimpleNamespace(scheduler_cls=f"traceloom_vllm_scheduler.{name}",
                                        async_scheduling="Async" in name)
            try:
                cls = get_cls(cfg)
            except Exception as exc:
                report.line(False, "behaviour", SCHED_CFG, f"get_scheduler_cls -> {name}", f"{type(exc).__name__}: {exc}")
                continue
            mro = cls.__mro__
            ok = (cls.__name__ == name and all(real[a] in mro for a in ancestors)
                  and ("Async" in name) == (real["AsyncScheduler"] in mro)
                  and mro.index(real[ancestors[0]]) < mro.index(real["Scheduler"]) + 1
                  and cls.schedule.__qualname__ == "_RecordingScheduler.schedule"
                  and cls._traceloom_scheduler_injection is True)
            report.line(ok, "behaviour", SCHED_CFG, f"get_scheduler_cls -> {name}",
                        " > ".join(c.__name__ for c in mro[:-1]))
        linked = get_cls(types.SimpleNamespace(scheduler_cls="traceloom_vllm_scheduler.LinkedTracingScheduler",
                                               async_scheduling=False))
        try:
            linked()
            refused = False
        except RuntimeError as exc:
            refused = "transport-worker.patch" in str(exc)
        report.line(refused, "behaviour", OUTPUT, "Linked* refuses an unpatched SchedulerOutput",
                    "RuntimeError at construction")

    out_mod = exec_output_module(output_text, "_traceloom_contract_output")
    try:
        output = build_scheduler_output(out_mod)
        before, after, files, _ = record_once(output, transport_identity=False)
        records = _validate_lines(files[0][1]) if len(files) == 1 else []
        ok = (before == after and len(files) == 1
              and [r["type"] for r in records] == ["session", "step", "summary"]
              and records[1]["total_scheduled_tokens"] == 4
              and [r["scheduled_token_start"] for r in records[1]["requests"]] == [0, 7])
        report.line(ok, "behaviour", OUTPUT, "record_step(real SchedulerOutput)",
                    f"pickle unchanged={before == after}, files={len(files)}, records={[r['type'] for r in records]}")
    except Exception as exc:
        report.line(False, "behaviour", OUTPUT, "record_step(real SchedulerOutput)", f"{type(exc).__name__}: {exc}")
    finally:
        sys.modules.pop("_traceloom_contract_output", None)


# ------------------------------------------------------------------------------------------
# Linked check

def _decorators(fn: ast.FunctionDef) -> list[str]:
    return [d.id if isinstance(d, ast.Name) else ast.unparse(d) for d in fn.decorator_list]


def _count_calls(tree: ast.Module, name: str) -> int:
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call)
               and (isinstance(n.func, ast.Name) and n.func.id == name
                    or isinstance(n.func, ast.Attribute) and n.func.attr == name))


def check_linked(src: VllmSource, report: Report, patch: pathlib.Path) -> None:
    files = {rel: src.read(rel) for rel in (OUTPUT, CORE, WORKER)}
    if any(v is None for v in files.values()):
        report.line(False, "linked", "transport-worker.patch", "source files", "missing in this vLLM")
        return
    if shutil.which("git") is None:
        report.line(None, "linked", "transport-worker.patch", "git apply", "git not installed")
        return
    with tempfile.TemporaryDirectory(prefix="traceloom-patch-") as tmp:
        root = pathlib.Path(tmp)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, "utf-8")
        proc = subprocess.run(["git", "apply", "-p1", "--whitespace=nowarn", str(patch)], cwd=root,
                              capture_output=True, text=True)
        report.line(proc.returncode == 0, "linked", "transport-worker.patch", "git apply",
                    proc.stderr.strip().replace("\n", "; ")[:300])
        if proc.returncode != 0:
            return
        patched = {rel: (root / rel).read_text("utf-8") for rel in files}

    out_tree = ast.parse(patched[OUTPUT])
    has_field = "traceloom_step" in _fields(_classes(out_tree)["SchedulerOutput"])
    report.line(has_field, "linked", OUTPUT, "SchedulerOutput.traceloom_step", "real dataclass field")
    n_core = _count_calls(ast.parse(patched[CORE]), "record_step")
    report.line(n_core == 0, "linked", CORE, "record_step calls == 0", f"found {n_core} (legacy patch: 2)")
    wrapper = _classes(ast.parse(patched[WORKER])).get("WorkerWrapperBase")
    methods = _methods(wrapper) if wrapper else {}
    for method, deco in (("execute_model", "trace_worker_execute"), ("sample_tokens", "trace_worker_sample")):
        fn = methods.get(method)
        report.line(fn is not None and deco in _decorators(fn), "linked", WORKER,
                    f"WorkerWrapperBase.{method} @{deco}")
    if not has_field:
        return

    mod = exec_output_module(patched[OUTPUT], "_traceloom_contract_patched_output")
    try:
        output = build_scheduler_output(mod)
        _, _, written, state = record_once(output, transport_identity=True)
        identity = output.traceloom_step
        step = _validate_lines(written[0][1])[1] if len(written) == 1 else {}
        ok = (isinstance(identity, dict) and identity.get("run_id") == "contract-check"
              and identity.get("step_id") == step.get("step_id"))
        report.line(ok, "linked", OUTPUT, "record_step(transport) sets traceloom_step", str(identity))
        clone = pickle.loads(pickle.dumps(output))
        report.line(clone.traceloom_step == identity, "linked", OUTPUT, "traceloom_step survives pickle")
        try:
            import msgspec
        except ImportError:
            report.line(None, "linked", OUTPUT, "traceloom_step survives msgspec.msgpack", "msgspec not installed")
        else:
            decoded = msgspec.msgpack.decode(msgspec.msgpack.encode(output))
            report.line(decoded.get("traceloom_step") == identity, "linked", OUTPUT,
                        "traceloom_step survives msgspec.msgpack")
    except Exception as exc:
        report.line(False, "linked", OUTPUT, "patched SchedulerOutput", f"{type(exc).__name__}: {exc}")
    finally:
        sys.modules.pop("_traceloom_contract_patched_output", None)


# ------------------------------------------------------------------------------------------

def download_wheel(dest: str, spec: str = "vllm") -> pathlib.Path:
    subprocess.run([sys.executable, "-m", "pip", "download", spec, "--no-deps", "--only-binary=:all:",
                    "--retries", "1", "--timeout", "15", "-q", "-d", dest], check=True)
    wheels = sorted(glob.glob(os.path.join(dest, "vllm-*.whl")))
    if not wheels:
        raise FileNotFoundError(f"pip download left no vllm wheel in {dest}")
    return pathlib.Path(wheels[-1])


def run(location: str | os.PathLike, patch: pathlib.Path = DEFAULT_PATCH,
        out: io.TextIOBase | None = None) -> int:
    """Check one wheel or source tree; returns the number of failed checks."""
    out = out or sys.stdout
    src = VllmSource(location)
    out.write(f"vLLM {src.version()} from {location}\n")
    report = Report(out)
    check_table(src, report)
    check_scheduler(src, report)
    check_linked(src, report, patch)
    out.write(f"{'FAILED' if report.failures else 'PASSED'}: {report.failures} missing item(s)\n")
    return report.failures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--wheel", help="a vllm-*.whl file")
    group.add_argument("--source", help="a vLLM checkout or the site-packages directory holding vllm/")
    ap.add_argument("--requirement", default="vllm",
                    help="what to pip download without --wheel/--source (default: vllm, e.g. vllm==0.34.0)")
    ap.add_argument("--download-dir", help="keep the downloaded wheel here (default: a temporary directory)")
    ap.add_argument("--patch", default=str(DEFAULT_PATCH), help="transport-worker.patch to check")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="traceloom-vllm-wheel-") as tmp:
        location = args.wheel or args.source
        if location is None:
            try:
                location = download_wheel(args.download_dir or tmp, args.requirement)
            except (subprocess.CalledProcessError, FileNotFoundError) as exc:
                print(f"check_vllm_contract: cannot download {args.requirement}: {exc}", file=sys.stderr)
                return 2
        try:
            failures = run(location, pathlib.Path(args.patch))
        except (FileNotFoundError, zipfile.BadZipFile) as exc:
            print(f"check_vllm_contract: {exc}", file=sys.stderr)
            return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

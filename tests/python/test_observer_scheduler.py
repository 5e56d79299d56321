"""The observer's scheduler classes (observer/traceloom_vllm_scheduler.py) and the linked-mode
worker side, driven against observer/tools/fake_vllm.py (vLLM itself cannot run here; the fake's
dataclasses are compared with the real vLLM source in test_observer_contract.py).

The expected step values below are worked out by hand from the scheduling scenario (FCFS, token
budget 8, blocks of 4 tokens, 16 blocks), not taken from the observer's output."""
import hashlib
import logging
import pickle
import sys
import types
import warnings

import pytest

from conftest import ROOT
from test_observer import only_file, read_context

sys.path.insert(0, str(ROOT / "observer"))
sys.path.insert(0, str(ROOT / "observer" / "tools"))
sys.path.insert(0, str(ROOT / "python"))
import fake_vllm  # noqa: E402
import traceloom_vllm_context as ctx  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_observer(monkeypatch):
    monkeypatch.setattr(ctx, "_warned", False)
    monkeypatch.delenv("TRACELOOM_CONTEXT_DIR", raising=False)
    monkeypatch.delenv("TRACELOOM_RUN_ID", raising=False)
    yield
    ctx.close_all(timeout=30)


@pytest.fixture
def recording(tmp_path, monkeypatch):
    directory = tmp_path / "ctx"
    monkeypatch.setenv("TRACELOOM_CONTEXT_DIR", str(directory))
    monkeypatch.setenv("TRACELOOM_RUN_ID", "sched-run")
    return directory


def scheduler_module(monkeypatch, transport_field=False):
    fake_vllm.install(monkeypatch, transport_field=transport_field)
    import traceloom_vllm_scheduler
    return traceloom_vllm_scheduler


def make(cls, async_scheduling=False):
    return cls(fake_vllm.make_vllm_config(async_scheduling=async_scheduling),
               types.SimpleNamespace(num_blocks=16), None, block_size=4)


def drive(sched):
    """The scenario: A (10 prompt tokens, 3 outputs) and B (4 prompt tokens, 2 outputs)."""
    sched.add_request(fake_vllm.Request("req-A", list(range(10)), max_tokens=3))
    sched.add_request(fake_vllm.Request("req-B", list(range(4)), max_tokens=2))
    outputs = []
    for _ in range(5):
        out = sched.schedule()
        outputs.append(out)
        sched.update_from_output(out, None)
    return outputs


def req(pid, tokens, start, kind, after, prompt):
    return {"request_id": pid, "scheduled_tokens": tokens, "scheduled_token_start": start,
            "scheduled_token_start_basis": "scheduler_output_num_computed_tokens", "payload_kind": kind,
            "computed_tokens_after_schedule": after, "prompt_tokens": prompt}


def expected_steps(p):
    A, B = p("req-A"), p("req-B")
    return [
        # budget 8: A's first chunk; B waits (no budget left)
        dict(requests=[req(A, 8, 0, "new", 8, 10)], total=8, free=14, finished=[]),
        # A's last 2 prompt tokens (cached payload from 8), then B's whole prompt (new, from 0)
        dict(requests=[req(A, 2, 8, "cached", 10, 10), req(B, 4, 0, "new", 4, 4)], total=6, free=12,
             finished=[]),
        # one decode token each; B reaches 5 tokens = 2 blocks
        dict(requests=[req(A, 1, 10, "cached", 11, 10), req(B, 1, 4, "cached", 5, 4)], total=2, free=11,
             finished=[]),
        # B finished after its 2nd output token and freed 2 blocks
        dict(requests=[req(A, 1, 11, "cached", 12, 10)], total=1, free=13, finished=[B]),
        # nothing left to schedule: an empty decision that reports A finished, all blocks free
        dict(requests=[], total=0, free=16, finished=[A]),
    ]


@pytest.mark.parametrize("name,async_scheduling", [("TracingScheduler", False), ("TracingAsyncScheduler", True)])
def test_observer_scheduler_records_each_decision(recording, monkeypatch, name, async_scheduling):
    mod = scheduler_module(monkeypatch)
    cls = getattr(mod, name)
    base = fake_vllm.AsyncScheduler if async_scheduling else fake_vllm.Scheduler
    assert issubclass(cls, base) and (async_scheduling == issubclass(cls, fake_vllm.AsyncScheduler))
    assert cls._traceloom_scheduler_injection is True and cls._traceloom_transport_identity is False

    returned, produced = [], []
    real_schedule = base.schedule

    def counting_schedule(self, *args, **kwargs):
        out = real_schedule(self, *args, **kwargs)
        produced.append(out)
        return out

    monkeypatch.setattr(base, "schedule", counting_schedule)
    sched = make(cls, async_scheduling)
    returned = drive(sched)
    assert len(produced) == 5 and all(a is b for a, b in zip(returned, produced))   # once, same object
    if async_scheduling:
        assert sched.post_processed_steps == 5
    ctx.close_all(timeout=30)

    records = read_context(only_file(recording))
    salt = sched.__dict__["_traceloom_context_state"].salt

    def p(raw):
        return hashlib.sha256(salt + raw.encode()).hexdigest()

    steps = [r for r in records if r["type"] == "step"]
    assert records[0]["metadata"]["association_contract"] == "scheduler_only"
    assert records[0]["metadata"]["scheduler_config"]["async_scheduling"] is async_scheduling
    assert records[0]["metadata"]["cache_config"] == {"enable_prefix_caching": True, "block_size": 4}
    assert [s["ordinal"] for s in steps] == [0, 1, 2, 3, 4]
    for got, want in zip(steps, expected_steps(p)):
        assert got["requests"] == want["requests"]
        assert got["total_scheduled_tokens"] == want["total"]
        assert got["cache"] == {"observation_phase": "after_schedule", "free_blocks": want["free"],
                                "pool_blocks": 16}
        assert got["finished_request_ids"] == want["finished"]
        # vLLM 0.34 (the fake's shape) no longer exposes resumed ids: null, not []
        assert got["resumed_request_ids"] is None
        assert got["preempted_request_ids"] is None      # not exposed (v1 model runner)
    assert records[-1] == {**records[-1], "type": "summary", "written_records": 5, "dropped_records": 0}
    assert all(getattr(o, "traceloom_step", None) is None for o in returned)


def test_observer_scheduler_business_exception_propagates_unrecorded(recording, monkeypatch):
    mod = scheduler_module(monkeypatch)

    def failing(self, *args, **kwargs):
        raise ValueError("out of blocks")

    monkeypatch.setattr(fake_vllm.Scheduler, "schedule", failing)
    sched = make(mod.TracingScheduler)
    with pytest.raises(ValueError, match="out of blocks"):
        sched.schedule()
    assert "_traceloom_context_state" not in sched.__dict__
    assert not recording.exists()


def test_observer_scheduler_disabled_is_plain_vllm(tmp_path, monkeypatch):
    mod = scheduler_module(monkeypatch)
    monkeypatch.chdir(tmp_path)
    sched = make(mod.TracingAsyncScheduler, True)
    outs = drive(sched)
    assert [o.total_num_scheduled_tokens for o in outs] == [8, 6, 2, 1, 0]
    assert "_traceloom_context_state" not in sched.__dict__ and list(tmp_path.iterdir()) == []


def test_observer_manual_record_step_is_noop_on_injected_scheduler(recording, monkeypatch):
    mod = scheduler_module(monkeypatch)
    sched = make(mod.TracingScheduler)
    sched.add_request(fake_vllm.Request("r", [1, 2], max_tokens=1))
    out = sched.schedule()
    ctx.record_step(sched, out)                          # e.g. the legacy EngineCore patch
    ctx.close_all(timeout=30)
    records = read_context(only_file(recording))
    assert [r["type"] for r in records] == ["session", "step", "summary"]


# ---- execution-linked mode ---------------------------------------------------------------------

def test_observer_linked_refuses_unpatched_vllm(monkeypatch):
    mod = scheduler_module(monkeypatch, transport_field=False)
    for cls in (mod.LinkedTracingScheduler, mod.LinkedTracingAsyncScheduler):
        with pytest.raises(RuntimeError) as info:
            make(cls)
        assert str(info.value) == ("Execution-linked TraceLoom requires transport-worker.patch; use "
                                   "TracingScheduler/TracingAsyncScheduler for patch-free capture")


def test_observer_transport_refuses_dynamic_attribute(recording, monkeypatch):
    scheduler_module(monkeypatch, transport_field=False)
    out = sys.modules["vllm.v1.core.sched.output"].SchedulerOutput.make_empty()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ctx.record_step(types.SimpleNamespace(requests={}), out, transport_identity=True)
    assert not hasattr(out, "traceloom_step") and len(caught) == 1
    assert not recording.exists()


class FakeRecordFunction:
    """torch.profiler.record_function stand-in: remembers the marker names it opened."""
    opened = []

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        FakeRecordFunction.opened.append(self.name)
        return self

    def __exit__(self, *exc):
        return False


def install_fake_torch(monkeypatch):
    FakeRecordFunction.opened = []
    torch = types.ModuleType("torch")
    profiler = types.ModuleType("torch.profiler")
    profiler.record_function = FakeRecordFunction
    torch.profiler = profiler
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.profiler", profiler)


class WorkerWrapper:
    """vLLM's WorkerWrapperBase after transport-worker.patch (the decorated methods)."""

    def __init__(self, rpc_rank, global_rank, fail=False):
        self.rpc_rank, self.global_rank, self.fail = rpc_rank, global_rank, fail
        self.calls = []

    @ctx.trace_worker_execute
    def execute_model(self, scheduler_output):
        self.calls.append(("execute", scheduler_output.traceloom_step))
        if self.fail:
            raise RuntimeError("device lost")
        return None if scheduler_output.total_num_scheduled_tokens > 0 else "empty"

    @ctx.trace_worker_sample
    def sample_tokens(self, grammar_output):
        self.calls.append(("sample", grammar_output))
        return "sampled"


def test_observer_linked_end_to_end(recording, monkeypatch):
    """Scheduler -> pickled SchedulerOutput -> worker: every execution record names a recorded
    step, and its marker is the one opened around the execution."""
    mod = scheduler_module(monkeypatch, transport_field=True)
    install_fake_torch(monkeypatch)
    sched = make(mod.LinkedTracingAsyncScheduler, True)
    assert sched._traceloom_transport_identity is True
    worker = WorkerWrapper(rpc_rank=0, global_rank=3)
    outs = []
    sched.add_request(fake_vllm.Request("r1", [1, 2, 3], max_tokens=2))
    for _ in range(3):
        out = sched.schedule()
        outs.append(out)
        shipped = pickle.loads(pickle.dumps(out))          # the executor's transport
        if worker.execute_model(shipped) is None:
            worker.sample_tokens("grammar")
        sched.update_from_output(out, None)
    ctx.close_all(timeout=30)

    files = sorted(recording.glob("*.jsonl"))
    by_role = {}
    for f in files:
        recs = read_context(f)
        by_role[recs[0]["metadata"]["role"]] = recs
    assert set(by_role) == {"scheduler", "worker"}
    steps = [r for r in by_role["scheduler"] if r["type"] == "step"]
    execs = [r for r in by_role["worker"] if r["type"] == "execution"]
    assert by_role["scheduler"][0]["metadata"]["association_contract"] == "scheduler_output_field"
    assert by_role["worker"][0]["metadata"] == {"runtime": "vllm", "role": "worker"}
    assert [o.traceloom_step for o in outs] == [{"run_id": "sched-run", "step_id": s["step_id"]} for s in steps]
    # 3 prompt tokens then 1 decode token, then an empty decision (r1 finished)
    assert [s["total_scheduled_tokens"] for s in steps] == [3, 1, 0]
    # each non-empty step: execute (returned None) + sample; the empty step: execute only
    assert [(e["phase"], e["step_id"]) for e in execs] == [
        ("execute_model", steps[0]["step_id"]), ("sample_tokens", steps[0]["step_id"]),
        ("execute_model", steps[1]["step_id"]), ("sample_tokens", steps[1]["step_id"]),
        ("execute_model", steps[2]["step_id"])]
    assert all(e["worker_rank"] == 3 and e["status"] == "returned" and e["marker_state"] == "emitted"
               for e in execs)
    assert FakeRecordFunction.opened == [e["marker"] for e in execs]
    assert len({e["execution_id"] for e in execs}) == 5
    assert worker.calls[1] == ("sample", "grammar")


def test_observer_execution_scope_raised_and_unavailable_marker(recording, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)          # no torch: the marker is unavailable
    out = types.SimpleNamespace(traceloom_step={"run_id": "sched-run", "step_id": "step-1"},
                                total_num_scheduled_tokens=4)
    with pytest.raises(RuntimeError, match="device lost"):
        WorkerWrapper(rpc_rank=1, global_rank=None, fail=True).execute_model(out)
    with pytest.raises(KeyboardInterrupt):
        with ctx.execution_scope(out, worker_rank=None, marker_factory=FakeRecordFunction):
            raise KeyboardInterrupt
    ctx.close_all(timeout=30)
    execs = [r for r in read_context(only_file(recording)) if r["type"] == "execution"]
    assert [(e["status"], e["marker_state"], e["worker_rank"]) for e in execs] == [
        ("raised", "unavailable", 1), ("raised", "emitted", None)]
    assert all(e["step_id"] == "step-1" for e in execs)


def test_observer_second_unsampled_execute_refuses_to_guess(recording, monkeypatch, caplog):
    install_fake_torch(monkeypatch)
    worker = WorkerWrapper(rpc_rank=0, global_rank=0)

    def out(step):
        return types.SimpleNamespace(traceloom_step={"run_id": "sched-run", "step_id": step},
                                     total_num_scheduled_tokens=1)

    with caplog.at_level(logging.WARNING, logger="traceloom.context"):
        worker.execute_model(out("s1"))        # returns None: s1's sample is outstanding
        worker.execute_model(out("s2"))        # again, before any sample: ambiguous
        worker.sample_tokens(None)             # belongs to s1 or s2: not recorded
        worker.execute_model(out("s3"))
        worker.sample_tokens(None)             # unambiguous again
    assert any("before sample_tokens" in r.getMessage() for r in caplog.records)
    ctx.close_all(timeout=30)
    execs = [(e["phase"], e["step_id"]) for e in read_context(only_file(recording)) if e["type"] == "execution"]
    assert execs == [("execute_model", "s1"), ("execute_model", "s2"), ("execute_model", "s3"),
                     ("sample_tokens", "s3")]


@pytest.mark.parametrize("identity", [
    {"run_id": "other-run", "step_id": "s1"},
    {"run_id": "sched-run", "step_id": ""},
    {"run_id": "sched-run", "step_id": "x" * 129},
    {"run_id": "sched-run", "step_id": 7},
    "sched-run/s1",
])
def test_observer_worker_rejects_foreign_identity(recording, monkeypatch, identity):
    out = types.SimpleNamespace(traceloom_step=identity, total_num_scheduled_tokens=1)
    ran = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ctx.execution_scope(out, 0, marker_factory=FakeRecordFunction):
            ran.append(True)
    assert ran == [True] and len(caught) == 1
    assert not recording.exists()


def test_observer_worker_without_identity_records_nothing(recording, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    worker = WorkerWrapper(0, 0)
    out = types.SimpleNamespace(traceloom_step=None, total_num_scheduled_tokens=2)
    assert worker.execute_model(out) is None and worker.sample_tokens(None) == "sampled"
    assert not recording.exists()


def test_observer_legacy_trace_execution(recording, monkeypatch):
    install_fake_torch(monkeypatch)

    class LegacyWorker:
        rank = 2

        @ctx.trace_execution
        def execute_model(self, scheduler_output):
            return "ok"

    w = LegacyWorker()
    w.__dict__["rank"] = 2
    assert w.execute_model(types.SimpleNamespace(traceloom_step={"run_id": "sched-run", "step_id": "s9"})) == "ok"
    ctx.close_all(timeout=30)
    execs = [r for r in read_context(only_file(recording)) if r["type"] == "execution"]
    assert [(e["phase"], e["step_id"], e["worker_rank"]) for e in execs] == [("execute_model", "s9", 2)]


# ---- packaging -------------------------------------------------------------------------------------

def test_observer_module_without_vllm_says_what_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    monkeypatch.delitem(sys.modules, "traceloom_vllm_scheduler", raising=False)
    with pytest.raises(ImportError, match="needs vLLM V1"):
        import traceloom_vllm_scheduler  # noqa: F401
    import traceloom.vllm
    monkeypatch.delitem(traceloom.vllm.__dict__, "TracingScheduler", raising=False)
    with pytest.raises(ImportError, match="needs vLLM V1"):
        traceloom.vllm.TracingScheduler
    with pytest.raises(AttributeError):
        traceloom.vllm.NoSuchScheduler


def test_observer_traceloom_vllm_reexports(monkeypatch):
    mod = scheduler_module(monkeypatch)
    import traceloom.vllm
    for name in ("TracingScheduler", "TracingAsyncScheduler", "LinkedTracingScheduler",
                 "LinkedTracingAsyncScheduler"):
        monkeypatch.delitem(traceloom.vllm.__dict__, name, raising=False)
        assert getattr(traceloom.vllm, name) is getattr(mod, name)
        monkeypatch.delitem(traceloom.vllm.__dict__, name, raising=False)
    assert traceloom.vllm.ContextWriter is ctx.ContextWriter
    assert "TracingAsyncScheduler" in dir(traceloom.vllm)


def test_observer_sdist_is_self_contained(tmp_path):
    """`traceloom-vllm-context` 0.1.0: both modules, the patch, the tools and the README, and
    no hard dependency (vLLM and torch are never required to install it)."""
    import shutil
    import subprocess
    import tarfile
    # `pip install ./observer` (the README's line) may have left observer/build/ and
    # observer/*.egg-info/ behind: they are ignored here and by git, and must not matter.
    checkout_before = sorted(p.name for p in (ROOT / "observer").iterdir())
    src = tmp_path / "observer"
    shutil.copytree(ROOT / "observer", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    proc = subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                           "print(build_meta.build_sdist(sys.argv[1]))", str(tmp_path / "dist")],
                          cwd=src, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    sdist = tmp_path / "dist" / proc.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        pkg_info = tar.extractfile("traceloom-vllm-context-0.1.0/PKG-INFO").read().decode()
    assert {"traceloom_vllm_context.py", "traceloom_vllm_scheduler.py", "README.md",
            "patches/transport-worker.patch", "tools/check_vllm_contract.py", "tools/fake_vllm.py"} <= names
    assert "Name: traceloom-vllm-context\n" in pkg_info and "Version: 0.1.0\n" in pkg_info
    assert "Requires-Python: >=3.10" in pkg_info
    assert not [line for line in pkg_info.splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line]
    # Building the sdist from a copy wrote nothing into the checkout.
    assert sorted(p.name for p in (ROOT / "observer").iterdir()) == checkout_before

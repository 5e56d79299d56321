"""The observer's vLLM source contract (observer/tools/check_vllm_contract.py) against the real
vLLM source, read from a wheel as a zip (vLLM is never installed or imported):

  * the wheel named by TRACELOOM_VLLM_WHEEL, else vLLM VERIFIED_VLLM (the release the observer
    and its fake are checked against) already in /tmp/vllm-wheel, else
    `pip download vllm==VERIFIED_VLLM --no-deps -d /tmp/vllm-wheel` (skipped when there is no
    network): a pinned release, so that a new vLLM on PyPI cannot change what the tests check
    (check a new release with observer/tools/check_vllm_contract.py, then move the pin);
  * the check passes on it, and reports (exit 1) an item removed from a copy of the source;
  * the test fake (observer/tools/fake_vllm.py) has the real dataclass fields, in order, and
    the patched SchedulerOutput's fields equal those of the real output.py after
    transport-worker.patch."""
import ast
import dataclasses
import glob
import io
import os
import pathlib
import re
import subprocess
import sys
import types
import zipfile

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "observer"))
sys.path.insert(0, str(ROOT / "observer" / "tools"))
import check_vllm_contract as contract  # noqa: E402
import fake_vllm  # noqa: E402

WHEEL_CACHE = pathlib.Path("/tmp/vllm-wheel")
VERIFIED_VLLM = "0.34.0"


@pytest.fixture(scope="module")
def wheel():
    given = os.environ.get("TRACELOOM_VLLM_WHEEL")
    if given:
        assert pathlib.Path(given).is_file(), f"TRACELOOM_VLLM_WHEEL={given} is not a file"
        return pathlib.Path(given)
    cached = sorted(glob.glob(str(WHEEL_CACHE / f"vllm-{VERIFIED_VLLM}-*.whl")))
    if cached:
        return pathlib.Path(cached[-1])
    try:
        WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
        contract.download_wheel(str(WHEEL_CACHE), f"vllm=={VERIFIED_VLLM}")
        return pathlib.Path(sorted(glob.glob(str(WHEEL_CACHE / f"vllm-{VERIFIED_VLLM}-*.whl")))[-1])
    except (subprocess.CalledProcessError, FileNotFoundError, OSError) as exc:
        pytest.skip(f"no vLLM wheel: set TRACELOOM_VLLM_WHEEL or allow `pip download vllm` ({exc})")


def test_observer_contract_holds_for_real_vllm(wheel):
    out = io.StringIO()
    failures = contract.run(wheel, out=out)
    report = out.getvalue()
    print(report)
    assert failures == 0, report
    assert report.startswith("vLLM ") and "PASSED: 0 missing item(s)" in report
    # every table entry was checked, plus the behavioural and linked checks
    assert sum(line.startswith(("OK", "MISS")) for line in report.splitlines()) >= len(contract.CONTRACT) + 10
    for name in ("TracingScheduler", "TracingAsyncScheduler", "LinkedTracingScheduler", "LinkedTracingAsyncScheduler"):
        assert f"OK   behaviour vllm/config/scheduler.py               get_scheduler_cls -> {name}" in report
    assert "OK   linked    transport-worker.patch" in report


def extract(wheel, dest):
    wanted = {rel for _, rel, _, _ in contract.CONTRACT} | {contract.CORE, "vllm/__init__.py", "vllm/_version.py"}
    with zipfile.ZipFile(wheel) as z:
        for rel in wanted:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(rel))
    return dest


def test_observer_contract_reports_missing_items(wheel, tmp_path):
    tree = extract(wheel, tmp_path / "src")
    out_py = tree / contract.OUTPUT
    text = out_py.read_text()
    # CachedRequestData loses num_computed_tokens; the CLI option is renamed
    text = text.replace("    num_computed_tokens: list[int]\n", "", 1)
    out_py.write_text(text)
    args = tree / contract.ARGS
    args.write_text(args.read_text().replace('"--scheduler-cls"', '"--scheduler-class"'))
    proc = subprocess.run([sys.executable, str(ROOT / "observer" / "tools" / "check_vllm_contract.py"),
                           "--source", str(tree)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    miss = [line for line in proc.stdout.splitlines() if line.startswith("MISS")]
    assert any("CachedRequestData.num_computed_tokens" in line for line in miss), proc.stdout
    assert any("--scheduler-cls" in line for line in miss), proc.stdout
    assert "FAILED" in proc.stdout


def test_observer_contract_optional_field_either_way(wheel, tmp_path):
    """CachedRequestData.resumed_req_ids (vLLM <= 0.33; 0.34 dropped it) is reported as OK where
    the source has it and as ABSENT, not a failure, where it does not; a contract field removed
    is still a failure next to it."""
    tree = extract(wheel, tmp_path / "src")
    out_py = tree / contract.OUTPUT
    text = out_py.read_text()
    marker = "    num_output_tokens: list[int]\n"        # CachedRequestData's last field
    assert marker in text
    base = re.sub(r"\n    resumed_req_ids: [^\n]*", "", text, count=1)   # as vLLM 0.34 has it
    for with_field in (False, True):
        patched = (base.replace(marker, marker + "    resumed_req_ids: frozenset = frozenset()\n", 1)
                   if with_field else base)
        out_py.write_text(patched)
        out = io.StringIO()
        failures = contract.run(tree, out=out)
        line = [ln for ln in out.getvalue().splitlines() if "CachedRequestData.resumed_req_ids" in ln]
        assert len(line) == 1 and line[0].startswith("OK" if with_field else "ABSENT"), out.getvalue()
        assert failures == 0, out.getvalue()
    out_py.write_text(text.replace("    num_output_tokens: list[int]\n", "", 1)
                      .replace("    num_computed_tokens: list[int]\n", "", 1))
    out = io.StringIO()
    assert contract.run(tree, out=out) >= 1 and "MISS field     vllm/v1/core/sched/output.py" \
        "           CachedRequestData.num_computed_tokens" in out.getvalue(), out.getvalue()


def test_observer_contract_cli_usage_errors(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "observer" / "tools" / "check_vllm_contract.py"),
                           "--source", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no vllm/__init__.py" in proc.stderr


def real_fields(text, cls_name):
    cls = {n.name: n for n in ast.parse(text).body if isinstance(n, ast.ClassDef)}[cls_name]
    return contract._fields(cls)


def test_observer_fake_matches_real_dataclasses(wheel, tmp_path, monkeypatch):
    with zipfile.ZipFile(wheel) as z:
        text = z.read(contract.OUTPUT).decode()
    for transport in (False, True):
        if transport:
            tree = extract(wheel, tmp_path / "patched")
            subprocess.run(["git", "apply", "-p1", str(contract.DEFAULT_PATCH)], cwd=tree, check=True)
            text = (tree / contract.OUTPUT).read_text()
        mods = fake_vllm.install(monkeypatch, transport_field=transport)
        out = mods["vllm.v1.core.sched.output"]
        for name in ("NewRequestData", "CachedRequestData", "SchedulerOutput"):
            fake = [f.name for f in dataclasses.fields(getattr(out, name))]
            assert fake == real_fields(text, name), name


def test_observer_fake_provides_contract_members(monkeypatch):
    """Every Scheduler/AsyncScheduler/BlockPool/KVCacheManager/Request member of the contract
    exists on the fake's instances, so the scheduler tests exercise the same surface."""
    fake_vllm.install(monkeypatch)
    sched = fake_vllm.AsyncScheduler(fake_vllm.make_vllm_config(), types.SimpleNamespace(num_blocks=8), None, 4)
    objects = {"Scheduler": sched, "AsyncScheduler": sched, "KVCacheManager": sched.kv_cache_manager,
               "BlockPool": sched.kv_cache_manager.block_pool,
               "Request": fake_vllm.Request("r", [1], max_tokens=1)}
    checked = 0
    for kind, _, name, _ in contract.CONTRACT:
        cls_name, _, member = name.partition(".")
        member = member.split("(")[0]
        if cls_name in objects and kind in ("method", "attribute"):
            assert hasattr(objects[cls_name], member), name
            checked += 1
    assert checked == 15

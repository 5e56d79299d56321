"""`pip install ./python` into a fresh venv gives a self-contained package: a platform wheel
carrying the extension, the CLI, the rules and the configs, usable with nothing from the
checkout on the path.

The wheel is built with pip's build isolation (setuptools from the configured index; the
venv's own setuptools 65 has no bdist_wheel without the `wheel` package). TRACELOOM_BUILD is
passed through, so setup.py's `make` finds this test run's build folder up to date."""
import json
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import BUILD, ROOT


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300, **kw)
    assert r.returncode == 0, f"{cmd}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    base = tmp_path_factory.mktemp("venv")
    env_dir = base / "venv"
    run([sys.executable, "-m", "venv", env_dir])
    wheels = base / "wheels"
    env = {**os.environ, "TRACELOOM_BUILD": str(BUILD.resolve())}
    env.pop("TRACELOOM_NATIVE_DIR", None)
    env.pop("PYTHONPATH", None)
    run([env_dir / "bin" / "pip", "wheel", "-q", "--no-deps", "-w", wheels, ROOT / "python"], env=env)
    (wheel,) = wheels.glob("traceloom-*.whl")
    run([env_dir / "bin" / "pip", "install", "-q", "--no-deps", wheel], env=env)
    return env_dir, wheel


def clean_env():
    env = {k: v for k, v in os.environ.items() if k not in ("TRACELOOM_NATIVE_DIR", "PYTHONPATH")}
    return env


def test_wheel_is_platform_specific_and_self_contained(venv):
    _, wheel = venv
    assert wheel.name.startswith("traceloom-0.1.0-py3-none-linux_")
    names = set(zipfile.ZipFile(wheel).namelist())
    for member in ("traceloom/__init__.py", "traceloom/py.typed", "traceloom/_native/traceloom.so",
                   "traceloom/_native/bin/traceloom", "traceloom/rules/classification.yaml",
                   "traceloom/rules/symbol_normalization.yaml",
                   "traceloom/rules/event_reconciliation.yaml",
                   "traceloom/configs/scheduler-step.yaml", "traceloom/configs/deepseekv4.yaml",
                   "traceloom/configs/qwen35-serving.yaml"):
        assert member in names
    wheel_meta = zipfile.ZipFile(wheel).read("traceloom-0.1.0.dist-info/WHEEL").decode()
    assert "Root-Is-Purelib: false" in wheel_meta
    # apsw is a dependency: loop_tree() and load() work on every CPython, also one whose
    # sqlite3 module cannot load extensions (pyenv's default build).
    metadata = zipfile.ZipFile(wheel).read("traceloom-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: apsw\n" in metadata


def test_installed_package_analyses_and_queries(venv, tmp_path, fixtures):
    env_dir, _ = venv
    code = """
import json, sys, traceloom
db = traceloom.analyze(sys.argv[1], output=sys.argv[2], rules_config="qwen35-serving")
rows = db.query("SELECT db_idx, tree_id, position_id, occurrence_idx FROM traceloom_v_position_occurrence "
                "ORDER BY db_idx, tree_id, position_id, occurrence_idx", limit=None, as_tuples=True)
print(json.dumps({"file": traceloom.__file__, "so": traceloom.loadable_path(),
                  "config": str(traceloom.bundled_rules("qwen35-serving")),
                  "rows": rows, "tables": db.tables()}))
"""
    out = tmp_path / "analysis.db"
    # Run from tmp_path with a clean environment: nothing from the checkout is importable.
    r = run([env_dir / "bin" / "python", "-c", code, fixtures / "exact_hlt" / "mono", out],
            cwd=tmp_path, env=clean_env())
    got = json.loads(r.stdout)
    site = str(env_dir)
    assert got["file"].startswith(site) and got["so"].startswith(site)
    assert got["so"].endswith("/traceloom/_native/traceloom")
    assert got["config"].startswith(site)
    assert "traceloom_v_position_occurrence" in got["tables"]
    # The same rows straight from the file, without the package.
    import sqlite3
    with sqlite3.connect(out) as direct:
        expected = direct.execute(
            "SELECT db_idx, tree_id, position_id, occurrence_idx FROM traceloom_v_position_occurrence "
            "ORDER BY db_idx, tree_id, position_id, occurrence_idx").fetchall()
        config = json.loads(direct.execute(
            "SELECT value FROM traceloom_metadata WHERE key = 'analysis_options'").fetchone()[0])
    assert expected and [tuple(r) for r in got["rows"]] == expected
    assert config["rules"]["config"] == "qwen35-serving"


def test_installed_console_script(venv, tmp_path, fixtures):
    env_dir, _ = venv
    r = run([env_dir / "bin" / "traceloom", "--version"], cwd=tmp_path, env=clean_env())
    assert r.stdout.startswith("traceloom 0.1.0")
    r = run([env_dir / "bin" / "traceloom", fixtures / "exact_hlt" / "mono", "--output",
             tmp_path / "a.db"], cwd=tmp_path, env=clean_env())
    assert "analysis database:" in r.stdout and (tmp_path / "a.db").is_file()
    bad = subprocess.run([str(env_dir / "bin" / "traceloom"), "--bogus"], capture_output=True,
                         text=True, cwd=tmp_path, env=clean_env(), timeout=60)
    assert bad.returncode == 2

"""The `traceloom` Python package (python/traceloom) against the build folder's native files:
every public function and every error path. The installed package is tested in
test_pkg_install.py, and agreement with the sqlite3 shell and the CLI in test_pkg_identical.py.

The package is imported from the checkout; TRACELOOM_NATIVE_DIR points it at the build
folder (an installed package carries the same files in traceloom/_native/)."""
import gzip
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time

import apsw
import pytest

from conftest import BUILD, ROOT

sys.path.insert(0, str(ROOT / "python"))
import traceloom  # noqa: E402
from traceloom import _native  # noqa: E402


@pytest.fixture(autouse=True)
def native_from_build(monkeypatch):
    monkeypatch.setenv("TRACELOOM_NATIVE_DIR", str(BUILD))


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """exact_hlt/mono analysed once through the package, for the read-only tests."""
    out = tmp_path_factory.mktemp("analysed") / "analysis.db"
    os.environ["TRACELOOM_NATIVE_DIR"] = str(BUILD)
    try:
        return traceloom.analyze(BUILD / "fixtures" / "exact_hlt" / "mono", output=out)
    finally:
        del os.environ["TRACELOOM_NATIVE_DIR"]


def fake_cli(folder, body):
    """A native folder whose `traceloom` is a Python script (crashes, hangs, noise)."""
    folder.mkdir()
    shutil.copy2(BUILD / "traceloom.so", folder / "traceloom.so")
    script = folder / "traceloom"
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder


# ------------------------------------------------------------------ import and paths

def test_import_pulls_in_no_ml_framework():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import traceloom; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'vllm', 'numpy', 'apsw'}))")
    r = subprocess.run([sys.executable, "-c", code, str(ROOT / "python")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_version_matches_the_cli(cli):
    out = subprocess.run([str(cli), "--version"], capture_output=True, text=True).stdout
    assert out.startswith(f"traceloom {traceloom.__version__} ")


def test_loadable_path_loads_with_apsw():
    path = traceloom.loadable_path()
    # In the build folder the CLI has the bare name, so the full .so name is returned.
    assert path == str(BUILD.resolve() / "traceloom.so")
    conn = apsw.Connection(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(path)
    assert conn.execute("SELECT traceloom_version()").fetchall() == [("0.1.0",)]


def test_loadable_path_is_suffixless_in_a_package_layout(tmp_path, monkeypatch):
    native = tmp_path / "_native"
    (native / "bin").mkdir(parents=True)
    shutil.copy2(BUILD / "traceloom.so", native / "traceloom.so")
    shutil.copy2(BUILD / "traceloom", native / "bin" / "traceloom")
    monkeypatch.setenv("TRACELOOM_NATIVE_DIR", str(native))
    path = traceloom.loadable_path()
    assert path == str(native / "traceloom")  # SQLite appends .so itself
    conn = apsw.Connection(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(path)
    assert conn.execute("SELECT traceloom_version()").fetchall() == [("0.1.0",)]
    # The CLI is found in bin/.
    r = subprocess.run([sys.executable, "-m", "traceloom", "--version"], cwd=ROOT / "python",
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("traceloom 0.1.0"), r.stderr


def test_missing_native_files_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACELOOM_NATIVE_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="traceloom.so"):
        traceloom.loadable_path()
    with pytest.raises(FileNotFoundError, match="traceloom CLI"):
        traceloom.analyze(BUILD / "fixtures" / "exact_hlt" / "mono", output=tmp_path / "a.db")


def test_bundled_rules():
    for name in ("scheduler-step", "deepseekv4", "qwen35-serving"):
        path = traceloom.bundled_rules(name)
        assert path.name == f"{name}.yaml" and path.is_file()
        assert path.read_bytes() == (ROOT / "configs" / f"{name}.yaml").read_bytes()
    with pytest.raises(ValueError, match="scheduler-step, deepseekv4, qwen35-serving"):
        traceloom.bundled_rules("deepseek")
    with pytest.raises(ValueError):
        traceloom.bundled_rules("../rules/classification")
    with pytest.raises(TypeError):
        traceloom.bundled_rules(None)


# ------------------------------------------------------------------ load()

def test_load_into_apsw():
    conn = apsw.Connection(":memory:")
    traceloom.load(conn)
    assert conn.execute("SELECT traceloom_version()").fetchall() == [("0.1.0",)]
    # Loading was enabled only for the call.
    with pytest.raises(apsw.Error):
        conn.load_extension(traceloom.loadable_path())


def test_load_into_sqlite3():
    conn = sqlite3.connect(":memory:")
    if not hasattr(conn, "enable_load_extension"):
        with pytest.raises(traceloom.ExtensionLoadingUnavailable, match="use apsw"):
            traceloom.load(conn)
    else:
        traceloom.load(conn)
        assert conn.execute("SELECT traceloom_version()").fetchone() == ("0.1.0",)


def test_load_rejects_other_objects():
    with pytest.raises(TypeError, match="apsw.Connection or sqlite3.Connection"):
        traceloom.load(object())


# ------------------------------------------------------------------ analyze()

def test_analyze_returns_a_queryable_database(analysed, fixtures):
    assert isinstance(analysed, traceloom.AnalysisDatabase)
    # 70 device events in the exact_hlt fixture (the same count test_cli.py asserts).
    assert analysed.query("SELECT count(*) AS n FROM traceloom_event WHERE source_table = 'TASK'") == [{"n": 70}]
    meta = analysed.metadata()
    assert meta["analysis_status"] == "complete"
    assert meta["source_kind"] == "ascend_sqlite_hot_path"
    src = fixtures / "exact_hlt" / "mono" / "PROF_0" / "msprof_0.db"
    assert json.loads(meta["source_paths"]) == [str(src.resolve())]


def test_analyze_with_scheduler_context(tmp_path):
    # The generated graph profile with execution-linked context (tests/fixtures/make_context_gen.py):
    # every exact member of every linked launch gets its step, and the step rule partitions.
    src = BUILD / "fixtures" / "context_gen" / "graph"
    files = sorted((src / "context").glob("*.jsonl"))
    assert len(files) == 2
    db = traceloom.analyze(src, output=tmp_path / "ctx.db", context=files, rules_config="scheduler-step")
    members = db.query("SELECT count(*) AS n FROM traceloom_graph_body_member")[0]["n"]
    assert members > 0
    assert db.query("SELECT count(DISTINCT member_id) AS n FROM traceloom_v_context_replay_member") == [{"n": members}]
    assert db.metadata()["candidate_partition_by"] == "scheduler_step"
    # Without context the step rule is refused, and the previous output stays as it was.
    before = (tmp_path / "ctx.db").read_bytes()
    with pytest.raises(traceloom.AnalysisError, match="needs the scheduler context") as info:
        traceloom.analyze(src, output=tmp_path / "ctx.db", rules_config="scheduler-step")
    assert info.value.returncode == 2  # a usage error
    assert (tmp_path / "ctx.db").read_bytes() == before


def test_analyze_with_rules_config_and_threads(tmp_path, analysed):
    src = BUILD / "fixtures" / "exact_hlt" / "mono"
    by_name = traceloom.analyze(src, output=tmp_path / "n.db", rules_config="deepseekv4", threads=2)
    by_path = traceloom.analyze(str(src), output=str(tmp_path / "p.db"),
                                rules_config=traceloom.bundled_rules("deepseekv4"), threads=1)
    rules_n = json.loads(by_name.metadata()["analysis_options"])["rules"]
    rules_p = json.loads(by_path.metadata()["analysis_options"])["rules"]
    assert rules_n["config"] == "deepseekv4"
    assert rules_p["config"] == str(traceloom.bundled_rules("deepseekv4").resolve())
    # The same manifests either way, and threads never change the results.
    assert rules_n["digest"] == rules_p["digest"]
    q = "SELECT * FROM traceloom_position_occurrence ORDER BY 1, 2, 3"
    assert by_name.query(q, limit=None, as_tuples=True) == by_path.query(q, limit=None, as_tuples=True)
    assert by_name.query(q, limit=None, as_tuples=True) == analysed.query(q, limit=None, as_tuples=True)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"context": "sched.jsonl"}, TypeError, "not a single str"),
    ({"context": b"sched.jsonl"}, TypeError, "not a single bytes"),
    ({"context": 5}, TypeError, "sequence of paths"),
    ({"context": [5]}, TypeError, "each context entry"),
    ({"context": ["does-not-exist.jsonl"]}, FileNotFoundError, "context file not found"),
    ({"threads": 0}, ValueError, "from 1 to 256"),
    ({"threads": 257}, ValueError, "from 1 to 256"),
    ({"threads": "2"}, TypeError, "threads must be an int"),
    ({"threads": True}, TypeError, "threads must be an int"),
    ({"threads": 2.0}, TypeError, "threads must be an int"),
    ({"timeout": 0}, ValueError, "timeout must be positive"),
    ({"timeout": "1"}, TypeError, "timeout must be a number"),
    ({"rules_config": 3}, TypeError, "rules_config must be"),
    ({"rules_config": "no-such-config"}, FileNotFoundError, "neither a bundled config"),
    ({"output": 7}, TypeError, "output must be"),
    ({"output": ""}, ValueError, "output must not be empty"),
])
def test_analyze_argument_errors(tmp_path, kwargs, exc, match):
    args = {"output": tmp_path / "a.db", **kwargs}
    with pytest.raises(exc, match=match):
        traceloom.analyze(BUILD / "fixtures" / "exact_hlt" / "mono", **args)
    assert list(tmp_path.iterdir()) == []


def test_analyze_missing_inputs(tmp_path):
    src = BUILD / "fixtures" / "exact_hlt" / "mono"
    with pytest.raises(FileNotFoundError, match="profile not found"):
        traceloom.analyze(tmp_path / "nope", output=tmp_path / "a.db")
    with pytest.raises(FileNotFoundError, match="folder of the output"):
        traceloom.analyze(src, output=tmp_path / "no" / "a.db")
    with pytest.raises(IsADirectoryError):
        traceloom.analyze(src, output=tmp_path)
    with pytest.raises(TypeError, match="source must be"):
        traceloom.analyze(3, output=tmp_path / "a.db")
    with pytest.raises(TypeError):
        traceloom.analyze(src)  # output is required


def test_analysis_error_keeps_the_previous_output(tmp_path, fixtures):
    out = tmp_path / "a.db"
    traceloom.analyze(fixtures / "exact_hlt" / "mono", output=out)
    before = out.read_bytes()
    with pytest.raises(traceloom.AnalysisError) as info:
        traceloom.analyze(fixtures / "bad" / "not_sqlite.db", output=out)
    err = info.value
    assert err.returncode == 1
    assert err.command[0] == str(BUILD.resolve() / "traceloom")
    assert str((fixtures / "bad" / "not_sqlite.db").resolve()) in err.command
    assert "not_sqlite.db" in err.diagnostic_tail and "file is not a database" in err.diagnostic_tail
    assert "exited with status 1" in str(err) and "file is not a database" in str(err)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "a.loop_tree.md"]


def test_crash_is_an_analysis_error_not_a_dead_interpreter(tmp_path, monkeypatch):
    native = fake_cli(tmp_path / "native", """
        import os, signal
        os.kill(os.getpid(), signal.SIGSEGV)
    """)
    monkeypatch.setenv("TRACELOOM_NATIVE_DIR", str(native))
    with pytest.raises(traceloom.AnalysisError, match="SIGSEGV") as info:
        traceloom.analyze(BUILD / "fixtures" / "exact_hlt" / "mono", output=tmp_path / "a.db")
    assert info.value.returncode == -11


def test_diagnostic_tail_is_bounded(tmp_path, monkeypatch):
    native = fake_cli(tmp_path / "native", """
        import sys
        sys.stderr.write("noise\\n" * 50000 + "the last word\\n")
        sys.exit(3)
    """)
    monkeypatch.setenv("TRACELOOM_NATIVE_DIR", str(native))
    with pytest.raises(traceloom.AnalysisError) as info:
        traceloom.analyze(BUILD / "fixtures" / "exact_hlt" / "mono", output=tmp_path / "a.db")
    err = info.value
    assert err.returncode == 3
    assert len(err.diagnostic_tail) == traceloom.AnalysisError.DIAGNOSTIC_TAIL_CHARS
    assert err.diagnostic_tail.endswith("the last word\n")
    assert str(err) == "traceloom exited with status 3: the last word"


def test_timeout_kills_a_hung_child_and_keeps_the_output(tmp_path, monkeypatch):
    out = tmp_path / "a.db"
    out.write_bytes(b"previous analysis")
    # A child that ignores SIGTERM and leaves its temporary file: killed after the grace period.
    native = fake_cli(tmp_path / "native", """
        import os, signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        out = sys.argv[sys.argv.index("--output") + 1]
        open(f"{out}.tmp-{os.getpid()}", "w").write("partial")
        print("started", flush=True)
        time.sleep(60)
    """)
    monkeypatch.setenv("TRACELOOM_NATIVE_DIR", str(native))
    monkeypatch.setattr(_native, "_TERMINATE_GRACE_S", 0.5)
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as info:
        traceloom.analyze(BUILD / "fixtures" / "exact_hlt" / "mono", output=out, timeout=1.0)
    assert time.monotonic() - t0 < 10
    assert info.value.timeout == 1.0 and info.value.cmd[0] == str(native / "traceloom")
    assert out.read_bytes() == b"previous analysis"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "native"]


def test_timeout_with_the_real_cli(tmp_path, fixtures):
    out = tmp_path / "a.db"
    out.write_bytes(b"previous analysis")
    # Far shorter than starting a process: the CLI gets SIGTERM and cleans up after itself.
    with pytest.raises(subprocess.TimeoutExpired):
        traceloom.analyze(fixtures / "exact_hlt" / "mono", output=out, timeout=1e-4)
    assert out.read_bytes() == b"previous analysis"
    assert [p.name for p in tmp_path.iterdir()] == ["a.db"]


# ------------------------------------------------------------------ AnalysisDatabase

def test_database_open_errors(tmp_path, fixtures):
    with pytest.raises(FileNotFoundError):
        traceloom.AnalysisDatabase(tmp_path / "nope.db")
    with pytest.raises(ValueError, match="not a TraceLoom analysis database"):
        traceloom.AnalysisDatabase(fixtures / "exact_hlt" / "mono" / "PROF_0" / "msprof_0.db")


def test_opening_warns_of_statistics_on_the_generated_anchor_id(analysed, tmp_path, monkeypatch):
    """The anchor's id is a generated column with an index, and the analysis writes no
    sqlite_stat1 row for its table (SQLite 3.38.0-3.41.1 answer joins on such an index wrongly
    through a Bloom filter, which they build only for a table with statistics). An ANALYZE run
    since writes one: opening then warns on those SQLite versions, naming the table and the
    fix, and not on others or before."""
    import warnings as w
    copy = tmp_path / "analysed.db"
    shutil.copy(analysed.path, copy)
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 40, 1))
    with w.catch_warnings():
        w.simplefilter("error")
        traceloom.AnalysisDatabase(copy)  # as analysed: no statistics row for the anchors
    with sqlite3.connect(copy) as con:
        con.execute("ANALYZE traceloom_anchor_core")
    with pytest.warns(RuntimeWarning, match=r"'traceloom_anchor_core'.*"
                      r"DELETE FROM sqlite_stat1 WHERE tbl IN \('traceloom_anchor_core'\)"):
        traceloom.AnalysisDatabase(copy)
    for fixed in ((3, 41, 2), (3, 37, 2)):
        monkeypatch.setattr(sqlite3, "sqlite_version_info", fixed)
        with w.catch_warnings():
            w.simplefilter("error")
            traceloom.AnalysisDatabase(copy)


def test_query_binding_rows_and_tuples(analysed):
    with sqlite3.connect(analysed.path) as direct:
        expected = direct.execute(
            "SELECT key, value FROM traceloom_metadata WHERE key IN ('tool_version', 'schema_version') "
            "ORDER BY key").fetchall()
    assert expected == [("schema_version", "1"), ("tool_version", "0.1.0")]
    q = "SELECT key, value FROM traceloom_metadata WHERE key IN (?, ?) ORDER BY key"
    assert analysed.query(q, ("tool_version", "schema_version"), as_tuples=True) == expected
    assert analysed.query(q, ["tool_version", "schema_version"]) == [
        {"key": "schema_version", "value": "1"}, {"key": "tool_version", "value": "0.1.0"}]
    named = "SELECT value FROM traceloom_metadata WHERE key = :k"
    assert analysed.query(named, {"k": "tool_version"}) == [{"value": "0.1.0"}]
    # A bound value is a value, never SQL.
    assert analysed.query(named, {"k": "x' OR '1'='1"}) == []


def test_query_limit_raises_instead_of_truncating(analysed):
    q = "SELECT event_id FROM traceloom_event WHERE source_table = 'TASK' ORDER BY event_id"
    assert len(analysed.query(q, limit=70)) == 70  # exactly the limit is fine
    with pytest.raises(traceloom.RowLimitExceeded, match="more than 69 rows"):
        analysed.query(q, limit=69)
    with pytest.raises(traceloom.RowLimitExceeded):
        analysed.query(q, limit=0)
    assert len(analysed.query(q, limit=None)) == 70
    assert len(analysed.query(q)) == 70  # default 1000
    with pytest.raises(ValueError, match="limit"):
        analysed.query(q, limit=-1)
    with pytest.raises(TypeError):
        analysed.query(b"SELECT 1")


def test_query_connection_is_read_only(analysed):
    before = analysed.path.read_bytes()
    for sql in ("DELETE FROM traceloom_event_core", "CREATE TABLE x(a)",
                "INSERT INTO traceloom_metadata VALUES ('k', 'v')"):
        with pytest.raises(sqlite3.OperationalError, match="readonly|read-only|query_only"):
            analysed.query(sql)
    assert analysed.path.read_bytes() == before


def test_tables_lists_the_catalog(analysed):
    tables = analysed.tables()
    assert tables == sorted(tables)
    for name in ("traceloom_metadata", "traceloom_event", "traceloom_v_position_occurrence",
                 "traceloom_analysis_surface"):
        assert name in tables
    with sqlite3.connect(analysed.path) as direct:
        relations = {r[0] for r in direct.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    assert set(tables) <= relations


def test_loop_tree_matches_the_cli_markdown(analysed):
    tree = analysed.loop_tree()
    assert tree.startswith("# Loop tree")
    # The CLI wrote the same Markdown beside its output, from C.
    assert tree == analysed.path.with_name(analysed.path.stem + ".loop_tree.md").read_text()


def cli_has_export_perfetto() -> bool:
    out = subprocess.run([str(BUILD / "traceloom"), "--help"], capture_output=True, text=True).stdout
    return "export-perfetto" in out


@pytest.mark.skipif(cli_has_export_perfetto(), reason="the CLI has export-perfetto")
def test_export_perfetto_unavailable_is_a_clear_error(analysed, tmp_path):
    with pytest.raises(traceloom.FeatureNotAvailable, match="no export-perfetto subcommand"):
        analysed.export_perfetto(tmp_path / "trace.json")
    assert list(tmp_path.iterdir()) == []


# Capability check: runs only once the CLI has `export-perfetto` (a parallel task adds it).
@pytest.mark.skipif(not cli_has_export_perfetto(), reason="the CLI has no export-perfetto yet")
def test_export_perfetto_writes_a_trace(analysed, tmp_path):
    out = analysed.export_perfetto(tmp_path / "trace.json", timeout=120)
    assert out == (tmp_path / "trace.json").resolve()
    events = json.loads(out.read_text())["traceEvents"]
    # A Chrome/Perfetto JSON timeline with complete ("X") slices.
    assert sum(1 for e in events if e.get("ph") == "X") >= 1
    gz = analysed.export_perfetto(tmp_path / "trace.json.gz")
    assert json.loads(gzip.decompress(gz.read_bytes()))["traceEvents"] == events
    with pytest.raises(FileNotFoundError):
        analysed.export_perfetto(tmp_path / "no" / "trace.json")
    # A native failure is an AnalysisError, as for analyze().
    gone = tmp_path / "gone.db"
    shutil.copy2(analysed.path, gone)
    db = traceloom.AnalysisDatabase(gone)
    gone.unlink()
    with pytest.raises(traceloom.AnalysisError, match="cannot open the analysis database"):
        db.export_perfetto(tmp_path / "t2.json")


def test_module_entry_point_execs_the_cli(tmp_path):
    env = {**os.environ, "TRACELOOM_NATIVE_DIR": str(BUILD)}
    r = subprocess.run([sys.executable, "-m", "traceloom", "--help"], cwd=ROOT / "python",
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and "usage: traceloom PROFILE" in r.stdout
    r = subprocess.run([sys.executable, "-m", "traceloom", "--bogus"], cwd=ROOT / "python",
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2  # the CLI's own usage-error status comes through

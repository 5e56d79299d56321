"""traceloom.cluster on generated 8-rank runs (Ascend and Nsight) with ground truth.

tools/genprofile.py --cluster lays the ranks out in lockstep on one clock, makes rank 2's
layer compute 25% slower and rank 5 arrive 40 us late at every collective. The expected
amounts are worked out from ground_truth.json (what the generator injected), never from the
code under test. Dask runs here as a LocalCluster of worker processes: they inherit the
environment (TRACELOOM_NATIVE_DIR, PYTHONPATH), not this process's sys.path."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT

sys.path.insert(0, str(ROOT / "python"))
import traceloom.cluster as cluster  # noqa: E402
from traceloom.cluster import _extract  # noqa: E402

SLOW, LATE, RANKS = 2, 5, 8
GEN = ["--ranks", str(RANKS), "--cluster", "--slow-rank", str(SLOW), "--late-rank", str(LATE),
       "--decode-steps", "6", "--prefill-steps", "0", "--layers", "4", "--noise", "0",
       "--missing", "0", "--aux", "0", "--quiet"]
LAYER = "seq/s1/repeat/s2/repeat"    # the layer repeat inside the step repeat
STEP = "seq/s1/repeat"


@pytest.fixture(scope="module", autouse=True)
def package_env():
    old = {k: os.environ.get(k) for k in ("TRACELOOM_NATIVE_DIR", "PYTHONPATH")}
    os.environ["TRACELOOM_NATIVE_DIR"] = str(BUILD)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        x for x in (str(ROOT / "python"), old["PYTHONPATH"]) if x)
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def generate(out, fmt, *extra):
    subprocess.run([sys.executable, str(ROOT / "tools" / "genprofile.py"), "--format", fmt,
                    "--out", str(out), *GEN, *extra], check=True, timeout=300)
    return json.loads((out / "ground_truth.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cluster_runs")
    return {fmt: (base / fmt, generate(base / fmt, fmt)) for fmt in ("ascend", "nsys")}


@pytest.fixture(scope="module")
def analysed(runs, tmp_path_factory):
    """Each run analysed on a LocalCluster of two workers."""
    out = {}
    for fmt, (run, truth) in runs.items():
        res = cluster.analyze(run, output=tmp_path_factory.mktemp(fmt) / "cluster.db", workers=2)
        out[fmt] = (res, truth)
    return out


def rows(db, sql, params=()):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute(sql, params).fetchall()


def rel(got, want):
    return abs(got - want) / abs(want)


# ------------------------------------------------------------------ the injected ranks

@pytest.mark.parametrize("fmt", ["ascend", "nsys"])
def test_the_late_rank_made_everyone_wait(analysed, fmt):
    res, truth = analysed[fmt]
    t = truth["cluster"]
    assert res.failed == [] and len(res.ranks) == RANKS
    per_rank = {r[0]: r[1:] for r in rows(res.path, "SELECT rank, collectives, times_last, "
                                          "mean_lateness_ns, mean_own_wait_ns FROM traceloom_cluster_v_wait_cause")}
    assert sorted(per_rank) == list(range(RANKS))
    n = t["collectives_per_rank"]
    # Exactly the late rank arrived last, at every collective.
    assert {r for r, v in per_rank.items() if v[1] > 0} == {t["late_rank"]}
    assert per_rank[LATE][:2] == (n, n)
    assert rel(per_rank[LATE][2], t["late_ns"]) < 0.01
    # The waits: a punctual rank waits the late rank's lateness; the slow rank waits less,
    # by its extra compute before each collective (from the arrival offsets of the truth).
    arrivals = t["phases"][0]["collectives_per_step"]
    for r, v in per_rank.items():
        want = sum(c["last_arrival_offset_ns"] - c["arrival_offset_ns"][r] for c in arrivals) / len(arrivals)
        if r == LATE:
            assert v[3] == 0
        else:
            assert rel(v[3], want) < 0.01, (r, v[3], want)
            if r != SLOW:
                assert rel(v[3], t["late_ns"]) < 0.01


@pytest.mark.parametrize("fmt", ["ascend", "nsys"])
def test_the_slow_rank_is_the_only_straggler(analysed, fmt):
    res, truth = analysed[fmt]
    ph = truth["cluster"]["phases"][0]
    extra = ph["slow_extra_compute_ns_per_layer_iteration"]
    # 25% of the layer's compute, each task rounded to the nanosecond.
    assert abs(extra - 0.25 * ph["layer_compute_ns_per_iteration"]) <= truth["structure"]["ops_per_layer"]
    got = {(p, r): v for p, r, *v in rows(res.path, (
        "SELECT struct_path, rank, iterations, compute_straggler_iterations, "
        "duration_straggler_iterations, mean_compute_excess_ns FROM traceloom_cluster_v_straggler"))}
    steps, layers = truth["structure"]["steps"]["decode"], truth["structure"]["layers"]
    for r in range(RANKS):
        assert got[(LAYER, r)][0] == steps * layers
        assert got[(STEP, r)][0] == steps
        # Ranks synchronize at every collective: nobody is a straggler by duration.
        assert got[(LAYER, r)][2] == 0 and got[(STEP, r)][2] == 0
        want_layer = steps * layers if r == SLOW else 0
        assert got[(LAYER, r)][1] == want_layer and got[(STEP, r)][1] == (steps if r == SLOW else 0)
    # The injected amount: extra compute per layer iteration, and per step (layers of it).
    assert rel(got[(LAYER, SLOW)][3], extra) < 0.01
    assert rel(got[(STEP, SLOW)][3], layers * extra) < 0.01
    # The per-iteration view names the same rank as the slowest by compute, every time.
    slowest = rows(res.path, "SELECT DISTINCT slowest_compute_rank FROM traceloom_cluster_v_iteration "
                             "WHERE struct_path IN (?, ?)", (LAYER, STEP))
    assert slowest == [(SLOW,)]


@pytest.mark.parametrize("fmt", ["ascend", "nsys"])
def test_collectives_match_by_label_and_sequence(analysed, fmt):
    res, truth = analysed[fmt]
    n = truth["cluster"]["collectives_per_rank"]
    inst = rows(res.path, "SELECT seq, ranks, last_rank, skew_ns, position_differs, struct_path "
                          "FROM traceloom_cluster_v_collective ORDER BY seq")
    assert [i[0] for i in inst] == list(range(n))
    assert all(i[1] == RANKS and i[2] == LATE and i[4] == 0 for i in inst)
    assert {i[5] for i in inst} == {LAYER + "/s6/comm:" + inst[0][5].rsplit(":", 1)[1],
                                    LAYER + "/s11/comm:" + inst[0][5].rsplit(":", 1)[1]}
    # The skew is the late rank's lateness (the punctual ranks arrive together).
    assert all(i[3] == truth["cluster"]["late_ns"] for i in inst)


@pytest.mark.parametrize("fmt", ["ascend", "nsys"])
def test_node_breakdown_per_rank(analysed, fmt):
    res, truth = analysed[fmt]
    ph = truth["cluster"]["phases"][0]
    steps, layers = truth["structure"]["steps"]["decode"], truth["structure"]["layers"]
    node = dict(((r, c) for _, r, c in rows(
        res.path, "SELECT struct_path, rank, compute_excess_ns FROM traceloom_cluster_v_node_rank "
                  "WHERE struct_path = ?", (LAYER,))))
    # The layer repeat node over all its occurrences: steps x layers x the extra compute.
    assert rel(node[SLOW], steps * layers * ph["slow_extra_compute_ns_per_layer_iteration"]) < 0.01
    assert rows(res.path, "SELECT count(*) FROM traceloom_cluster_v_tree_diff") == [(0,)]


# ------------------------------------------------------------------ engines agree

def table_rows(db):
    out = {}
    for t in ("traceloom_cluster_node", "traceloom_cluster_iteration", "traceloom_cluster_collective",
              "traceloom_cluster_status"):
        out[t] = rows(db, f"SELECT * FROM {t} ORDER BY 1, 2, 3")
    out["rank"] = rows(db, "SELECT rank, name, input_path, source_kind, status, error, input_sha256, "
                           "device_ids, anchors, collectives FROM traceloom_cluster_rank ORDER BY rank")
    return out


def test_one_two_workers_and_serial_are_identical(runs, analysed, tmp_path):
    run, _ = runs["ascend"]
    res2, _ = analysed["ascend"]
    res1 = cluster.analyze(run, output=tmp_path / "w1.db", workers=1)
    ser = cluster.analyze(run, output=tmp_path / "serial.db", client=False)
    assert "LocalCluster (1 worker" in res1.engine and ser.engine.startswith("serial")
    want = table_rows(res2.path)
    assert sum(len(v) for v in want.values()) > 500
    assert table_rows(res1.path) == want
    assert table_rows(ser.path) == want


def test_same_facts_as_the_plain_analysis_of_the_whole_run(runs, analysed, cli, tmp_path):
    """The plain CLI over the run directory (every rank in one database, device r = rank r)
    gives the same per-rank facts as the fanned-out analyses."""
    run, _ = runs["ascend"]
    res, _ = analysed["ascend"]
    subprocess.run([str(cli), str(run), "--output", str(tmp_path / "all.db")], check=True,
                   capture_output=True, timeout=300)
    _extract.write_extract(tmp_path / "all.db", tmp_path / "all_extract.db", {})
    plain_node = rows(tmp_path / "all_extract.db", "SELECT struct_path, device_id, device_id, parent_path, kind, "
                      "symbol, depth, repeat_count, occurrences, compute_ns, comm_ns, idle_ns, total_ns "
                      "FROM node ORDER BY 1, 2")
    assert plain_node == rows(res.path, "SELECT * FROM traceloom_cluster_node ORDER BY 1, 2")
    plain_coll = rows(tmp_path / "all_extract.db", "SELECT label, seq, device_id, device_id, symbol, "
                      "struct_path, iteration, start_ns, end_ns FROM collective ORDER BY 1, 2, 3")
    assert plain_coll == rows(res.path, "SELECT * FROM traceloom_cluster_collective ORDER BY 1, 2, 3")


# ------------------------------------------------------------------ reuse, failure, atomicity

def test_rerun_reuses_ranks_by_input_hash(runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs["ascend"][0], run)
    first = cluster.analyze(run, output=tmp_path / "c.db", client=False)
    assert {r.status for r in first.ranks} == {"analysed"}
    with sqlite3.connect(run / "PROF_3" / "msprof_3.db") as c:   # one rank's input changes
        c.execute("UPDATE TASK SET endNs = endNs + 1 WHERE rowid = 1")
    again = cluster.analyze(run, output=tmp_path / "c.db", client=False)
    assert [r.status for r in again.ranks] == ["reused"] * 3 + ["analysed"] + ["reused"] * 4
    assert again.ranks[3].input_sha256 != first.ranks[3].input_sha256
    # Only rank 3's rows can have changed, and only its one task's end moved by 1 ns.
    before, after = table_rows(first.path), table_rows(tmp_path / "c.db")
    assert [x for x in after["traceloom_cluster_node"] if x[1] != 3] == \
        [x for x in before["traceloom_cluster_node"] if x[1] != 3]


def test_a_failed_rank_is_reported_and_the_others_kept(runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs["ascend"][0], run)
    bad = run / "PROF_1" / "msprof_1.db"
    with sqlite3.connect(bad) as c:
        c.execute("ALTER TABLE TASK DROP COLUMN endNs")
    r = subprocess.run([sys.executable, "-m", "traceloom", "cluster", str(run), "--output",
                        str(tmp_path / "c.db"), "--workers", "2", "--quiet"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr
    assert "rank 1" in r.stderr and str(bad) in r.stderr and "endNs" in r.stderr
    failed = rows(tmp_path / "c.db", "SELECT rank, status, error FROM traceloom_cluster_rank "
                                     "WHERE status <> 'analysed'")
    assert len(failed) == 1 and failed[0][:2] == (1, "failed")
    assert str(bad) in failed[0][2] and "TASK" in failed[0][2] and "endNs" in failed[0][2]
    status = rows(tmp_path / "c.db", "SELECT rank, detail FROM traceloom_cluster_status "
                                     "WHERE status = 'rank_failed'")
    assert status[0][0] == 1 and str(run / "PROF_1") in status[0][1]
    # The other seven are all there, and the late rank is still found.
    assert rows(tmp_path / "c.db", "SELECT count(DISTINCT rank) FROM traceloom_cluster_node") == [(7,)]
    assert rows(tmp_path / "c.db", "SELECT rank FROM traceloom_cluster_v_wait_cause "
                                   "WHERE times_last > 0") == [(LATE,)]


def test_cluster_database_is_written_atomically(runs, tmp_path, monkeypatch):
    out = tmp_path / "c.db"
    cluster.analyze(runs["ascend"][0], output=out, client=False)
    before = out.read_bytes()
    calls = []

    def boom(self, res):
        calls.append(res.rank)
        if len(calls) == 3:
            raise RuntimeError("interrupted")
    monkeypatch.setattr(cluster.ClusterWriter, "add_rank", boom)
    with pytest.raises(RuntimeError, match="interrupted"):
        cluster.analyze(runs["ascend"][0], output=out, client=False)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.db", "c.ranks"]


def test_tree_differences_are_rows(runs, tmp_path):
    """A rank of a 3-layer model among ranks of a 4-layer one: the layer repeat differs."""
    other = tmp_path / "other"
    generate(other, "ascend", "--layers", "3")
    paths = [runs["ascend"][0] / "PROF_0", runs["ascend"][0] / "PROF_1", other / "PROF_2"]
    res = cluster.analyze(paths, output=tmp_path / "c.db", client=False)
    diff = rows(res.path, "SELECT struct_path, rank, reason, detail FROM traceloom_cluster_v_tree_diff "
                          "WHERE struct_path = ?", (LAYER,))
    assert diff == [(LAYER, 2, "repeat_count_differs", "x3 here, x4 on most ranks")]
    assert rows(res.path, "SELECT count(*) FROM traceloom_cluster_status WHERE status = 'trees_differ'") == [(1,)]


# ------------------------------------------------------------------ plans, CLI, Perfetto

def test_view_lookups_use_primary_keys(analysed):
    res, _ = analysed["ascend"]
    with sqlite3.connect(f"file:{res.path}?mode=ro", uri=True) as c:
        for sql in ("SELECT * FROM traceloom_cluster_v_iteration",
                    "SELECT * FROM traceloom_cluster_v_tree_diff",
                    "SELECT * FROM traceloom_cluster_v_collective"):
            plan = "\n".join(r[3] for r in c.execute("EXPLAIN QUERY PLAN " + sql))
            # Windows and groups walk the primary keys: no sorter for them.
            assert "USING TEMP B-TREE FOR GROUP BY" not in plan, (sql, plan)
        diff = "\n".join(r[3] for r in c.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM traceloom_cluster_v_tree_diff"))
        assert "SEARCH n USING PRIMARY KEY (struct_path=? AND rank=? AND device_id=?)" in diff, diff
        sub = "\n".join(r[3] for r in c.execute(
            "EXPLAIN QUERY PLAN SELECT slowest_rank FROM traceloom_cluster_v_iteration"))
        assert "SEARCH i USING PRIMARY KEY (struct_path=? AND iteration=?)" in sub, sub


def test_perfetto_export_of_the_ranks(analysed, tmp_path):
    res, _ = analysed["ascend"]
    out = cluster.export_perfetto(res.path, tmp_path / "ranks.json", ranks=[0, LATE])
    text = out.read_text()
    doc = json.loads(text)
    pids = {e.get("pid") for e in doc["traceEvents"] if isinstance(e, dict)}
    assert len(pids) >= 2


def test_cli_help_and_usage_errors(tmp_path):
    r = subprocess.run([sys.executable, "-m", "traceloom", "cluster", "--help"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--scheduler" in r.stdout and "--workers" in r.stdout
    r = subprocess.run([sys.executable, "-m", "traceloom", "cluster", str(tmp_path / "nope"),
                        "--output", str(tmp_path / "c.db")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "profile not found" in r.stderr


def test_a_running_scheduler_by_address(runs, analysed, tmp_path):
    """--scheduler / client="tcp://...": any running Dask cluster, here one started apart."""
    import logging
    from distributed import LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as lc:
        r = subprocess.run([sys.executable, "-m", "traceloom", "cluster", str(runs["nsys"][0]),
                            "--output", str(tmp_path / "c.db"), "--scheduler", lc.scheduler_address],
                           capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert f"dask cluster at {lc.scheduler_address}" in r.stdout
    assert r.stderr.count("traceloom cluster: [") == RANKS      # one progress line per rank
    assert table_rows(tmp_path / "c.db") == table_rows(analysed["nsys"][0].path)

"""Scheduler-context import end to end (context-observer.md sections 3 to 5 and 9), through
traceloom_analyze with the `context` option, on profiles generated with
tools/genprofile.py --context.

Expected values come from ground_truth.json and from the files themselves (hashlib for the
digests); the acceptance of issue 7: every launch and every member of a replay maps to its
one step, one replay_member row per body member, typed states for everything else.
"""

import hashlib
import json
import os

import apsw
import pytest

from conftest import tree_digest
from test_genprofile import generate


def analyze(build_dir, db_path, profile, context):
    con = apsw.Connection(str(db_path))
    con.enable_load_extension(True)
    con.load_extension(str(build_dir / "traceloom.so"))
    try:
        con.execute("SELECT traceloom_analyze(?, ?)",
                    (str(profile), json.dumps({"context": [str(c) for c in context]}))).fetchall()
    except apsw.Error as ex:
        if 'unknown analyze option "context"' in str(ex):
            con.close()
            pytest.skip("the analyze option \"context\" is not wired yet")
        raise
    return con


def dump(con):
    """Every traceloom table's rows: what an analysis published."""
    names = [n for (n,) in con.execute("SELECT name FROM sqlite_schema WHERE type = 'table' "
                                       "AND name LIKE 'traceloom%' ORDER BY name")]
    return {n: sorted(map(repr, con.execute('SELECT * FROM "%s"' % n).fetchall())) for n in names}


def context_files(out, truth):
    ctx = truth["context"]
    return [out / "ctx" / (ctx["scheduler_id"] + ".jsonl")] + [out / "ctx" / (w + ".jsonl") for w in ctx["workers"]]


@pytest.fixture(scope="module")
def run(tmp_path_factory, build_dir):
    out = tmp_path_factory.mktemp("ctx_import")
    truth = generate(out, "--format", "ascend", "--graph", "--prefill-steps", 2, "--decode-steps", 6,
                     "--layers", 4, "--ops", 6, "--ranks", 2, "--jobs", 1, "--seed", 13, "--aux", 0.05,
                     "--missing", 0, "--context", out / "ctx", "--context-queue")
    before = tree_digest(out)
    con = analyze(build_dir, out / "analysis.db", out, context_files(out, truth))
    yield out, truth, con, before
    con.close()


def q(con, sql, *args):
    return con.execute(sql, args).fetchall()


def test_sources_hash_the_consumed_bytes(run):
    out, truth, con, _ = run
    rows = q(con, "SELECT source_path, sha256, size_bytes, capture_state FROM traceloom_context_source ORDER BY source_id")
    files = context_files(out, truth)
    assert [r[0] for r in rows] == [os.path.realpath(f) for f in files]
    for (path, digest, size, state), f in zip(rows, files):
        data = f.read_bytes()
        assert digest == hashlib.sha256(data).hexdigest() and size == len(data) and state == "closed"


def test_inputs_are_not_modified(run):
    out, _, _, before = run
    after = tree_digest(out)
    assert {k: v for k, v in after.items() if not k.startswith("analysis.db")} == before


def step_ordinals(con):
    return dict(q(con, "SELECT step_id, ordinal FROM traceloom_scheduler_step"))


def test_every_launch_maps_to_its_one_step(run):
    out, truth, con, _ = run
    ordinal = step_ordinals(con)
    got = {}
    for launch_id, db_idx, step_id, corr, rank in q(
            con, "SELECT l.launch_id, l.db_idx, l.step_id, g.correlation_id, x.worker_rank "
                 "FROM traceloom_v_context_replay_launch l JOIN traceloom_graph_launch g "
                 "ON g.launch_id = l.launch_id AND g.db_idx = l.db_idx "
                 "JOIN traceloom_context_execution x ON x.execution_id = l.execution_id"):
        assert rank == db_idx   # a rank's launches link only to that rank's worker
        got[(db_idx, int(corr))] = ordinal[step_id]
    want = {(r["rank"], l["connection_id"]): l["step"] for r in truth["ranks"] for l in r["graph"]["launch_list"]}
    assert got == want
    assert len(want) == 2 * 6 * (4 + 2)


def test_every_member_maps_to_its_launchs_step(run):
    out, truth, con, _ = run
    members = q(con, "SELECT count(*) FROM traceloom_graph_body_member")[0][0]
    assert members == sum(l["member_tasks"] for r in truth["ranks"] for l in r["graph"]["launch_list"])
    assert q(con, "SELECT count(*) FROM traceloom_v_context_replay_member")[0][0] == members
    assert q(con, "SELECT count(*) FROM traceloom_v_context_replay_member m JOIN traceloom_v_context_replay_launch l "
                  "ON l.launch_id = m.launch_id AND l.db_idx = m.db_idx WHERE l.step_id = m.step_id")[0][0] == members


def test_eager_work_belongs_to_the_prefill_steps(run):
    out, truth, con, _ = run
    ordinal = step_ordinals(con)
    rows = q(con, "SELECT e.db_idx, w.step_id, count(*) FROM traceloom_event e "
                  "LEFT JOIN traceloom_v_context_device_work w ON w.event_id = e.event_id "
                  "WHERE e.model_id IS NULL AND e.source_table = 'TASK' GROUP BY 1, 2")
    steps = {(db, ordinal.get(s)) for db, s, _ in rows}
    assert steps == {(r, s) for r in (0, 1) for s in (0, 1)}   # every eager task: a prefill step
    states = dict(q(con, "SELECT support_state, count(*) FROM traceloom_v_context_device_coverage c "
                         "JOIN traceloom_event e ON e.event_id = c.event_id "
                         "WHERE e.source_table = 'TASK' AND e.task_type <> 'NOTIFY_RECORD' GROUP BY 1"))
    assert list(states) == ["supported_step"]


def test_bases_follow_the_generated_layout(run):
    out, truth, con, _ = run
    want = {s["step_id"]: s["basis"] for s in truth["context"]["steps"]}
    for step_id, basis in q(con, "SELECT DISTINCT x.step_id, r.association_basis FROM traceloom_context_runtime_call r "
                                 "JOIN traceloom_context_execution x USING (execution_id)"):
        assert want[step_id] == basis


def test_a_rejected_context_keeps_the_previous_result(tmp_path, run, build_dir):
    out, truth, _, _ = run
    db = tmp_path / "a.db"
    con = analyze(build_dir, db, out, context_files(out, truth))
    before = dump(con)
    bad = tmp_path / "torn.jsonl"
    good = context_files(out, truth)[0].read_bytes()
    bad.write_bytes(good[:-1])   # the last line lost its newline
    lines = good.count(b"\n")
    with pytest.raises(apsw.Error) as ex:
        con.execute("SELECT traceloom_analyze(?, ?)", (str(out), json.dumps({"context": [str(bad)]}))).fetchall()
    msg = str(ex.value)
    assert "context record lacks terminating newline" in msg and str(bad) in msg and "line %d" % lines in msg
    assert dump(con) == before
    with pytest.raises(apsw.Error) as ex:
        files = context_files(out, truth)
        con.execute("SELECT traceloom_analyze(?, ?)",
                    (str(out), json.dumps({"context": [str(files[0]), str(files[0])]}))).fetchall()
    assert "duplicate context input" in str(ex.value)
    with pytest.raises(apsw.Error) as ex:
        con.execute("SELECT traceloom_analyze(?, ?)", (str(out), json.dumps({"context": str(bad)}))).fetchall()
    assert "context" in str(ex.value)
    assert dump(con) == before
    con.close()

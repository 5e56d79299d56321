"""Idle evidence (Ascend E1-E4) against the ground truths of ../shared/fixtures/idle_evidence.

Each case is analysed with the analyze option "idle_evidence" (the collection status the case
attests, and for clock_drift its marker TSV, marked synthetic). The productive intervals and
the explained idle slices must equal the ground truth exactly: bounds, kind, category, evidence
level and relation, clock alignment and the profiler rows each one cites (TABLE:rowid). The
evaluation matrix's metrics (coverage and false-attribution rate over the three cases) are
recomputed from its own predictions, and the analysis reproduces the balanced point's.
"""
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("TRACELOOM_FIXTURES", ROOT.parent / "shared" / "fixtures"))
CASES_DIR = SHARED / "idle_evidence"

CASES = ["adjacent_overlap", "event_loss", "clock_drift", "host_wait_zero_visible_idle"]
FIELDS = ("start_ns", "end_ns", "interval_kind", "explanation_category", "evidence_level",
          "evidence_relation", "alignment_status", "expected_source_keys")


def options(case, epsilon_multiplier=None, minimum_ns=None):
    truth = json.loads((CASES_DIR / case / "ground_truth.json").read_text())
    idle = {"collection_status": truth.get("collection_status", "complete")}
    markers = CASES_DIR / case / "clock_markers.tsv"
    if markers.exists():
        idle.update(clock_markers=str(markers), clock_markers_synthetic=True)
    if epsilon_multiplier is not None:
        idle.update(epsilon_multiplier=epsilon_multiplier, minimum_evidence_duration_ns=minimum_ns)
    return {"idle_evidence": idle}


def analyse(cli, fixtures, tmp_path, case, **knobs):
    out = tmp_path / f"{case}.db"
    subprocess.run([str(cli), str(fixtures / "idle_evidence" / case), "--output", str(out),
                    "--options", json.dumps(options(case, **knobs))],
                   check=True, capture_output=True, text=True)
    return sqlite3.connect(f"file:{out}?mode=ro", uri=True)


def cited(con, owner_kind, owner_id):
    return sorted(f"{t}:{k}" for t, k in con.execute(
        "SELECT source_table, source_key FROM traceloom_evidence_link"
        " WHERE owner_kind = ? AND owner_id = ?", (owner_kind, owner_id)))


def predicted_intervals(con):
    """The productive intervals and the explained idle slices, as ground-truth rows."""
    rows = []
    for iid, s, e in con.execute(
            "SELECT interval_id, start_ns, end_ns FROM traceloom_device_interval"
            " WHERE interval_kind = 'productive_active'"):
        rows.append(dict(start_ns=s, end_ns=e, interval_kind="productive_active",
                         explanation_category=None, evidence_level=None, evidence_relation=None,
                         alignment_status="not_required",
                         expected_source_keys=cited(con, "device_interval", iid)))
    for xid, s, e, cat, lvl, rel, align in con.execute(
            "SELECT idle_explanation_id, start_ns, end_ns, category, evidence_level,"
            " evidence_relation, alignment_status FROM traceloom_idle_explanation"):
        rows.append(dict(start_ns=s, end_ns=e, interval_kind="visible_productive_idle",
                         explanation_category=cat, evidence_level=lvl, evidence_relation=rel,
                         alignment_status=align,
                         expected_source_keys=cited(con, "explanation", xid)))
    return sorted(rows, key=lambda r: (r["start_ns"], r["end_ns"]))


@pytest.mark.parametrize("case", CASES)
def test_ground_truth_intervals(cli, fixtures, tmp_path, case):
    truth = json.loads((CASES_DIR / case / "ground_truth.json").read_text())
    con = analyse(cli, fixtures, tmp_path, case)
    want = [{f: (sorted(i[f]) if f == "expected_source_keys" else i[f]) for f in FIELDS}
            for i in truth["intervals"]]
    assert predicted_intervals(con) == want
    span = con.execute("SELECT span_start_ns, span_end_ns, analysis_status, collection_status"
                       " FROM traceloom_run_metadata").fetchall()
    assert span == [(truth["analysis_span"]["start_ns"], truth["analysis_span"]["end_ns"], "ok",
                     truth.get("collection_status", "complete"))]
    idle_ns = con.execute("SELECT COALESCE(SUM(duration_ns), 0) FROM traceloom_device_interval"
                          " WHERE interval_kind = 'visible_productive_idle'").fetchone()[0]
    assert idle_ns == truth["visible_idle_total_ns"]


def test_clock_drift_model(cli, fixtures, tmp_path):
    """d = 2p + 1000 on synthetic markers: scale 2, alignment synthetic_only."""
    truth = json.loads((CASES_DIR / "clock_drift" / "ground_truth.json").read_text())
    con = analyse(cli, fixtures, tmp_path, "clock_drift")
    (scale, alignment), = con.execute("SELECT scale, alignment_status FROM traceloom_clock_model")
    assert float(scale) == truth["expected_scale"]
    assert alignment == truth["expected_alignment_status"]


def test_host_wait_is_not_device_idle(cli, fixtures, tmp_path):
    """aclrtSynchronizeStream [500,4500) is host evidence: no idle gap, no explanation."""
    con = analyse(cli, fixtures, tmp_path, "host_wait_zero_visible_idle")
    assert con.execute("SELECT count(*) FROM traceloom_idle_explanation").fetchone() == (0,)
    assert con.execute("SELECT api_name, api_family, start_ns, end_ns FROM traceloom_host_api_event"
                       ).fetchall() == [("aclrtSynchronizeStream", "host_sync", 500, 4500)]


def overlap(a, b):
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def metrics(point):
    """Coverage: explained (not unattributed) predicted time over the ground-truth idle total;
    false attribution: explained predicted time whose category differs from the ground truth's."""
    total = explained = false = 0
    for case in point["cases"]:
        truth = json.loads((CASES_DIR / case["ground_truth"]).read_text())
        total += truth["visible_idle_total_ns"]
        gt = [i for i in truth["intervals"] if i["interval_kind"] == "visible_productive_idle"]
        for p in case["prediction"]:
            if p["category"] == "unattributed_visible_idle":
                continue
            explained += p["end_ns"] - p["start_ns"]
            false += sum(overlap((p["start_ns"], p["end_ns"]), (g["start_ns"], g["end_ns"]))
                         for g in gt if g["explanation_category"] != p["category"])
    return {"total_gap_ns": total, "explained_ns": explained, "false_attributed_ns": false,
            "coverage": explained / total, "far": false / total}


MATRIX = json.loads((CASES_DIR / "evaluation_matrix.json").read_text()) \
    if (CASES_DIR / "evaluation_matrix.json").exists() else {"points": []}


@pytest.mark.parametrize("point", MATRIX["points"], ids=lambda p: p["point_id"])
def test_evaluation_matrix_metrics(point):
    got = metrics(point)
    want = point["expected_metrics"]
    assert {k: got[k] for k in ("total_gap_ns", "explained_ns", "false_attributed_ns")} == \
        {k: want[k] for k in ("total_gap_ns", "explained_ns", "false_attributed_ns")}
    assert got["coverage"] == pytest.approx(want["coverage"], abs=1e-12)
    assert got["far"] == pytest.approx(want["far"], abs=1e-12)


def test_balanced_point_reproduced(cli, fixtures, tmp_path):
    """The analysis at the balanced knobs predicts exactly the balanced point's slices."""
    point = next(p for p in MATRIX["points"] if p["point_id"] == "balanced")
    knobs = point["knobs"]
    for case in point["cases"]:
        name = pathlib.Path(case["ground_truth"]).parent.name
        con = analyse(cli, fixtures, tmp_path, name, epsilon_multiplier=knobs["epsilon_multiplier"],
                      minimum_ns=knobs["minimum_evidence_duration_ns"])
        got = [{"start_ns": s, "end_ns": e, "category": c} for s, e, c in con.execute(
            "SELECT start_ns, end_ns, category FROM traceloom_idle_explanation ORDER BY start_ns")]
        assert got == case["prediction"], name


def test_report_queries_read_the_runs(cli, fixtures, tmp_path):
    """idle-evidence-summary and -audit, unchanged, through the sqlite3 shell."""
    q = ROOT.parent / "shared" / "reference" / "report-sql"
    con = analyse(cli, fixtures, tmp_path, "adjacent_overlap")
    db = con.execute("PRAGMA database_list").fetchone()[2]

    def shell(name):
        with open(q / name) as sql:
            return [line.split("|") for line in subprocess.run(
                ["sqlite3", "-bail", db], stdin=sql, check=True, capture_output=True,
                text=True).stdout.splitlines()]
    # ground_truth.json: of the 3000 ns gap, wait [2500,3500), capture [3500,4200),
    # record [4200,4500), and two absence slices [2000,2500) + [4500,5000), in priority order
    assert [r[3:9] for r in shell("idle-evidence-summary.sql")] == [
        ["blocked_by_visible_wait", "direct", "device_event_coverage", "1", "1000", "1.0"],
        ["capture_control_present", "direct", "device_event_coverage", "1", "700", "0.7"],
        ["runtime_control_present", "direct", "device_event_coverage", "1", "300", "0.3"],
        ["no_observed_device_work", "direct", "complete_absence_observation", "2", "1000", "1.0"]]
    audit, = shell("idle-evidence-audit.sql")
    assert audit[-1] == "PASS"


def test_event_citations_are_looked_up_by_index(cli, fixtures, tmp_path):
    """The audit query's EXISTS (... traceloom_event WHERE event_id = link.trace_event_id) is a
    correlated subquery: SQLite builds no automatic index there, so without an index on the
    event id every link would scan every event (minutes on a 1M-task profile). The id is the
    generated column, not a stored copy (34.6 MB and 1 s less at a million tasks), so the
    event core, like the anchors, gets no sqlite_stat1 row: SQLite 3.38.0-3.41.1 build a wrong
    Bloom filter on an index of a generated column, and build one only for a table with
    statistics (test_report_plans.py test_generated_anchor_id_index_gets_no_bloom_filter)."""
    con = analyse(cli, fixtures, tmp_path, "adjacent_overlap")
    # hidden 2: a VIRTUAL generated column (3 would be STORED)
    assert con.execute("SELECT hidden FROM pragma_table_xinfo('traceloom_event_core')"
                       " WHERE name = 'event_id'").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl IN"
                       " ('traceloom_event_core', 'traceloom_anchor_core')").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM sqlite_stat1").fetchone()[0] > 0
    plan = " ".join(r[3] for r in con.execute(
        "EXPLAIN QUERY PLAN SELECT count(*) FROM traceloom_evidence_link l WHERE EXISTS "
        "(SELECT 1 FROM traceloom_event ev WHERE ev.event_id = l.trace_event_id)"))
    assert "traceloom_event_core_event_id" in plan, plan
    linked = con.execute("SELECT count(*) FROM traceloom_evidence_link l WHERE EXISTS "
                         "(SELECT 1 FROM traceloom_event ev WHERE ev.event_id = l.trace_event_id)"
                         ).fetchone()[0]
    assert linked == con.execute("SELECT count(*) FROM traceloom_evidence_link "
                                 "WHERE trace_event_id IS NOT NULL").fetchone()[0] > 0


def test_anchor_attributions_find_their_anchor_by_index(cli, fixtures, tmp_path):
    """The audit's anchor_totals joins every row of traceloom_anchor_idle_explanation (one per
    attributed anchor) to traceloom_anchor by anchor_id: with idle evidence on, an index on the
    anchor's id makes that a lookup, not an automatic index over every anchor row and column
    built at each run. Each attribution finds exactly its own anchor."""
    con = analyse(cli, fixtures, tmp_path, "adjacent_overlap")
    sql = ("SELECT i.anchor_id, a.anchor_n, a.db_idx, a.device_id"
           " FROM traceloom_anchor_idle_explanation i LEFT JOIN traceloom_anchor a"
           " ON a.anchor_id = i.anchor_id AND a.db_idx = i.db_idx AND a.device_id = i.device_id")
    plan = " ".join(r[3] for r in con.execute("EXPLAIN QUERY PLAN " + sql))
    assert "USING INDEX traceloom_anchor_core_anchor_id (anchor_id=?)" in plan, plan
    assert "AUTOMATIC" not in plan, plan
    rows = con.execute(sql).fetchall()
    assert rows and all(n is not None and aid == "anchor-%d" % n for aid, n, _, _ in rows), rows
    # with idle evidence or without, the index is on the generated column and the table has
    # no sqlite_stat1 row (test_report_plans.py: the Bloom filter SQLite 3.38-3.41.1 would
    # build from it)
    assert con.execute("SELECT count(*) FROM sqlite_stat1"
                       " WHERE tbl = 'traceloom_anchor_core'").fetchone() == (0,)
    plain = tmp_path / "plain.db"
    subprocess.run([str(cli), str(fixtures / "idle_evidence" / "adjacent_overlap"), "--output",
                    str(plain)], check=True, capture_output=True)
    with sqlite3.connect(plain) as c:
        assert c.execute("SELECT count(*) FROM sqlite_schema WHERE name ="
                         " 'traceloom_anchor_core_anchor_id'").fetchone() == (1,)
        assert c.execute("SELECT count(*) FROM sqlite_stat1"
                         " WHERE tbl = 'traceloom_anchor_core'").fetchone() == (0,)
        assert " ".join(r[3] for r in c.execute("EXPLAIN QUERY PLAN " + sql)).count(
            "USING INDEX traceloom_anchor_core_anchor_id (anchor_id=?)") == 1


# The node attribution by its definition: every (occurrence, anchor) pair of
# traceloom_viz_node_anchor (a node repeats its descendants' anchors), summed per node,
# category and level over the anchors' attributions.
NODE_BY_DEFINITION = """
SELECT (SELECT n.node_id FROM traceloom_node_core n WHERE n.node_n = na.node_n), na.db_idx,
       na.device_id, na.view_name, i.category, i.evidence_level, SUM(i.slice_count),
       SUM(i.duration_ns)
FROM traceloom_viz_node_anchor na
JOIN traceloom_anchor_idle_explanation i ON i.anchor_id = na.anchor_id
 AND i.db_idx = na.db_idx AND i.device_id = na.device_id
GROUP BY na.node_n, na.db_idx, na.device_id, na.view_name, i.category, i.evidence_level"""


@pytest.mark.parametrize("profile", ["idle_evidence/adjacent_overlap", "idle_evidence/event_loss",
                                     "exact_hlt/mono", "aclgraph_smoke/mono"])
def test_node_attributions_are_their_anchors_sums(cli, fixtures, tmp_path, profile):
    """traceloom_node_idle_explanation is stored by the idle stage (summed from running sums per
    category and level): its rows are exactly the sums over each node's (occurrence, anchor)
    pairs, nested nodes included, and its view reads the core with key lookups only."""
    out = tmp_path / "a.db"
    subprocess.run([str(cli), str(fixtures / profile), "--output", str(out), "--options",
                    json.dumps({"idle_evidence": {"collection_status": "complete"}})],
                   check=True, capture_output=True)
    con = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    want = sorted(con.execute(NODE_BY_DEFINITION).fetchall())
    got = sorted(con.execute("SELECT node_id, db_idx, device_id, view_name, category, evidence_level,"
                             " slice_count, duration_ns FROM traceloom_node_idle_explanation").fetchall())
    assert want and got == want
    # an anchor's time counts at every node above it: the roots hold all the anchors' time
    roots = con.execute("SELECT sum(i.duration_ns) FROM traceloom_node_idle_explanation i"
                        " JOIN traceloom_node_core n ON n.node_id = i.node_id WHERE n.depth = 0").fetchone()
    assert roots == con.execute("SELECT sum(duration_ns) FROM traceloom_anchor_idle_explanation").fetchone()
    plan = " ".join(r[3] for r in con.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM traceloom_node_idle_explanation"))
    assert "SCAN g" in plan and "anchor" not in plan and "AUTOMATIC" not in plan, plan
    assert "TEMP B-TREE" not in plan, plan


IDLE_VIEWS = ["traceloom_device_interval", "traceloom_stream_state", "traceloom_idle_explanation"]


def test_view_constants_are_the_runs(cli, fixtures, tmp_path):
    """The idle views spell the run id, collection status and the contract, rule and
    attribution versions per row; the run records them once (traceloom_run_metadata)."""
    con = analyse(cli, fixtures, tmp_path, "clock_drift")
    run = con.execute("SELECT run_id, contract_version, semantic_rules_version,"
                      " attribution_rule_version, collection_status FROM traceloom_run_metadata"
                      ).fetchall()
    assert len(run) == 1 and run[0][4] == "complete"
    for view in IDLE_VIEWS:
        got = con.execute(f"SELECT DISTINCT run_id, contract_version, semantic_rules_version,"
                          f" attribution_rule_version FROM {view}").fetchall()
        assert got == [run[0][:4]], view
    for view in ["traceloom_stream_state", "traceloom_idle_explanation"]:
        assert con.execute(f"SELECT DISTINCT collection_status FROM {view}").fetchall() == [("complete",)]
    # the host explanation of the case cites its host call and the explanation's lookup by owner
    # finds it
    (xid,), = con.execute("SELECT idle_explanation_id FROM traceloom_idle_explanation"
                          " WHERE category = 'host_sync_api_present'")
    assert con.execute("SELECT source_kind, relation, evidence_level, trace_event_id"
                       " FROM traceloom_evidence_link WHERE owner_kind = 'explanation'"
                       " AND owner_id = ?", (xid,)).fetchall() == [
        ("ascend_sqlite_hot_path", "temporal_overlap", "correlated", "")]


RUN_VIEWS = {"traceloom_device_interval": ["run_id"],
             "traceloom_stream_state": ["run_id", "collection_status"],
             "traceloom_idle_explanation": ["run_id", "collection_status"],
             "traceloom_evidence_link": ["source_kind"],
             "traceloom_anchor_idle_explanation": ["run_id"],
             "traceloom_node_idle_explanation": ["run_id"]}


def test_sole_run_is_read_once_per_statement(cli, fixtures, tmp_path):
    """With one run (one Ascend input) the idle views read the run's id, collection status and
    source kind through uncorrelated subqueries, which SQLite evaluates once per statement: the
    audit's windows and GROUP BYs compute the run id two or three times per row over millions
    of rows, a seek each with the per-row lookup alone (15% of them on the 1M profile)."""
    con = analyse(cli, fixtures, tmp_path, "clock_drift")
    for view, columns in RUN_VIEWS.items():
        for column in columns:
            steps = [r[3] for r in con.execute(f"EXPLAIN QUERY PLAN SELECT {column} FROM {view}")]
            assert any(s.startswith("SCALAR SUBQUERY") for s in steps), (view, column, steps)


def test_views_find_each_rows_run_among_several(cli, fixtures, tmp_path):
    """Two Ascend inputs are two runs: each row's run id, collection status and source kind is
    its own run's (the views' lookup by db_idx), and both report queries still pass."""
    multi = tmp_path / "multi"
    for n, case in enumerate(["adjacent_overlap", "event_loss"]):
        (multi / f"PROF_{n}").mkdir(parents=True)
        shutil.copy(fixtures / "idle_evidence" / case / "PROF_0" / "msprof_0.db",
                    multi / f"PROF_{n}" / f"msprof_{n}.db")
    out = tmp_path / "multi.db"
    subprocess.run([str(cli), str(multi), "--output", str(out), "--options",
                    json.dumps({"idle_evidence": {"collection_status": "complete"}})],
                   check=True, capture_output=True, text=True)
    con = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    runs = con.execute("SELECT db_idx, run_id, collection_status, source_kind"
                       " FROM traceloom_run_metadata ORDER BY db_idx").fetchall()
    assert [r[0] for r in runs] == [0, 1] and runs[0][1] != runs[1][1]
    names = {"run_id": 1, "collection_status": 2, "source_kind": 3}
    for view, columns in RUN_VIEWS.items():
        db_idx = "NULL" if view == "traceloom_evidence_link" else "db_idx"
        for column in columns:
            got = con.execute(f"SELECT DISTINCT {db_idx}, {column} FROM {view}"
                              " ORDER BY 1, 2").fetchall()
            if view == "traceloom_evidence_link":
                # links carry no db_idx in the view: both runs are Ascend hot-path inputs
                assert got == [(None, runs[0][3])], view
                continue
            want = sorted({(r[0], r[names[column]]) for r in runs})
            if view in ("traceloom_anchor_idle_explanation", "traceloom_node_idle_explanation"):
                assert got and set(got) <= set(want), (view, column, got)
            else:
                assert got == want, (view, column, got)
    q = ROOT.parent / "shared" / "reference" / "report-sql"
    with open(q / "idle-evidence-audit.sql") as sql:
        audit = subprocess.run(["sqlite3", "-bail", str(out)], stdin=sql, check=True,
                               capture_output=True, text=True).stdout.splitlines()
    # one line per run, in db_idx order
    assert [line.split("|")[0] for line in audit] == [runs[0][1], runs[1][1]], audit
    assert all(line.endswith("|PASS") for line in audit), audit


def test_idle_cores_store_only_ids_as_text(cli, fixtures, tmp_path):
    """The large idle tables hold integers and codes; the only stored text is each row's id
    (and an explanation's gap id, a link's owner id, and the table and key of a cited host call
    or marker): no run id, version, name or reason repeated per row, and no cited event's id
    (only ever probed with: the view computes it from event_n)."""
    con = analyse(cli, fixtures, tmp_path, "adjacent_overlap")
    want = {"traceloom_device_interval_core": ["interval_id"],
            "traceloom_stream_state_core": ["state_id"],
            "traceloom_idle_explanation_core": ["idle_explanation_id", "gap_interval_id"],
            "traceloom_evidence_link_core": ["owner_id", "source_table", "source_key"],
            "traceloom_anchor_idle_explanation_core": [],
            "traceloom_node_idle_explanation_core": []}
    for core, ids in want.items():
        cols = con.execute(f"SELECT name, type, hidden FROM pragma_table_xinfo('{core}')").fetchall()
        # hidden: 0 a plain column, 2 a VIRTUAL generated one, 3 a STORED generated one
        assert [n for n, t, hidden in cols if t == "TEXT" and hidden in (0, 3)] == ids, core
    # SQLite computes every generated column, VIRTUAL ones too, at each INSERT: the link core
    # keeps only the one its partial owner index names (the cited event's id is the view's)
    gen = con.execute("SELECT name FROM pragma_table_xinfo('traceloom_evidence_link_core')"
                      " WHERE hidden IN (2, 3)").fetchall()
    assert gen == [("owner_kind",)]
    # extents are stored as start and duration, and the views add them up
    for view, core, key in [("traceloom_device_interval", "traceloom_device_interval_core", "interval_id"),
                            ("traceloom_stream_state", "traceloom_stream_state_core", "state_id"),
                            ("traceloom_idle_explanation", "traceloom_idle_explanation_core",
                             "idle_explanation_id")]:
        assert "end_ns" not in [r[1] for r in con.execute(f"PRAGMA table_info('{core}')")]
        n, bad = con.execute(f"SELECT count(*), sum(v.end_ns != c.start_ns + c.duration_ns"
                             f" OR v.duration_ns != v.end_ns - v.start_ns) FROM {view} v"
                             f" JOIN {core} c ON c.{key} = v.{key}").fetchone()
        assert n > 0 and bad == 0, view


def test_cores_are_keyed_by_their_ids(cli, fixtures, tmp_path):
    """Intervals, stream states and explanations are WITHOUT ROWID tables keyed by their text
    id (one B-tree: a lookup by id is one descent, no separate id index), and every id is the
    one its integers spell."""
    con = analyse(cli, fixtures, tmp_path, "clock_drift")
    for core, key, spelled in [
            ("traceloom_device_interval_core", "interval_id",
             "'device-interval-d' || db_idx || '-dev' || device_id || '-' || interval_order"),
            ("traceloom_stream_state_core", "state_id",
             "'stream-state-d' || db_idx || '-dev' || device_id || '-s' || stream_id || '-'"
             " || state_order"),
            ("traceloom_idle_explanation_core", "idle_explanation_id",
             "'idle-explanation-d' || db_idx || '-dev' || device_id || '-' || explanation_order")]:
        assert con.execute("SELECT wr FROM pragma_table_list WHERE name = ?", (core,)).fetchone() == (1,)
        assert con.execute(f"SELECT name FROM pragma_table_info('{core}') WHERE pk > 0").fetchall() == [(key,)]
        n, = con.execute(f"SELECT count(*) FROM {core}").fetchone()
        assert n > 0 and con.execute(f"SELECT count(*) FROM {core} WHERE {key} = {spelled}").fetchone() == (n,)
    # each explanation's stored gap id is the id of its gap
    assert con.execute("SELECT count(*) FROM traceloom_idle_explanation x LEFT JOIN"
                       " traceloom_device_interval g ON g.interval_id = x.gap_interval_id"
                       " WHERE g.interval_kind IS NOT 'visible_productive_idle'"
                       " OR x.start_ns < g.start_ns OR x.end_ns > g.end_ns").fetchone() == (0,)


def test_audit_joins_are_lookups(cli, fixtures, tmp_path):
    """idle-evidence-audit joins links to their owners and gaps to their grouped explanations by
    text id: each must be an index lookup (a scan per row is minutes on the 1M profile)."""
    con = analyse(cli, fixtures, tmp_path, "adjacent_overlap")

    def plan(sql):
        return " ".join(r[3] for r in con.execute("EXPLAIN QUERY PLAN " + sql))
    for view, key in [("traceloom_device_interval", "interval_id"),
                      ("traceloom_stream_state", "state_id"),
                      ("traceloom_idle_explanation", "idle_explanation_id")]:
        p = plan(f"SELECT count(o.run_id) FROM traceloom_evidence_link l"
                 f" LEFT JOIN {view} o ON o.{key} = l.owner_id")
        assert f"USING PRIMARY KEY ({key}=?)" in p, p
    p = plan("SELECT count(*) FROM traceloom_idle_explanation e WHERE EXISTS (SELECT 1 FROM"
             " traceloom_evidence_link l WHERE l.owner_kind = 'explanation'"
             " AND l.owner_id = e.idle_explanation_id)")
    assert "traceloom_evidence_link_core_explanation (owner_id=?)" in p, p
    p = plan("SELECT count(x.n) FROM traceloom_device_interval g LEFT JOIN (SELECT run_id,"
             " gap_interval_id, count(*) AS n FROM traceloom_idle_explanation"
             " GROUP BY run_id, gap_interval_id) x ON x.run_id = g.run_id"
             " AND x.gap_interval_id = g.interval_id")
    assert "(run_id=? AND gap_interval_id=?)" in p, p


AUDIT = ROOT.parent / "shared" / "reference" / "report-sql" / "idle-evidence-audit.sql"

# The automatic indexes the audit's plan may hold: over its own per-run CTE results (one row per
# run), over its grouped explanations per gap (a materialized aggregate, looked up per gap), and
# over the tree's nodes (traceloom_viz_node, sql/views/30_structure.sql: not an idle relation).
AUDIT_AUTOMATIC_ALLOWED = ("AUTOMATIC COVERING INDEX (run_id=?) LEFT-JOIN",
                           "AUTOMATIC COVERING INDEX (run_id=? AND gap_interval_id=?) LEFT-JOIN",
                           "AUTOMATIC COVERING INDEX (node_id=? AND db_idx=? AND device_id=?)")
# Tables a correlated subquery of the audit may scan: the clock models (one row per device).
AUDIT_SCAN_IN_LOOP_ALLOWED = {"SCAN m"}


@pytest.mark.skipif(not AUDIT.exists(), reason="reference report queries not found")
def test_audit_plan_has_no_scan_in_a_loop(cli, fixtures, tmp_path):
    """The whole idle-evidence-audit, as shipped: every join of an idle view is a key or index
    lookup. No automatic index but the allowed ones, and no table scanned inside a correlated
    subquery (once per outer row) but the allowed ones."""
    con = analyse(cli, fixtures, tmp_path, "clock_drift")
    rows = con.execute("EXPLAIN QUERY PLAN " + AUDIT.read_text()).fetchall()
    parent = {i: p for i, p, _, _ in rows}
    detail = {i: d for i, _, _, d in rows}

    def in_loop(i):
        while i in parent:
            i = parent[i]
            if detail.get(i, "").startswith("CORRELATED"):
                return True
        return False
    automatic = [d for d in detail.values() if "AUTOMATIC" in d]
    assert all(d.endswith(AUDIT_AUTOMATIC_ALLOWED) for d in automatic), automatic
    # an uncorrelated subquery inside a correlated one (the views' sole run: its id, status,
    # source kind) is evaluated once per statement, not per outer row: it may scan the runs
    once = {i for i in detail if detail[i].startswith("SCAN traceloom_run_metadata")
            and detail.get(parent[i], "").startswith("SCALAR SUBQUERY")}
    scans = [detail[i] for i in detail
             if detail[i].startswith("SCAN ") and in_loop(i) and i not in once]
    assert set(scans) <= AUDIT_SCAN_IN_LOOP_ALLOWED, scans
    # the lookups of owners and markers it makes are the keys and indexes of the idle storage
    plan = " ".join(detail.values())
    # the root totals read the stored node attributions (no occurrence-to-anchor join)
    assert "traceloom_anchor_idle_explanation_core_anchor" not in plan
    assert "traceloom_viz_node_anchor" not in plan and "SCAN o" not in plan, plan
    for lookup in ["USING PRIMARY KEY (interval_id=?)", "USING PRIMARY KEY (state_id=?)",
                   "USING PRIMARY KEY (idle_explanation_id=?)",
                   "traceloom_clock_marker_source (source_table=? AND source_key=?)",
                   "traceloom_task_api_link_api (api_event_id=?)"]:
        assert lookup in plan, lookup


def test_view_names_are_the_stages(cli, fixtures, tmp_path):
    """Where a view names a code with a CASE (explanations, stream states, a link's relation:
    read row by row by the audit), each code of the stage's table traceloom_idle_name gets its
    name: one row per code is added to a copy of an analysis and read back through the view."""
    analyse(cli, fixtures, tmp_path, "adjacent_overlap").close()
    con = sqlite3.connect(tmp_path / "adjacent_overlap.db")
    names = {}
    for kind, code, name in con.execute("SELECT kind, code, name FROM traceloom_idle_name"):
        names.setdefault(kind, {})[code] = name
    assert len(names["category"]) == 7 and len(names["level"]) == 3
    assert len(names["relation"]) == 5 and len(names["state"]) == 10 and names["rule"]
    for code in range(10):
        con.execute("INSERT INTO traceloom_stream_state_core VALUES(0, 99, 0, ?1, 0, 1, ?1, 0, 1, 1,"
                    " 'probe-' || ?1)", (code,))
        con.execute("INSERT INTO traceloom_idle_explanation_core VALUES(0, 99, ?1, 0, 0, 1, ?2, ?3,"
                    " ?4, 0, 0, 'probe-' || ?1, 'gap')", (code, code % 7, code % 3, code % 5))
        con.execute("INSERT INTO traceloom_evidence_link_core(owner_kind_n, owner_id, db_idx,"
                    " evidence_ordinal, relation, level, state) VALUES(1, 'probe', 0, ?1, ?2, ?3, ?1)",
                    (code, code % 5, code % 3))
    got = con.execute("SELECT state FROM traceloom_stream_state WHERE device_id = 99"
                      " ORDER BY state_order").fetchall()
    assert [g for g, in got] == [names["state"][c] for c in range(10)]
    got = con.execute("SELECT category, evidence_level, evidence_relation FROM"
                      " traceloom_idle_explanation WHERE device_id = 99 ORDER BY explanation_order")
    assert got.fetchall() == [(names["category"][c % 7], names["level"][c % 3],
                               names["relation"][c % 5]) for c in range(10)]
    got = con.execute("SELECT relation, evidence_level, state FROM traceloom_evidence_link"
                      " WHERE owner_id = 'probe' ORDER BY evidence_ordinal")
    assert got.fetchall() == [(names["relation"][c % 5], names["level"][c % 3], names["state"][c])
                              for c in range(10)]

"""The 34 reference report queries (../shared/reference/report-sql) on our analyses.

Each query runs unchanged through the sqlite3 shell (`sqlite3 -bail analysis.db < Q.sql`)
on every fixture analysis. Then each query is checked on at least one fixture against values
worked out from the fixture's rows (the derivation is in the comment next to each
expectation): minimal_smoke and exact_hlt (../shared/fixtures/ascend_sqlite), and the report
fixtures tests/fixtures/reports/host_activity.sql and reconcile.sql, and the idle-evidence
case adjacent_overlap. Node ids (N00x) are not asserted where the tree's node model decides
them; labels, symbols, occurrences and times are.
"""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("TRACELOOM_FIXTURES", ROOT.parent / "shared" / "fixtures"))
QUERIES = ROOT.parent / "shared" / "reference" / "report-sql"
NAMES = sorted(p.stem for p in QUERIES.glob("*.sql"))

PROFILES = {
    "minimal": ("minimal_smoke/mono", None),
    "hlt": ("exact_hlt/mono", None),
    "host": ("reports/host_activity", None),
    "recon": ("reports/reconcile", None),
    "aux": ("gen/ascend_s6_l4_k6_aux", None),
    "nsys": ("gen/nsys_s6_l4_k6_aux/profile.sqlite", None),
    "idle": ("idle_evidence/adjacent_overlap", {"idle_evidence": {"collection_status": "complete"}}),
    # the other layouts and providers: every query must run on them too
    "split": ("exact_hlt/split", None),
    "hlt_nocap": ("exact_hlt/mut_incomplete_compute_schema", None),
    "split_golden": ("split_golden/split", None),
    "nsys_graph": ("nsys/nsys_graph.sqlite", None),
    "nsys_graphtrace": ("nsys/nsys_graphtrace.sqlite", None),
    "kineto": ("kineto/gpu_basic.pt.trace.json", None),
    "hygon": ("hygon/hipprof.db", None),
    "aclgraph": ("aclgraph_smoke/mono", None),
}


@pytest.fixture(scope="module")
def dbs(cli, fixtures, tmp_path_factory):
    out = {}
    tmp = tmp_path_factory.mktemp("reports")
    for name, (rel, options) in PROFILES.items():
        db = tmp / f"{name}.db"
        cmd = [str(cli), str(fixtures / rel), "--output", str(db)]
        if options:
            cmd += ["--options", json.dumps(options)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        out[name] = db
    return out


def run(db, name):
    """The query's rows as the sqlite3 shell prints them (cells split on '|')."""
    with open(QUERIES / f"{name}.sql") as sql:
        done = subprocess.run(["sqlite3", "-bail", str(db)], stdin=sql, capture_output=True,
                              text=True)
    assert done.returncode == 0, f"{name}: {done.stderr}"
    return [line.split("|") for line in done.stdout.splitlines() if line]


def test_the_34_queries():
    assert len(NAMES) == 34


@pytest.mark.parametrize("profile", PROFILES)
def test_every_query_runs_unchanged(dbs, profile):
    for name in NAMES:
        run(dbs[profile], name)


# ---- host activity and synchronization (tests/fixtures/reports/host_activity.sql) ----

def test_anchor_host_activity(dbs):
    # The first supported window: MatMul's launch aclnnMatmul ends at 950, Add's aclnnAdd
    # starts at 1200; thread 7's calls inside it, in start order; thread 8's aclrtMemset
    # is another thread's call.
    rows = run(dbs["host"], "anchor-host-activity")
    assert [r[2:6] for r in rows] == [["supported_ordered", "same_thread", "950", "1200"]] * 3
    assert [(r[7], r[9], r[10], r[12], r[13], r[14], r[15]) for r in rows] == [
        ("aclrtMemcpyAsync", "960", "1000", "0.04", "contained", "CANN_API", "2"),
        ("aclrtSynchronizeStream", "1010", "1150", "0.14", "contained", "CANN_API", "4"),
        ("HcclCommInitRoot", "1150", "1190", "0.04", "contained", "CANN_API", "5")]


def test_node_host_activity(dbs):
    # The highest-cost repeated atom is MatMul (2 x 100 ns + 600 ns idle before the second);
    # after its first occurrence comes the window [950,1200) to Add (0.25 us) holding the
    # synchronize (140 ns), the internal HcclCommInitRoot (40) and the memcpy (40).
    rows = run(dbs["host"], "node-host-activity")
    assert [(r[2], r[3], r[6], r[8], r[9], r[12], r[13], r[14], r[15], r[16]) for r in rows] == [
        ("1", "1", "Add", "0.25", "after_anchor_interval", api, "1", us, "same_thread",
         "supported_ordered")
        for api, us in (("aclrtSynchronizeStream", "0.14"), ("HcclCommInitRoot", "0.04"),
                        ("aclrtMemcpyAsync", "0.04"))]


def test_runtime_device_relations(dbs):
    # Nine CANN_API calls: the five whose connection id a task carries are one-to-one exact
    # relations; the four others (memcpy, memset, synchronize, HcclCommInitRoot) are open.
    rows = run(dbs["host"], "runtime-device-relations")
    got = sorted((r[2], r[3], r[7], r[11], r[12]) for r in rows)
    assert got == sorted([
        ("aclnnMatmul", "900", "1000", "supported_exact", "one_to_one"),
        ("aclnnAdd", "1200", "1300", "supported_exact", "one_to_one"),
        ("aclrtStreamWaitEvent", "1700", "1720", "supported_exact", "one_to_one"),
        ("aclnnMatmul", "1900", "2000", "supported_exact", "one_to_one"),
        ("aclnnAdd", "2200", "2300", "supported_exact", "one_to_one"),
        ("aclrtMemcpyAsync", "960", "", "unmatched_runtime_call", "open"),
        ("aclrtMemset", "1000", "", "unmatched_runtime_call", "open"),
        ("aclrtSynchronizeStream", "1010", "", "unmatched_runtime_call", "open"),
        ("HcclCommInitRoot", "1150", "", "unmatched_runtime_call", "open")])
    assert all(r[1] == "ascend" and r[9] == "ascend_connection_id" for r in rows)


def test_synchronization_actions(dbs):
    # The EVENT_WAIT task [1720,1760) (TASK row 3) and its aclrtStreamWaitEvent [1700,1710)
    # (CANN_API row 7) share connection id 5.
    rows = run(dbs["host"], "synchronization-actions")
    assert [r[1:] for r in rows] == [[
        "ascend", "EVENT_WAIT", "aclrtStreamWaitEvent", "0.01", "1720", "0.04",
        "ascend_connection_id", "direct_provider_identifier", "supported_exact", "one_to_one",
        "CANN_API", "7", "TASK", "3"]]
    # minimal_smoke: an EVENT_WAIT task with no runtime call is still a synchronization action
    assert [r[2:7] for r in run(dbs["minimal"], "synchronization-actions")] == [
        ["EVENT_WAIT", "", "", "170", "0.04"]]


def test_structure_bubble_statistics(dbs):
    # Bubbles: Add 1300-1100 = 200 ns and 2300-2100 = 200 ns; MatMul 2000-1400 = 600 ns.
    # Add's first window [950,1200) holds the memcpy (memory, 40 ns) and the synchronize
    # (140 ns), its second [1950,2200) none: each family is present in 1 of 2 bubbles.
    # MatMul's window [1250,1900) holds aclrtStreamWaitEvent (wait, 10 ns).
    rows = run(dbs["host"], "structure-bubble-statistics")
    assert [r[1:] for r in rows] == [
        ["MatMul", "1", "1", "0", "0", "0", "1.0", "0.6", "0.6", "wait", "1", "1.0", "1.0",
         "1.0", "1.0", "0.01"],
        ["Add", "2", "2", "0", "0", "0", "1.0", "0.4", "0.2", "memory", "1", "0.5", "0.5",
         "0.5", "0.5", "0.02"],
        ["Add", "2", "2", "0", "0", "0", "1.0", "0.4", "0.2", "synchronize", "1", "0.5", "0.5",
         "0.5", "0.5", "0.07"]]
    # minimal_smoke: one bubble of 5 ns before the AllReduce op [165,215) after MatMul
    # [100,160); no runtime calls, so its host endpoints are missing.
    assert [r[1:10] for r in run(dbs["minimal"], "structure-bubble-statistics")] == [
        ["AllReduce", "1", "0", "1", "0", "0", "0.0", "0.005", "0.005"]]


def test_structure_bubble_drilldown(dbs):
    # The largest bubble is the 600 ns before the second MatMul; its host interval runs from
    # the end of aclnnAdd (1250) to the start of aclnnMatmul (1900), and holds one public call.
    rows = run(dbs["host"], "structure-bubble-drilldown")
    assert [(r[0], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[11], r[12], r[13], r[14],
             r[16], r[17]) for r in rows] == [
        ("bubble-anchor-2", "2", "Add", "MatMul", "0.6", "supported_ordered", "1250", "1900",
         "0.65", "aclrtStreamWaitEvent", "wait", "1700", "1710", "0.01", "contained")]


# ---- evidence roles ----

def test_evidence_role_event(dbs):
    # The first event by time is MatMul TASK row 1 [1000,1100): an anchor by the matmul rule,
    # placed as its normalized event and as anchor-0, which every enclosing node occurrence
    # covers (root, the repeat, the MatMul atom: one occurrence each).
    rows = run(dbs["host"], "evidence-role-event")
    assert {tuple(r[2:4] + r[8:12] + [r[19]]) for r in rows} == {
        ("TASK", "1", "anchor", "identity", "supported", "matched_positive_rule", "100")}
    assert rows[0][6] == "any.anchor.blob.matmul.b362963b"
    assert [(r[20], r[21], r[24]) for r in rows] == [
        ("normalized_event", "event-0", "")] + [("anchor", "anchor-0", "1")] * 3


def test_evidence_role_member(dbs):
    # The first placement by (kind, id) is anchor-0, the MatMul task TASK row 1 (100 ns).
    assert [r[:2] + r[4:] for r in run(dbs["host"], "evidence-role-member")] == [[
        "anchor", "anchor-0", "anchor", "traceloom.default.accelerator-task-projection",
        "any.anchor.blob.matmul.b362963b", "supported", "matched_positive_rule", "100",
        "TASK", "1"]]


def test_evidence_role_omissions(dbs):
    # The EVENT_WAIT task [1720,1760) is auxiliary work linked to the next anchor (the second
    # MatMul, anchor-2).
    assert [r[0:1] + r[2:] for r in run(dbs["host"], "evidence-role-omissions")] == [[
        "anchor-2", "auxiliary", "ascend.aux.task.type.event.wait.28ab0f94", "supported",
        "matched_positive_rule", "40", "TASK", "3"]]


def test_evidence_role_unknown(dbs):
    # No rule knows the Add operator: both Add tasks (TASK rows 2 and 5) stay identity-bearing
    # unknown anchors (supported as unknown-first), in the root's one occurrence.
    rows = run(dbs["host"], "evidence-role-unknown")
    assert [(r[1], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10]) for r in rows] == [
        ("1", "unknown_anchor", "fallback.unknown_observation", "supported_unknown_first",
         "unmatched_observation_unknown_first", "Add", "100", "TASK", key) for key in ("2", "5")]


def test_evidence_role_issues(dbs):
    # exact_hlt: the last NOTIFY_WAIT [1415,1420) and NOTIFY_RECORD [1418,1420) (TASK rows 67
    # and 70) come after the last anchor: retained, placed nowhere.
    rows = run(dbs["hlt"], "evidence-role-issues")
    assert [(r[1], r[2], r[4], r[6], r[11], r[12]) for r in rows] == [
        ("omitted_event_without_auxiliary_link", "retained_unplaced", "auxiliary",
         rule, "TASK", key)
        # the rules/classification.yaml rules of task types NOTIFY_WAIT and NOTIFY_RECORD
        for rule, key in (("ascend.aux.task.type.notify.wait.717e33e3", "67"),
                          ("ascend.aux.task.type.notify.record.21a93893", "70"))]


def test_evidence_role_cost_coverage(dbs):
    # exact_hlt: 14 launches of 5 tasks (MODEL_EXECUTE 10, NOTIFY_WAIT 5, NOTIFY_RECORD 2 ns,
    # auxiliary by the rules; 2 KERNEL_AIVEC of 1 ns, unknown anchors, no rule matched them).
    # The 12 launches of the 4 promoted replay units lie inside their units' spans: their 60
    # tasks (12 x 19 = 228 ns) and the 4 unit events (220 ns each) are protected boundaries,
    # never identity-bearing. Of the 2 tail launches' tasks, the 6 auxiliary ones are supported
    # (20 + 5 + 2 = 27 ns) but the last wait and record (7 ns), after the last anchor, unplaced;
    # the 4 kernels stay unknown anchors (supported as unknown-first, the reference's word).
    rows = run(dbs["hlt"], "evidence-role-cost-coverage")
    assert [r[:1] + r[3:] for r in rows] == [
        ["any", "protected_boundary", "supported", "4", "880", "0", "880"],
        ["ascend", "auxiliary", "retained_unplaced", "2", "7", "0", "7"],
        ["ascend", "auxiliary", "supported", "4", "27", "0", "27"],
        ["ascend", "protected_boundary", "supported", "60", "228", "0", "228"],
        ["ascend", "unknown_anchor", "supported_unknown_first", "4", "4", "4", "0"]]


def test_symbol_normalization_audit(dbs):
    # minimal_smoke: MatMul keeps its operator type; the communication op hcclAllReduce
    # (type hcom_allReduce_) is normalized to AllReduce by the communication rule, and is
    # observed by its name (the reference's; recovery.md 2.4 `selected`). The reason
    # codes are the reference's vocabulary (traceloom 0.1.4): an anchor no rule matched keeps
    # its symbol with `no_explicit_rule_identity_preserved`.
    rows = run(dbs["minimal"], "symbol-normalization-audit")
    assert [r[4:] for r in rows] == [
        ["anchor-0", "MatMul", "task.op_type", "MatMul", "fallback.identity-preserve",
         "identity", "no_explicit_rule_identity_preserved", "0.06", "TASK", "1"],
        ["anchor-1", "hcclAllReduce", "communication.op_name", "AllReduce",
         "collective.communication.allreduce-alias", "canonicalized", "explicit_rule_match", "0.05",
         "COMMUNICATION_OP", "1"]]


def test_symbol_normalization_audit_replay_units(dbs):
    # exact_hlt promotes 12 launches (the prefill composition and three decode ones, head /
    # layer / tail each): their anchors are named by composition slot (ACLH, ACLL, ACLT), no rule
    # derived that from an observed name (outcome synthetic), and they have no event: the
    # source is the replay unit's table, ACLGRAPH_REPLAY_UNIT, key 0 (no row of it: the unit
    # events are keyed from 1), as in TraceLoom 0.1.4. Each launch anchor lasts 20 ns
    # (MODEL_EXECUTE 100..120, 200..220, ...).
    rows = [r for r in run(dbs["hlt"], "symbol-normalization-audit") if r[9] == "synthetic"]
    assert sorted(r[5] for r in rows) == sorted(["ACLH", "ACLL", "ACLT"] * 4)
    assert {(r[5] == r[7], r[6], r[8], r[10], r[11], r[12], r[13]) for r in rows} == {
        (True, "analysis.replay_composition_slot", "analysis.replay-composition-slot",
         "analysis_generated_structural_symbol", "0.02", "ACLGRAPH_REPLAY_UNIT", "0")}


# ---- event reconciliation (tests/fixtures/reports/reconcile.sql) ----

def test_event_reconciliation_audit(dbs):
    rows = run(dbs["recon"], "event-reconciliation-audit")
    got = {}
    for r in rows:
        got.setdefault((r[1], r[2]), []).append((r[13], r[16], r[17], r[4]))
    # rows 1-2: envelope and contained detail of connection 801; row 3 alone; rows 4-6 three
    # candidates of 803; rows 7-8 a detail sticking out of its envelope (50 of 150 ns inside);
    # the MC2 op [4100,4300) inside task row 9 [4000,4500); the op [6000,6100) alone.
    assert got == {
        ("reconciled", "unique_identity_pair_with_contained_detail"): [
            ("0.1", "TASK", "1", "timing_envelope"), ("0.099", "TASK", "2", "semantic_detail")],
        ("independent", "missing_semantic_detail_peer"): [
            ("0.1", "TASK", "3", "independent_candidate")],
        ("ambiguous", "non_unique_or_incompatible_candidates"): [
            ("0.098", "TASK", "6", "conflicting_candidate"),
            ("0.099", "TASK", "5", "conflicting_candidate"),
            ("0.1", "TASK", "4", "conflicting_candidate")],
        ("conflict", "insufficient_interval_containment"): [
            ("0.1", "TASK", "7", "conflicting_candidate"),
            ("0.15", "TASK", "8", "conflicting_candidate")],
        ("reconciled", "unique_provider_observation_with_containing_task"): [
            ("0.2", "COMMUNICATION_OP", "1", "provider_detail"),
            ("0.5", "TASK", "9", "semantic_detail")],
        ("independent", "missing_containing_task_peer"): [
            ("0.1", "COMMUNICATION_OP", "2", "independent_candidate")]}
    envelope = next(r for r in rows if r[4] == "timing_envelope")
    # the envelope contributes timing and cost, the detail the symbol (Add)
    assert envelope[5:8] == ["1", "0", "1"] and envelope[12] == "Add"
    # each member shows its own name: the MC2 op its opName, the task its operator type
    assert [(r[11], r[12]) for r in rows if r[1] == "reconciled" and r[16] != "TASK" or
            r[4] == "semantic_detail" and r[17] == "9"] == [
        ("MatmulAllReduceMc2AicpuKernel_1", "MatmulAllReduce"),
        ("MatmulAllReduce", "MatmulAllReduce")]


# ---- replay surfaces and structural units (exact_hlt) ----
# exact_hlt: 14 aclmdlRIExecuteAsync launches; models 10, 11, 12 (prefill head, layer, tail)
# once, then 7, 8, 9 three times (decode), then 7 and 8 again; every launch's body is two
# 1 ns KERNEL_AIVEC tasks (its operator and AuxGraphOp) between its MODEL_EXECUTE [s,s+10)
# and the NOTIFY_WAIT [s+15,s+20).

def test_cuda_graph_envelope(dbs):
    rows = run(dbs["hlt"], "cuda-graph-envelope")
    # one envelope per replay unit, as the reference: the prefill unit (models 10, 11, 12) and
    # three decode units (7, 8, 9), each from its first launch's start to its last launch's
    # end (3 launches 100 ns apart, 20 ns each: 0.22 us), on its first completion record's
    # stream (42 for the prefill model, 36 for decode), named by its graph template (prefill
    # 0, decode 1) and itself, enclosing every task of its interval: per launch MODEL_EXECUTE
    # (10 ns), NOTIFY_WAIT (5), NOTIFY_RECORD (2) and 2 body kernels (1 ns each), 15 tasks and
    # 0.057 us, of which the 6 kernels (0.006 us) are device work
    assert len(rows) == 4
    assert [r[2] for r in rows] == ["0", "1", "2", "3"]
    assert [r[4] for r in rows] == ["aclgraph-replay-unit-%d" % u for u in range(4)]
    assert [r[5] for r in rows] == ["aclgraph-template-0"] + ["aclgraph-template-1"] * 3
    assert [r[6] for r in rows] == ["42", "36", "36", "36"]
    assert {tuple(r[7:12]) for r in rows} == {("0.22", "15", "0.057", "6", "0.006")}


def test_cuda_graph_envelope_nsys(dbs):
    # nsys_graph: three launches (correlation 500-502) each replay kernels of graph nodes
    # 201-203 (25 us each) then a memcpy of node 204 (5 us) on stream 13: each envelope spans
    # the first kernel's start to the memcpy's end (95 us) and encloses 4 events (80 us), all
    # device work (the 3 kernels and the memcpy, as the reference counts them); a unit's
    # execution id is its graph template (the three launches replay one graph: template 0)
    rows = run(dbs["nsys_graph"], "cuda-graph-envelope")
    assert rows and {tuple(r[6:12]) for r in rows} == {("13", "95.0", "4", "80.0", "4", "80.0")}
    assert [(r[1], r[2]) for r in rows] == [("cuda_graph_replay", str(i)) for i in range(3)]
    assert {r[4] for r in rows} == {"native-graph-template-0"}


def test_event_graph_node_occurrences(dbs):
    # the first body task is AuxGraphOp [116,117) (TASK row 4) of the first launch's anchor
    rows = run(dbs["hlt"], "event-graph-node-occurrences")
    assert [(r[0], r[1], r[5], r[6], r[10], r[11]) for r in rows] == [
        ("event-3", "AuxGraphOp", "1", "anchor-0", "TASK", "4")]


def test_node_graph_body_members(dbs):
    # the first launch's members: AuxGraphOp (row 4) and PrefillHeadOp (row 3), both [116,117)
    rows = run(dbs["hlt"], "node-graph-body-members")
    assert [(r[2], r[8], r[11], r[12], r[13]) for r in rows] == [
        ("anchor-0", "AuxGraphOp", "TASK", "4", "0.001"),
        ("anchor-0", "PrefillHeadOp", "TASK", "3", "0.001")]


def test_node_replay_cost_members(dbs):
    # the two members of the first launch share its body task-sum (2 ns) half each (500000 ppm)
    rows = run(dbs["hlt"], "node-replay-cost-members")
    assert [(r[5], r[7], r[11], r[16], r[18], r[19]) for r in rows] == [
        ("graph-body-member-0", "first", "AuxGraphOp", "500000", "TASK", "4"),
        ("graph-body-member-1", "overlaps_previous", "PrefillHeadOp", "500000", "TASK", "3")]


def test_node_replay_cost_members_cuda(dbs):
    # nsys_graph: the first launch (correlation 500) replays the kernels of graph nodes 201-203,
    # sm90_xmma_gemm..., rms_norm_kernel, vectorized_elementwise_kernel (25 us each), then the
    # memcpy of node 204 (DtoD, 2048 bytes, 5 us): a CUDA member is named by its own name, the
    # kernel's short name as Nsight records it (the name its body signature compares), as in
    # TraceLoom 0.1.4; the copy by its label (recovery.md 7.2). The body's task-sum is 80 us.
    rows = run(dbs["nsys_graph"], "node-replay-cost-members")
    assert [(r[11], r[12], r[15], r[16]) for r in rows] == [
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
         "execute_segment_k_off_kernel__5x_cublas", "compute", "25000", "312500"),
        ("rms_norm_kernel", "compute", "25000", "312500"),
        ("vectorized_elementwise_kernel", "compute", "25000", "312500"),
        ("CudaMemcpy kind=8 bytes=2048", "data_move", "5000", "62500")]
    # the cost aggregates (one per body position, over the 3 launches) carry the same names
    assert [(r[5], r[6], r[8]) for r in run(dbs["nsys_graph"], "replay-cost-hotspots")] == [
        ("0", rows[0][11], "3"), ("1", "rms_norm_kernel", "3"),
        ("2", "vectorized_elementwise_kernel", "3"), ("3", "CudaMemcpy kind=8 bytes=2048", "3")]


def test_replay_cost_hotspots(dbs):
    # 12 aggregates: per (template, slot) the operator and AuxGraphOp; the decode template's
    # run three times (3 members each), the prefill one once; each member is half its body.
    # Templates are numbered from 0 in the order their units first run: prefill 0, decode 1
    rows = run(dbs["hlt"], "replay-cost-hotspots")
    assert len(rows) == 12
    assert sorted((r[1], r[2], r[6], r[8]) for r in rows) == sorted(
        [("0", slot, op, "1") for slot, ops in
         (("head", "PrefillHeadOp"), ("layer", "PrefillLayerOp"), ("tail", "PrefillTailOp"))
         for op in (ops, "AuxGraphOp")] +
        [("1", slot, op, "3") for slot, ops in
         (("head", "HeadOp"), ("layer", "LayerOp"), ("tail", "TailOp"))
         for op in (ops, "AuxGraphOp")])
    assert {r[13] for r in rows} == {"500000"}


def test_replay_cost_explain(dbs):
    # Every aggregate's median is 1 ns: the query takes the first by aggregate_id. Aggregates
    # are numbered by (template, device, slot, body, stream, position), as the reference
    # numbers them (recovery.md 7.3): the prefill head's PrefillHeadOp runs on stream 42 (TASK
    # row 3), its AuxGraphOp on stream 43 (row 4), so PrefillHeadOp's aggregate is the first.
    rows = run(dbs["hlt"], "replay-cost-explain")
    assert [(r[2], r[8], r[14], r[15], r[16]) for r in rows] == [
        ("PrefillHeadOp", "graph-launch-0", "event-2", "TASK", "3")]


def test_structural_composition(dbs):
    # the prefill launch group once (3 anchors), the decode group three times folded into one
    # unit (9 anchors), then the two launches after the last full decode group, which are
    # not replayed and leave their 4 body tasks as anchors: an open suffix
    rows = run(dbs["hlt"], "structural-composition")
    assert [(r[0], r[2], r[3], r[6], r[7], r[8], r[14], r[15]) for r in rows] == [
        ("0", "graph_unit", "1", "3", "3", "graph-template-0", "exact", "direct_exact_graph_unit"),
        ("1", "graph_unit", "3", "9", "9", "graph-template-1", "exact", "direct_exact_graph_unit"),
        ("2", "unrecognized", "1", "4", "4", "unavailable", "unrecognized_open_suffix",
         "open_trace_suffix")]
    audit, = run(dbs["hlt"], "structural-composition-audit")
    assert audit[-1] == "PASS" and audit[:2] == ["3", "2"]


def test_reconstruction_capability_matrix(dbs):
    # exact_hlt carries launches with replay evidence; minimal_smoke has no graph evidence
    row, = run(dbs["minimal"], "reconstruction-capability-matrix")
    assert row[0] == "ascend_sqlite_hot_path" and row[2:6] == ["not_observed"] * 4
    row, = run(dbs["hlt"], "reconstruction-capability-matrix")
    assert row[2:5] == ["evidence_incomplete", "available", "available"]
    # exact_hlt without TaskInfo's compute identity: no body task can be named, so every one of
    # the 14 launches lacks body capability, and each of the 5 regions (the prefill prefix, the
    # three decode periods, the two-launch tail) is missing body capability, none an incomplete
    # tail: the launch's own gate comes first (recovery.md 7.1 step 3), as in TraceLoom 0.1.4
    row, = run(dbs["hlt_nocap"], "reconstruction-capability-matrix")
    assert row[2:] == ["capability_incomplete", "unavailable", "available", "host_submission_order",
                       "5", "0", "5", "5", "0", "0", "0", "0", "0", "0", "0"]


# ---- tree queries (minimal_smoke and host_activity) ----
# minimal_smoke: MatMul [100,160), then the communication op AllReduce [165,215) (5 ns idle).

def test_tree_map(dbs):
    rows = run(dbs["minimal"], "tree-map")
    assert [r[1:] for r in rows] == [
        ["Seq", "0", "1", "0.115", "0.0", "0.115"],
        ["MatMul", "1", "1", "0.06", "0.0", "0.06"],
        ["AllReduce", "1", "1", "0.055", "0.0", "0.055"]]


def test_semantic_tree_readable(dbs):
    # host_activity: two iterations of MatMul, Add (1000..2400 = 1.4 us; MatMul 2 x 100 ns
    # + 600 ns idle before the second, Add 2 x (100 + 200 idle))
    # The readable lines in TraceLoom 0.1.4's format (the same four lines there): the root
    # is a sequence (Seq), the Repeat x2 holds the two atoms.
    lines = ["|".join(r) for r in run(dbs["host"], "semantic-tree-readable")]
    assert lines == [
        "- [N001] N001 Seq | Seq | anchors=4 total_us=1.400",
        "  - [N001/N002] N002 Repeat x2 | Rep x2 | anchors=4 total_us=1.400",
        "    - [N001/N002/N003] N003 Atom | MatMul | anchors=2 total_us=0.800",
        "    - [N001/N002/N004] N004 Atom | Add | anchors=2 total_us=0.600"]


def test_repeat_overview_and_children(dbs):
    rows = run(dbs["host"], "repeat-overview")
    assert [r[2:] for r in rows] == [["repeat", "Repeat", "2", "1", "4", "1.4", "0.7", "0.4",
                                      "0.04"]]
    assert [r[1:] for r in run(dbs["host"], "repeat-children")] == [
        # kind atom for a leaf position, as in TraceLoom 0.1.4
        ["2", "atom", "Atom", "", "2", "2", "0.8", "0.4"],
        ["2", "atom", "Atom", "", "2", "2", "0.6", "0.3"]]


def test_repeat_overview_replay_units(dbs):
    # exact_hlt: the three decode units repeat (Repeat x3, one occurrence, 9 launch anchors of
    # 3 launches each); a replay-unit anchor has no event, so the raw anchor time the node sums
    # is 0 (TraceLoom 0.1.4 sums the anchors' events), and no auxiliary event is linked.
    rows = run(dbs["hlt"], "repeat-overview")
    assert [(r[2], r[3], r[4], r[5], r[6], r[9], r[10]) for r in rows] == [
        ("repeat", "Repeat", "3", "1", "9", "0.0", "0.0")]


def test_node_occurrences_and_events(dbs):
    # the root's one occurrence covers the four anchors [1000,2400): 400 ns compute,
    # 1000 ns idle, 40 ns auxiliary (the EVENT_WAIT)
    assert [r[1:] for r in run(dbs["host"], "node-occurrences")] == [
        ["1", "", "1", "4", "4", "1000", "2400", "1.4", "0.4", "0.0", "1.0", "0.04"]]
    rows = run(dbs["host"], "node-events")
    assert [(r[4], r[6], r[7], r[9], r[10]) for r in rows] == [
        ("MatMul", "TASK", "1", "1000", "1100"), ("Add", "TASK", "2", "1300", "1400"),
        ("MatMul", "TASK", "4", "2000", "2100"), ("Add", "TASK", "5", "2300", "2400")]


def test_node_cost_breakdown(dbs):
    # root: 1.4 us, compute 0.4, idle 1.0, aux 0.04
    row, = run(dbs["host"], "node-cost-breakdown")
    assert row[4:8] == ["Seq", "", "1", "1.4"] and row[9:14] == ["0.4", "0.0", "1.0", "0.4",
                                                                   "0.04"]


def test_anchor_cost_breakdown_and_aux(dbs):
    # anchor 3 (second MatMul): 600 ns idle before it + 100 compute = 0.7, with the
    # 40 ns EVENT_WAIT as its auxiliary work
    rows = run(dbs["host"], "anchor-cost-breakdown")
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        ("1", "MatMul", "0.1", "0.1"), ("2", "Add", "0.3", "0.1"), ("3", "MatMul", "0.7", "0.1"),
        ("4", "Add", "0.3", "0.1")]
    assert [r[:5] for r in run(dbs["host"], "anchor-aux")] == [["3", "MatMul", "compute", "1",
                                                                  "0.04"]]


def test_idle_evidence_queries(dbs):
    # adjacent_overlap (ground_truth.json): the 3000 ns gap is fully explained
    summary = run(dbs["idle"], "idle-evidence-summary")
    assert sum(int(r[7]) for r in summary) == 3000
    audit, = run(dbs["idle"], "idle-evidence-audit")
    assert audit[-1] == "PASS"


@pytest.mark.parametrize("profile", PROFILES)
def test_one_call_domain_per_source(dbs, profile):
    """Host windows look a call's (provider, clock domain) up once per source database: every
    reader gives all the calls of one source one provider."""
    import sqlite3
    con = sqlite3.connect(f"file:{dbs[profile]}?mode=ro", uri=True)
    assert con.execute(
        "SELECT count(*) FROM (SELECT db_idx, source_id FROM traceloom_runtime_call"
        " GROUP BY db_idx, source_id HAVING count(DISTINCT provider || '/' || clock_domain) > 1)"
    ).fetchone() == (0,)

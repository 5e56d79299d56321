"""The CLI options of the reference TraceLoom that ours has (docs/PARITY.md, Options):
--loop-tree-view, --compat-db-out, --extend-*-rules, --structural-order, and the clear
refusals of what ours does not do (--structural-order host-launch,
--classification-rule-override)."""
import sqlite3
import subprocess

EXT = """metadata:
  policy_id: test.hints
  policy_version: "1"
  provider_scopes: ascend
rules:
  - rule_id: test.auxgraph-aux
    priority: 110
    provider_scope: ascend
    source_domain: task
    field: operator
    match: exact
    pattern: AuxGraphOp
    role: auxiliary
    required_fields: operator
    structural_participation: excluded
    cost_treatment: retained_for_attribution
    context_treatment: retained
    provenance_treatment: retained
    missing_evidence_behavior: continue_or_fallback
    concrete_identity_behavior: apply
    note: AuxGraphOp is auxiliary in this test
"""


def run(cli, *args):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)


def test_loop_tree_views(cli, fixtures, tmp_path):
    profile = fixtures / "exact_hlt" / "mono"
    for view in ("compact", "expanded", "both"):
        out = tmp_path / f"{view}.db"
        assert run(cli, profile, "--output", out, "--loop-tree-view", view).returncode == 0
        md = (tmp_path / f"{view}.loop_tree.md").read_text()
        # exact_hlt: one prefill unit, then the decode unit replayed 3 times, then 4 eager ops
        assert ("Grammar: (ACLH ACLL ACLT) ((ACLH ACLL ACLT))x3 HeadOp AuxGraphOp LayerOp "
                "AuxGraphOp" in md) == (view != "expanded")
        assert ("Expanded tree" in md) == (view != "compact")
        if view != "compact":
            # every node, one line each: 14 nodes (traceloom_viz_node)
            lines = md.split("Expanded tree")[1].splitlines()
            assert sum(1 for ln in lines if ln.lstrip().startswith("- N0")) == 14
    assert run(cli, profile, "--output", tmp_path / "x.db", "--loop-tree-view", "wide").returncode == 2


def test_compat_db_out_is_a_copy(cli, fixtures, tmp_path):
    r = run(cli, fixtures / "exact_hlt" / "mono", "--output", tmp_path / "a.db",
            "--compat-db-out", tmp_path / "compat.db")
    assert r.returncode == 0, r.stderr
    q = "SELECT count(*), sum(compute_us) FROM traceloom_anchor"
    with sqlite3.connect(tmp_path / "a.db") as a, sqlite3.connect(tmp_path / "compat.db") as b:
        assert a.execute(q).fetchone() == b.execute(q).fetchone() == (16, a.execute(q).fetchone()[1])


def test_extend_classification_rules(cli, fixtures, tmp_path):
    ext = tmp_path / "ext.yaml"
    ext.write_text(EXT)
    out = tmp_path / "a.db"
    r = run(cli, fixtures / "exact_hlt" / "mono", "--output", out, "--extend-classification-rules", ext)
    assert r.returncode == 0, r.stderr
    config = tmp_path / "a.rules.yaml"
    assert "rules config: %s" % config in r.stdout and config.read_text().startswith("# Written by traceloom")
    with sqlite3.connect(out) as con:
        # the 14 AuxGraphOp tasks of the fixture (one per launch) take the added rule: the 2 of
        # the unpromoted tail launches keep its decision, the 12 inside the 4 replay units'
        # spans are protected boundaries, their policy role the rule's
        assert con.execute("SELECT final_role, count(*) FROM traceloom_evidence_role_decision "
                           "WHERE rule_id = 'test.auxgraph-aux' GROUP BY 1").fetchall() == [("auxiliary", 2)]
        assert con.execute("SELECT final_role, policy_role, count(*) "
                           "FROM traceloom_v_evidence_role_decision WHERE op_type = 'AuxGraphOp' "
                           "GROUP BY 1, 2 ORDER BY 1").fetchall() == [
            ("auxiliary", "auxiliary", 2), ("protected_boundary", "auxiliary", 12)]
        assert con.execute("SELECT policy_mode FROM traceloom_evidence_role_policy").fetchone() == ("extend",)
    # a file that cannot be read, or a rules config besides: usage errors, nothing written
    bad = tmp_path / "bad"
    assert run(cli, fixtures / "exact_hlt" / "mono", "--output", bad / "a.db",
               "--extend-symbol-rules", tmp_path / "missing.yaml").returncode == 2
    assert not bad.exists()
    assert run(cli, fixtures / "exact_hlt" / "mono", "--output", tmp_path / "c.db",
               "--extend-classification-rules", ext, "--rules-config", "deepseekv4").returncode == 2


def test_structural_order_and_rule_override(cli, fixtures, tmp_path):
    profile = fixtures / "minimal_smoke" / "mono"
    assert run(cli, profile, "--output", tmp_path / "a.db", "--structural-order", "device").returncode == 0
    r = run(cli, profile, "--output", tmp_path / "b.db", "--structural-order", "host-launch")
    assert r.returncode == 2 and "not available" in r.stderr and not (tmp_path / "b.db").exists()
    r = run(cli, profile, "--output", tmp_path / "c.db", "--classification-rule-override", "x.role=auxiliary")
    assert r.returncode == 2 and "--rules-config" in r.stderr

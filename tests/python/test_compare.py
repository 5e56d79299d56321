"""traceloom compare / traceloom_compare / traceloom.compare() on pairs with known edits.

The generated pairs (tests/fixtures/make_compare.py, build/fixtures/compare/) are one model
with one edit each; the expected numbers come from the generator's parameters and ground truth
(ground_truth.json: edits, steps, layers), never from a comparison. The real pair is two
PyTorch profiler traces of the same transformers Llama (tests/data/compare/, recorded on the
CPU by tools/make_kineto_traces.py): the second has a 64x wider MLP (intermediate 8192 instead
of 128), so its three MLP projections are the changed part.
"""
import hashlib
import json
import os
import sqlite3
import subprocess
import sys

import apsw
import pytest

from conftest import BUILD, ROOT

sys.path.insert(0, str(ROOT / "python"))
import traceloom  # noqa: E402

PAIRS = ROOT / "tests" / "data" / "compare"


def truth(fixtures, name):
    return json.loads((fixtures / "compare" / name / "ground_truth.json").read_text())


@pytest.fixture(scope="module")
def analyses(tmp_path_factory, cli, fixtures):
    """Every generated profile and both real traces, analysed once by the CLI."""
    out = tmp_path_factory.mktemp("compare_analyses")
    inputs = {p.name: p for p in sorted((fixtures / "compare").iterdir()) if p.is_dir()}
    inputs["nsys"] = fixtures / "compare" / "nsys" / "profile.sqlite"
    for name in ("llama_h64", "llama_h64_mlp8192"):
        inputs[name] = PAIRS / f"{name}.pt.trace.json.gz"
    dbs = {}
    for name, src in inputs.items():
        db = out / f"{name}.db"
        subprocess.run([str(cli), str(src), "--output", str(db)], check=True, capture_output=True)
        dbs[name] = db
    return dbs


def run_compare(cli, tmp_path, base, new, *extra):
    out = tmp_path / "compare.db"
    r = subprocess.run([str(cli), "compare", str(base), str(new), "--output", str(out), *extra],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    conn = sqlite3.connect(out)
    conn.row_factory = sqlite3.Row
    return conn


def ranked(conn):
    return conn.execute("SELECT s.*, n.family, n.label, n.parent_key, n.new_symbol "
                        "FROM traceloom_compare_summary s LEFT JOIN traceloom_compare_node n "
                        "ON n.node_key = s.node_key WHERE s.rank > 0 ORDER BY s.rank").fetchall()


def tree(conn):
    return conn.execute("SELECT * FROM traceloom_compare_tree").fetchone()


def test_slower_operator_ranks_first_and_its_delta_is_recovered(cli, tmp_path, analyses, fixtures):
    edits = truth(fixtures, "slow")["edits"]["slow_ops"]
    assert [(e["op"], e["layer"], e["factor"]) for e in edits] == [("decode_attention", 2, 1.1)]
    steps = truth(fixtures, "slow")["structure"]["steps"]["decode"]
    layers = truth(fixtures, "slow")["structure"]["layers"]
    injected_ns = edits[0]["extra_ns_per_step"]["decode"] * steps    # 2,500 ns x 6 steps
    conn = run_compare(cli, tmp_path, analyses["base"], analyses["slow"])
    top = ranked(conn)[0]
    assert top["change"] == "slower"
    assert top["new_symbol"] == "IncreFlashAttention"          # Ascend's decode attention
    assert top["base_units"] == top["new_units"] == layers * steps
    assert abs(top["delta_us"] * 1000 - injected_ns) <= 0.01 * injected_ns
    assert top["share_of_delta"] >= 0.99 and top["noise"] == "significant"
    t = tree(conn)
    assert t["new_total_ns"] - t["base_total_ns"] == injected_ns   # no jitter: nothing else moves
    assert (t["count_ns"], t["added_ns"], t["removed_ns"], t["nodes_added"], t["nodes_removed"]) == (0, 0, 0, 0, 0)


def test_slower_operator_ranks_first_with_timing_jitter(cli, tmp_path, analyses):
    conn = run_compare(cli, tmp_path, analyses["base_jitter"], analyses["slow_jitter"])
    top = ranked(conn)[0]
    assert (top["change"], top["new_symbol"]) == ("slower", "IncreFlashAttention")
    assert top["path"].endswith("IncreFlashAttention")


def test_extra_kernel_per_decode_step_is_reported_added_once_per_step(cli, tmp_path, analyses, fixtures):
    t = truth(fixtures, "extra")
    assert t["edits"]["extra_decode_ops"] == ["noise_add"]
    steps = t["structure"]["steps"]["decode"]
    conn = run_compare(cli, tmp_path, analyses["base"], analyses["extra"])
    added = conn.execute("SELECT * FROM traceloom_compare_node WHERE alignment = 'added'").fetchall()
    assert len(added) == 1
    node = added[0]
    assert node["new_symbol"] == "Add" and node["node_type"] == "Atom"
    assert node["new_occurrences"] == steps and node["base_occurrences"] is None
    parent = conn.execute("SELECT * FROM traceloom_compare_node WHERE node_key = ?",
                          (node["parent_key"],)).fetchone()
    assert parent["node_type"] == "Repeat" and parent["base_units"] == parent["new_units"] == steps
    top = ranked(conn)[0]
    assert (top["change"], top["node_key"], top["new_units"]) == ("added", node["node_key"], steps)
    assert tree(conn)["nodes_removed"] == 0


def test_different_decode_step_counts_compare_per_iteration(cli, tmp_path, analyses, fixtures):
    b, n = (truth(fixtures, x)["structure"]["steps"]["decode"] for x in ("base", "steps8"))
    assert (b, n) == (6, 8)
    conn = run_compare(cli, tmp_path, analyses["base"], analyses["steps8"])
    t = tree(conn)
    top = ranked(conn)[0]
    assert top["change"] == "more_iterations" and top["path"] == f"Rep x{b}->x{n}"
    assert (top["base_units"], top["new_units"]) == (b, n)
    delta = t["new_total_ns"] - t["base_total_ns"]
    # The extra steps explain the delta; what is left is the random gap between steps.
    assert abs(t["count_ns"] - delta) <= 0.05 * delta
    rates = conn.execute("SELECT path, noise FROM traceloom_compare_node WHERE rate_ns <> 0").fetchall()
    assert rates and all(r["noise"] == "within_noise" for r in rates), [tuple(r) for r in rates]
    assert (t["nodes_added"], t["nodes_removed"]) == (0, 0)


def test_ascend_and_nsight_runs_of_one_model_match_by_family(cli, tmp_path, analyses):
    conn = run_compare(cli, tmp_path, analyses["base"], analyses["nsys"])
    t = tree(conn)
    assert (t["nodes_added"], t["nodes_removed"]) == (0, 0)
    atoms = conn.execute("SELECT * FROM traceloom_compare_node WHERE node_type = 'Atom'").fetchall()
    assert atoms and all(a["alignment"] == "family" and a["base_symbol"] != a["new_symbol"] for a in atoms)
    pairs = {(a["base_symbol"], a["new_symbol"], a["family"]) for a in atoms}
    assert ("IncreFlashAttention", "CudaAttention", "attention") in pairs
    assert ("MatMul", "CudaMatMul", "matmul") in pairs
    assert ("RmsNorm", "CudaRmsNorm", "norm") in pairs
    assert ("AllReduce", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "all_reduce") in pairs
    # Both runs have the same loop tree: every node of the base one is matched, all but the
    # root by family (the Repeats too: their bodies differ only in symbols).
    base_nodes = sqlite3.connect(analyses["base"]).execute(
        "SELECT count(DISTINCT rooted_position_path) FROM traceloom_position_occurrence").fetchone()[0]
    assert t["nodes_matched"] == base_nodes and t["nodes_matched_by_family"] == base_nodes - 1


def test_symbol_matching_only_keeps_cross_hardware_runs_apart(cli, tmp_path, analyses):
    conn = run_compare(cli, tmp_path, analyses["base"], analyses["nsys"], "--options",
                       '{"match": "symbol"}')
    t = tree(conn)
    assert t["nodes_matched_by_family"] == 0 and t["nodes_added"] > 0 and t["nodes_removed"] > 0


def test_real_pytorch_traces_name_the_changed_part_first(cli, tmp_path, analyses):
    meta = {n: json.loads((PAIRS / f"{n}.json").read_text()) for n in ("llama_h64", "llama_h64_mlp8192")}
    assert meta["llama_h64"]["intermediate"] < meta["llama_h64_mlp8192"]["intermediate"]
    assert {k: v for k, v in meta["llama_h64"].items() if k not in ("intermediate", "command")} == \
        {k: v for k, v in meta["llama_h64_mlp8192"].items() if k not in ("intermediate", "command")}
    conn = run_compare(cli, tmp_path, analyses["llama_h64"], analyses["llama_h64_mlp8192"])
    top = ranked(conn)[0]
    assert top["change"] == "slower" and top["family"] == "matmul", dict(top)
    assert top["ratio"] >= 3
    # A Llama layer: q/k/v projections, attention, o_proj, then the MLP's gate, up and down
    # projections. The top change is a linear after the attention and after o_proj.
    attention = conn.execute(
        "SELECT node_key FROM traceloom_compare_node WHERE parent_key = ? AND node_key < ? "
        "AND new_symbol = 'aten::scaled_dot_product_attention'",
        (top["parent_key"], top["node_key"])).fetchall()
    assert len(attention) == 1, dict(top)
    linears = [r[0] for r in conn.execute(
        "SELECT node_key FROM traceloom_compare_node WHERE parent_key = ? AND node_key > ? "
        "AND new_symbol = 'aten::linear' ORDER BY node_key", (top["parent_key"], attention[0][0]))]
    assert len(linears) == 4 and top["node_key"] in linears[1:], (linears, dict(top))
    # The attention projections (everything of the layer body up to o_proj) kept their size.
    parent = conn.execute("SELECT node_key FROM traceloom_compare_node WHERE node_key = ?",
                          (top["parent_key"],)).fetchone()[0]
    q_k_v_o = conn.execute(
        "SELECT max(ratio_avg_total) FROM traceloom_compare_node_cost WHERE node_key > ? "
        "AND node_key <= ? AND new_symbol = 'aten::linear' AND status = 'matched'",
        (parent, linears[0])).fetchone()[0]
    assert q_k_v_o is not None and q_k_v_o < 2 < top["ratio"]


@pytest.mark.parametrize("pair", [("base", "slow"), ("base", "extra"), ("base", "steps8"),
                                  ("base", "nsys"), ("llama_h64", "llama_h64_mlp8192")])
def test_effects_sum_to_the_end_to_end_delta(cli, tmp_path, analyses, pair):
    conn = run_compare(cli, tmp_path, analyses[pair[0]], analyses[pair[1]])
    t = tree(conn)
    total = conn.execute("SELECT sum(contribution_ns) FROM traceloom_compare_effect").fetchone()[0]
    split = t["rate_ns"] + t["count_ns"] + t["added_ns"] - t["removed_ns"]
    assert total == split
    # Each node effect is rounded to the ns once: at most half a ns each away from exact.
    nodes = conn.execute("SELECT count(*) FROM traceloom_compare_node").fetchone()[0]
    assert abs(split - (t["new_total_ns"] - t["base_total_ns"])) <= nodes


def test_catalog_examples_and_view_plans(cli, tmp_path, analyses):
    out = tmp_path / "in_analysis.db"
    out.write_bytes(analyses["slow"].read_bytes())
    conn = apsw.Connection(str(out))
    conn.enable_load_extension(True)
    conn.load_extension(str(BUILD / "traceloom.so"))
    conn.execute("SELECT traceloom_compare(?)", (str(analyses["base"]),))
    rows = conn.execute("SELECT surface_name, example_sql FROM traceloom_analysis_surface "
                        "WHERE surface_name LIKE 'traceloom_compare_%'").fetchall()
    assert len(rows) == 8
    for name, example in rows:
        conn.execute(example).fetchall()

    def plan(sql):
        return " | ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql))
    p = plan("SELECT * FROM traceloom_compare_symbol WHERE node_key = 5")
    assert "SEARCH p USING INTEGER PRIMARY KEY (rowid=?)" in p, p
    assert "SEARCH l USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)" in p, p
    p = plan("SELECT * FROM traceloom_compare_summary")
    assert "USING INTEGER PRIMARY KEY" in p and "SCAN n" not in p, p


def test_cli_defaults_inputs_untouched_and_errors(cli, tmp_path, analyses):
    base, new = tmp_path / "base.db", tmp_path / "new.db"
    base.write_bytes(analyses["base"].read_bytes())
    new.write_bytes(analyses["slow"].read_bytes())
    digest = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (base, new)}
    r = subprocess.run([str(cli), "compare", str(base), str(new), "--markdown", "-"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# TraceLoom comparison") and "IncreFlashAttention" in r.stdout
    default_out = tmp_path / "new.compare.db"
    assert default_out.is_file()
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (base, new)} == digest
    before = default_out.read_bytes()
    # A failing comparison (the base is a profile, not an analysis) leaves the output as it was.
    bad = subprocess.run([str(cli), "compare", str(ROOT / "build" / "fixtures" / "compare" / "base"
                                                    / "PROF_0" / "msprof_0.db"), str(new)],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "has no relation traceloom_semantic_tree" in bad.stderr
    assert default_out.read_bytes() == before
    assert not list(tmp_path.glob("*.tmp-*"))
    for args in ([], [str(base)], [str(base), str(new), "--output", str(new)],
                 [str(base), str(new), "--bogus"], [str(base), str(tmp_path / "missing.db")],
                 [str(base), str(new), "--options", "[1]"]):
        r = subprocess.run([str(cli), "compare", *args], capture_output=True, text=True)
        assert r.returncode == 2, (args, r.stderr)


def test_python_compare(tmp_path, analyses, monkeypatch):
    monkeypatch.setenv("TRACELOOM_NATIVE_DIR", str(BUILD))
    md = tmp_path / "report.md"
    cmp = traceloom.compare(analyses["base"], analyses["slow"], output=tmp_path / "c.db",
                            markdown=md, options={"top": 3})
    assert isinstance(cmp, traceloom.ComparisonDatabase)
    rows = cmp.summary()
    assert rows[0]["rank"] == 0 and rows[1]["path"] == "Rep x6 > Rep x4 > IncreFlashAttention"
    assert "| 1 | slower | Rep x6 > Rep x4 > IncreFlashAttention |" in md.read_text()
    assert "| 1 | slower |" in cmp.report({"top": 1})
    assert cmp.query("SELECT top_n FROM traceloom_compare_run")[0]["top_n"] == 3
    with pytest.raises(ValueError):
        traceloom.compare(analyses["base"], analyses["slow"], options={"new": "x.db"})
    with pytest.raises(FileNotFoundError):
        traceloom.compare(tmp_path / "missing.db", analyses["slow"])
    with pytest.raises(traceloom.AnalysisError, match="cannot open the base analysis.*not a database"):
        traceloom.compare(md, analyses["slow"], output=tmp_path / "bad.db")
    with pytest.raises(ValueError, match="not a TraceLoom comparison"):
        traceloom.ComparisonDatabase(analyses["base"])

"""The CLI on the real PyTorch profiler traces of tests/data/kineto (issue 22): what a PyTorch
user sees first. The summary and the loop tree's outline must lead with the step loop (one
iteration per prof.step(): the decode loop, prefill included) and name the layer loop inside
it after the model's decoder layer class, with the counts of each trace's config (<name>.json
beside it, written by tools/make_kineto_traces.py). The output goes into folders that do not
exist yet: the CLI creates them.
"""
import json
import pathlib
import re
import sqlite3
import subprocess

import pytest

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"
TRACES = sorted(p.name[: -len(".pt.trace.json.gz")] for p in DATA.glob("*.pt.trace.json.gz"))
MODULES = [t for t in TRACES if json.loads((DATA / (t + ".json")).read_text()).get("modules")]


def config(name):
    return json.loads((DATA / (name + ".json")).read_text())


@pytest.fixture(scope="module")
def runs(cli, tmp_path_factory):
    out = {}
    base = tmp_path_factory.mktemp("kineto_cli")
    for name in TRACES:
        db = base / name / "new" / "folders" / "analysis.db"
        r = subprocess.run([str(cli), str(DATA / (name + ".pt.trace.json.gz")), "--output", str(db)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out[name] = (r.stdout, db)
    return out


def test_at_least_four_families_with_module_ranges():
    assert len({config(t)["arch"] for t in MODULES}) >= 4


def test_the_output_folders_are_created(runs):
    for name, (stdout, db) in runs.items():
        assert db.is_file() and db.with_name("analysis.loop_tree.md").is_file()
        assert f"analysis database: {db}" in stdout


@pytest.mark.parametrize("name", MODULES)
def test_summary_leads_with_the_step_loop_holding_the_named_layers(runs, name):
    cfg = config(name)
    stdout, _ = runs[name]
    repeats = [ln for ln in stdout.splitlines() if re.match(r"\s+(device \d+ )?N\d+ ", ln)]
    # The first line: the outermost repeat covering the most time, the loop over the steps.
    first = re.match(r"  device 0 N\d+ ProfilerStep x(\d+): 1 occurrence\(s\), total [0-9.]+ us "
                     r"\(([0-9.]+)% of the device's time\)", repeats[0])
    assert first, repeats[0]
    assert int(first.group(1)) == cfg["steps"] == 1 + cfg["decode_steps"]
    # Inside it, first the decoder layers, by the time they cover, named after their module.
    inner = re.match(r"    N\d+ (\w+) x(\d+): (\d+) occurrence\(s\)", repeats[1])
    assert inner, repeats[1]
    assert (inner.group(1), int(inner.group(2)), int(inner.group(3))) == \
        (cfg["layer_class"], cfg["layers"], cfg["steps"])


@pytest.mark.parametrize("name", TRACES)
def test_outline_names_the_step_loop_first(runs, name):
    cfg = config(name)
    _, db = runs[name]
    md = db.with_name("analysis.loop_tree.md").read_text()
    table = md[md.index("Repeats by time covered"):]
    first_row = [ln for ln in table.splitlines() if ln.startswith("| N")][0]
    assert re.match(r"\| N\d+ ProfilerStep x%d \| N001/N\d+ \| 1 x %d \|" % (cfg["steps"], cfg["steps"]),
                    first_row), first_row
    outline = md[md.index("Outline"):md.index("\n### ")]
    assert re.search(r"^- N\d+ ProfilerStep x%d  total_us=" % cfg["steps"], outline, re.M), outline[:500]
    layer = cfg["layer_class"] if cfg.get("modules") else "Rep"
    assert re.search(r"^  - N\d+ %s x%d  total_us=" % (layer, cfg["layers"]), outline, re.M), outline[:2000]


@pytest.mark.parametrize("name", MODULES)
def test_hta_views_on_a_cpu_trace(runs, name):
    """On a CPU operator plane there is no launch: launch delays are absent and the host-bound
    share is NULL, while the per-step operator breakdown covers every anchor of every step."""
    cfg = config(name)
    _, db = runs[name]
    con = sqlite3.connect(str(db))
    try:
        assert con.execute("SELECT count(*) FROM traceloom_v_launch_delay").fetchone()[0] == 0
        steps = con.execute("SELECT count(*), count(host_bound_share), sum(anchor_count) "
                            "FROM traceloom_v_profiler_step").fetchone()
        assert steps[0] == cfg["steps"] and steps[1] == 0
        assert steps[2] == con.execute("SELECT count(*) FROM traceloom_anchor").fetchone()[0]
        per_step = con.execute("SELECT step_n, sum(anchors), sum(share), count(*) "
                               "FROM traceloom_v_profiler_step_symbol GROUP BY step_n").fetchall()
        assert len(per_step) == cfg["steps"]
        # Every step holds the same operators; the shares (rounded to 4 places) add up to 1.
        for _, n, share, symbols in per_step:
            assert n == steps[2] // cfg["steps"] and abs(share - 1) <= symbols * 0.00005
    finally:
        con.close()

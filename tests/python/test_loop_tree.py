"""The Markdown loop tree's numbers are traceloom_v_tree_node's, node by node.

traceloom_loop_tree() reads the nodes' nanoseconds and computes total_us and the
per-iteration averages itself (SQL's ROUND per value per node was most of its time on a
half-million-node tree). Every line of the expanded view must still show exactly what a
client reads from the view: total_us, and avg_total_us rounded by SQLite's ROUND(x, 3),
including the half-way cases (a 1001 ns total over two iterations is 0.5005 us, which
SQLite rounds up and a naive C printf of the double rounds down)."""
import re
import sqlite3
import subprocess

LINE = re.compile(r"^\s*- (N\d{3,}) (.*?)  total_us=(-?[0-9.]+)"
                  r"(?:, per iteration: (-?[0-9.]+) us \(busy (-?[0-9.]+)\)| avg_total_us=(-?[0-9.]+))$")


def analyse(cli, profile, out):
    r = subprocess.run([str(cli), str(profile), "--output", str(out)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def expanded_lines(db, build_dir):
    r = subprocess.run(["sqlite3", "-bail", "-cmd", f".load {build_dir / 'traceloom'}", str(db),
                        """SELECT traceloom_loop_tree('{"view": "expanded"}')"""],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return sqlite3.connect(db), [m for m in map(LINE.match, r.stdout.splitlines()) if m]


def check_against_view(con, lines):
    """Every node line of the expanded tree against the view's figures (one tree here)."""
    view = {row[0]: row[1:] for row in con.execute(
        "SELECT local_node_id, label, printf('%.3f', total_us), printf('%.3f', avg_total_us), "
        "printf('%.3f', ROUND(avg_compute_us + avg_comm_us, 3)), kind FROM traceloom_v_tree_node")}
    assert len(lines) == len(view)  # the expanded view lists every node once
    for m in lines:
        local, label, total = m.group(1), m.group(2), m.group(3)
        v_label, v_total, v_avg, v_busy, kind = view[local]
        assert (label, total) == (v_label, v_total), local
        if kind == "repeat":
            assert m.group(4) == v_avg, local
        else:
            assert m.group(6) == v_avg, local
    return view


def test_expanded_tree_matches_the_view(cli, fixtures, build_dir, tmp_path):
    db = analyse(cli, fixtures / "exact_hlt" / "mono", tmp_path / "a.db")
    con, lines = expanded_lines(db, build_dir)
    view = check_against_view(con, lines)
    assert any(k == "repeat" for *_, k in view.values())


def test_half_way_averages_round_as_sqlite_does(cli, build_dir, tmp_path):
    """A generated decode profile holds thousands of nodes; among their averages some fall
    half-way at the fourth decimal. The test finds them in the view and checks that the
    loop tree prints SQLite's rounding of them (not a naive printf's)."""
    prof = tmp_path / "p"
    subprocess.run(["python3", "tools/genprofile.py", "--format", "ascend", "--out", str(prof),
                    "--rows", "20000", "--seed", "7"], check=True, capture_output=True,
                   cwd=str(build_dir.parent))
    db = analyse(cli, prof, tmp_path / "a.db")
    con, lines = expanded_lines(db, build_dir)
    check_against_view(con, lines)
    # The profile must hold the case: averages where a naive printf of the double and
    # SQLite's ROUND disagree (half-way values whose double lies just below the half).
    naive_differs = sum(
        ("%.3f" % (total / 1000.0 / denom)) != rounded
        for total, denom, rounded in con.execute(
            "SELECT compute_ns + comm_ns + idle_ns, denom, "
            "       printf('%.3f', ROUND((compute_ns + comm_ns + idle_ns) / 1000.0 / denom, 3)) "
            "FROM traceloom_v_node_stats"))
    assert naive_differs > 0


def test_large_tree_read_in_two_halves_matches_one_reader(cli, build_dir, tmp_path):
    """A tree of at least SPLIT_NODES (65536) nodes is read in two halves, the second on a
    worker connection; the Markdown must be the bytes one connection reading every node
    writes (the option threads 1), and its node lines the view's."""
    import os
    prof = tmp_path / "p"
    subprocess.run(["python3", "tools/genprofile.py", "--format", "ascend", "--out", str(prof),
                    "--rows", "140000", "--seed", "7"], check=True, capture_output=True,
                   cwd=str(build_dir.parent))
    db = analyse(cli, prof, tmp_path / "a.db")
    con = sqlite3.connect(db)
    assert con.execute("SELECT max(node_count) FROM traceloom_tree_core").fetchone()[0] >= 65536

    def render(threads):
        env = dict(os.environ, TRACELOOM_TIMING="1")
        sql = """SELECT traceloom_loop_tree('{"view": "both", "threads": %d}')""" % threads
        r = subprocess.run(["sqlite3", "-bail", "-cmd", f".load {build_dir / 'traceloom'}",
                            str(db), sql], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr
        return r.stdout, r.stderr

    split, split_err = render(2)
    whole, whole_err = render(1)
    assert "loop tree read nodes threads" in split_err  # the two-halves path ran
    assert "loop tree read nodes threads" not in whole_err
    assert split == whole
    check_against_view(con, [m for m in map(LINE.match, split.split("Expanded tree")[1]
                                            .splitlines()) if m])


def test_cli_markdown_from_memory_is_the_published_trees(cli, fixtures, build_dir, tmp_path):
    """The CLI's <stem>.loop_tree.md is rendered by the analysis from its trees in memory while
    the rest is published (on a thread; in line with --threads 1), not read back: its bytes
    must be traceloom_loop_tree's over the published analysis, for every view, on a profile
    with half-way averages and on profiles with several trees."""
    import os
    prof = tmp_path / "p"
    subprocess.run(["python3", "tools/genprofile.py", "--format", "ascend", "--out", str(prof),
                    "--rows", "20000", "--seed", "7"], check=True, capture_output=True,
                   cwd=str(build_dir.parent))
    env = dict(os.environ, TRACELOOM_TIMING="1")
    cases = 0
    for profile in (prof, fixtures / "two_ranks", fixtures / "split_golden" / "split"):
        for view, threads in ((None, None), ("both", None), ("expanded", "1")):
            out = tmp_path / ("a%d.db" % cases)
            cmd = [str(cli), str(profile), "--output", str(out)]
            cmd += ["--loop-tree-view", view] if view else []
            cmd += ["--threads", threads] if threads else []
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
            assert r.returncode == 0, r.stderr
            # rendered by the analysis, never read back from the file
            assert "loop tree Markdown (thread)" in r.stderr
            assert "loop tree read nodes" not in r.stderr
            md = (tmp_path / ("a%d.loop_tree.md" % cases)).read_text()
            sql = "SELECT traceloom_loop_tree(%s)" % (
                """'{"view": "%s"}'""" % view if view else "NULL")
            ref = subprocess.run(["sqlite3", "-bail", "-cmd", f".load {build_dir / 'traceloom'}",
                                  str(out), sql], capture_output=True, text=True, timeout=300)
            assert ref.returncode == 0, ref.stderr
            assert md + "\n" == ref.stdout, (profile, view, threads)
            cases += 1
    multi = sqlite3.connect(tmp_path / "a3.db").execute(
        "SELECT count(*) FROM traceloom_tree_core").fetchone()[0]
    assert multi >= 2


# The CLI's short version as SQL over the published analysis (what the CLI ran before the
# analysis wrote it from its trees in memory): the oracle of the next test.
SUMMARY_SQL = """
WITH r AS (SELECT n.db_idx, n.device_id, n.node_n, n.local_node_id, s.label, n.loop_depth,
                  COALESCE(n.path, (SELECT p.path FROM traceloom_node_core p
                    WHERE p.node_n = n.parent_n) || '/' || n.local_node_id) AS path,
                  n.occurrence_count, (n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0 AS total_us,
                  ROUND((n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0 / n.denom, 3) AS avg_total_us
           FROM traceloom_node_core c
           JOIN traceloom_node_shape s ON s.shape_id = c.shape_id
           CROSS JOIN traceloom_v_node_stats n ON n.node_n = c.node_n
           WHERE c.node_kind = 3 AND c.loop_depth <= 2 AND s.kind = 'repeat'),
root AS (SELECT n.db_idx, n.device_id, (n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0 AS total_us
         FROM traceloom_tree_core t JOIN traceloom_v_node_stats n ON n.node_n = t.first_node_n
         WHERE n.parent_n IS NULL),
top AS (SELECT r.*, row_number() OVER (PARTITION BY db_idx, device_id
                                       ORDER BY total_us DESC, node_n) AS rk
        FROM r WHERE loop_depth = 1),
lines AS (SELECT t.db_idx, t.device_id, t.rk, 0 AS sub, t.node_n, t.local_node_id, t.label,
                 t.occurrence_count, t.total_us, t.avg_total_us
          FROM top t WHERE t.rk <= 3
          UNION ALL
          SELECT t.db_idx, t.device_id, t.rk, row_number() OVER (PARTITION BY t.node_n
                 ORDER BY i.total_us DESC, i.node_n), i.node_n, i.local_node_id, i.label,
                 i.occurrence_count, i.total_us, i.avg_total_us
          FROM top t JOIN r i ON i.db_idx = t.db_idx AND i.device_id = t.device_id
           AND i.loop_depth = 2 AND substr(i.path, 1, length(t.path) + 1) = t.path || '/'
          WHERE t.rk <= 3
          UNION ALL
          SELECT t.db_idx, t.device_id, 0, -1, NULL, NULL, NULL, t.anchor_count, NULL, NULL
          FROM traceloom_tree_core t WHERE NOT EXISTS (SELECT 1 FROM top p
            WHERE p.db_idx = t.db_idx AND p.device_id = t.device_id)),
several AS (SELECT min(db_idx) < max(db_idx) AS yes FROM traceloom_tree_core)
SELECT CASE WHEN l.sub < 0
            THEN printf('  %sdevice %d: no repeat among its %d anchors',
                        CASE WHEN (SELECT yes FROM several) THEN 'db ' || l.db_idx || ' ' ELSE '' END,
                        l.device_id, l.occurrence_count)
            WHEN l.sub > 0
            THEN printf('    %s %s: %d occurrence(s), total %s us, %s us per iteration',
                        l.local_node_id, l.label, l.occurrence_count, printf('%.3f', l.total_us),
                        printf('%.3f', l.avg_total_us))
            ELSE printf('  %sdevice %d %s %s: %d occurrence(s), total %s us%s, %s us per iteration',
                        CASE WHEN (SELECT yes FROM several) THEN 'db ' || l.db_idx || ' ' ELSE '' END,
                        l.device_id, l.local_node_id, l.label, l.occurrence_count,
                        printf('%.3f', l.total_us),
                        CASE WHEN ro.total_us > 0 THEN ' (' || printf('%.1f', 100.0 * l.total_us
                             / ro.total_us) || '% of the device''s time)' ELSE '' END,
                        printf('%.3f', l.avg_total_us)) END
FROM lines l LEFT JOIN root ro ON ro.db_idx = l.db_idx AND ro.device_id = l.device_id
WHERE l.sub <= 2 ORDER BY l.db_idx, l.device_id, l.rk, l.sub
"""


def test_cli_summary_from_memory_is_the_published_trees(cli, fixtures, build_dir, tmp_path):
    """The Repeat lines the CLI prints (the outermost three per tree by time, two inside each,
    24 at most) come with the Markdown from the trees in memory: they must be the lines the
    same selection over the published analysis gives, on profiles with several trees and
    Repeats nested two deep."""
    prof = tmp_path / "p"
    subprocess.run(["python3", "tools/genprofile.py", "--format", "ascend", "--out", str(prof),
                    "--rows", "20000", "--seed", "7"], check=True, capture_output=True,
                   cwd=str(build_dir.parent))
    nested = 0
    for k, profile in enumerate((prof, fixtures / "two_ranks", build_dir / "demo" / "profile")):
        if not profile.exists():
            continue
        out = tmp_path / ("s%d.db" % k)
        r = subprocess.run([str(cli), str(profile), "--output", str(out)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        # the summary lines: after the loop tree's path, before what the profile lacked
        got = r.stdout.split("loop tree: ", 1)[1].split("\nnot usable in this profile", 1)[0].splitlines()[1:]
        ref = subprocess.run(["sqlite3", "-bail", str(out), SUMMARY_SQL], capture_output=True,
                             text=True, timeout=300)
        assert ref.returncode == 0, ref.stderr
        want = ref.stdout.splitlines()
        if len(want) > 24:
            want = want[:24] + ["  ... %d more repeat(s) in the loop tree" % (len(want) - 24)]
        assert got == want, profile
        nested += sum(line.startswith("    ") for line in got)
    assert nested > 0

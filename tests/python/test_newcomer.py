"""What a newcomer met in their first hour with the README and the CLI (branch fh46), each
pinned by a test that failed before its fix: output samples in the README that the commands
no longer print, paths the documents name that do not exist, and CLI messages that did not
say what happened or what to do.
"""
import pathlib
import re
import subprocess

import pytest

import docblocks
from conftest import BUILD, ROOT


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kw)


def words(line):
    return line.split()


def test_readme_first_answer_sample_is_what_the_queries_print():
    # The sample once showed the loops as N010 / N011 and a bubble path
    # node-N001/s1/node-N002, names the tree had long stopped using: a reader comparing
    # their screen with it had to guess whether their build was broken.
    blocks = [b for b in docblocks.collect(ROOT) if b.document == "README.md"]
    pairs = [(a, b) for a, b in zip(blocks, blocks[1:]) if a.runner == "sql" and b.language == "text"]
    assert pairs, "the README's first SQL example is followed by its output"
    query, sample = pairs[0]
    demo = docblocks.run_demo(ROOT, BUILD)
    r = run("sqlite3", "-bail", "-header", "-column", demo / "analysis.db", input=query.code)
    assert r.returncode == 0, r.stderr
    printed = [words(ln) for ln in r.stdout.splitlines()]
    for line in sample.code.splitlines():
        if line.strip() in ("", "..."):
            continue
        assert words(line) in printed, f"README.md:{sample.line}: {line!r} is not printed"


def test_checkout_documents_call_the_cli_by_its_build_path():
    # README.md and docs/ are read in a checkout after `make demo`, where the CLI is
    # build/traceloom and nothing named traceloom is on PATH: a bare `traceloom ...` example
    # (the README's PyTorch section, docs/PERFETTO.md, docs/CONTEXT.md) failed with
    # "command not found" when pasted. python/README.md is read after `pip install`, which
    # puts traceloom on PATH, and keeps the bare name.
    bare = []
    for b in docblocks.collect(ROOT):
        if b.document == "python/README.md" or b.runner != "shell":
            continue
        for i, line in enumerate(b.code.splitlines()):
            # (`python -m traceloom` is the package's module, not the CLI)
            if re.search(r"(^|[\s;(|&])(?<!-m )traceloom\s", line):
                bare.append(f"{b.document}:{b.line + 1 + i}: {line.strip()}")
    assert bare == []


def test_every_repository_path_the_documents_name_exists():
    # docs/PARITY.md sent readers to rules/symbols.yaml for the symbol rules; the file is
    # rules/symbol_normalization.yaml. Links are checked by their targets elsewhere; this
    # checks the paths written as text (`rules/x.yaml`, tests/sql/*.sql, ...).
    tops = "|".join(p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith("."))
    pattern = re.compile(rf"(?:^|[\s`(\[])((?:{tops})/[\w./*-]+\.(?:md|py|sh|sql|yaml|yml|c|h|json)(?:\.gz)?)(?!\.?\w)")
    docs = [ROOT / "README.md", ROOT / "python" / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    missing = []
    for doc in docs:
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            for path in pattern.findall(line):
                if path.startswith("build/"):
                    continue  # made by make / make demo
                if not (list(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()):
                    missing.append(f"{doc.relative_to(ROOT)}:{n}: {path}")
    assert missing == []


def readme_section(title):
    return (ROOT / "README.md").read_text().split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_command_line_synopsis_is_the_help_synopsis(cli):
    # The README's synopsis had no --align / --clock-model for export-perfetto and no
    # --options for compare; --help had no --options for compare either, while
    # `compare --help` and the code take it.
    (block,) = re.findall(r"```text\n(.*?)```", readme_section("The command line"), re.S)
    r = run(cli, "--help")
    assert r.returncode == 0
    synopsis = r.stdout.split("\n\n", 1)[0].replace("usage: ", "", 1)
    assert words(block.replace("build/traceloom", "traceloom")) == words(synopsis)
    compare = run(cli, "compare", "--help").stdout.split("\n\n", 1)[0].replace("usage: ", "", 1)
    assert " ".join(words(compare)) in " ".join(words(synopsis))


def test_each_subcommand_has_its_own_help(cli):
    # `export-perfetto --help` printed the analysis's help, whose options (--threads,
    # --context, ...) export-perfetto refuses.
    r = run(cli, "export-perfetto", "--help")
    assert r.returncode == 0
    assert r.stdout.startswith("usage: traceloom export-perfetto ANALYSIS_DB")
    for flag in ("--output", "--format", "--rank", "--align", "--clock-model"):
        assert f"  {flag}" in r.stdout, flag
    assert "--threads" not in r.stdout and "--context" not in r.stdout
    top = run(cli, "--help").stdout
    assert "traceloom export-perfetto --help" in top and "traceloom compare --help" in top


def test_help_names_every_analyze_option_key(cli, fixtures, tmp_path):
    # "--options JSON  analyze options as a JSON object" left the keys to be guessed; the
    # CLI's own error for an unknown key lists them, so the help must name the same keys.
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", tmp_path / "a.db",
            "--options", '{"nope": 1}')
    assert r.returncode == 2
    keys = re.findall(r"[a-z_]+", r.stderr.split("expected", 1)[1].replace(" or ", ", "))
    assert "threads" in keys and "step_markers" in keys
    text = " ".join(run(cli, "--help").stdout.split())
    for key in keys:
        assert key in text, key


@pytest.mark.parametrize("args, message, hint", [
    (["--thread", "2"], "unknown option --thread", "did you mean --threads?"),
    (["--ouput", "a.db"], "unknown option --ouput", "did you mean --output?"),
    (["--frobnicate"], "unknown option --frobnicate", None),
    ([], "input path is required", None),
    (["a", "b"], "one profile path expected, got also b", None),
    (["export-perfetto", "x.db", "--rnak", "1=y.db"], "unknown export-perfetto option --rnak",
     "did you mean --rank?"),
    (["compare", "a.db", "b.db", "--markdwon", "-"], "unknown compare option --markdwon",
     "did you mean --markdown?"),
])
def test_usage_errors_stay_on_screen(cli, args, message, hint):
    # A mistyped flag printed its one-line reason and then the whole 40-line help after it:
    # the reason scrolled away. Now: the reason (with the flag meant, where one is close),
    # the synopsis, and where the full help is.
    r = run(cli, *args)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert message in lines[0]
    if hint:
        assert hint in lines[0]
    else:
        assert "did you mean" not in r.stderr
    assert len(lines) <= 14, r.stderr
    assert any("usage: traceloom" in ln for ln in lines)
    assert "--help" in lines[-1]


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_output_that_is_a_folder_is_refused_before_the_analysis(cli, fixtures, tmp_path):
    # `--output results` with results/ an existing folder analysed the whole profile and
    # then failed: "cannot move the analysis into place at results: Is a directory".
    (tmp_path / "results").mkdir()
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", tmp_path / "results")
    assert r.returncode == 2
    assert f"--output {tmp_path / 'results'} is a folder" in r.stderr
    assert f"{tmp_path / 'results' / 'analysis.db'}" in r.stderr  # the name to pass instead
    assert "analysed" not in r.stdout
    assert listing(tmp_path) == ["results"]
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", f"{tmp_path / 'new'}/")
    assert r.returncode == 2 and f"e.g. {tmp_path / 'new' / 'analysis.db'}" in r.stderr, r.stderr
    assert listing(tmp_path) == ["results"]
    for sub in (["export-perfetto", fixtures / "minimal_smoke" / "mono" / "x.db"], ["compare", "a.db", "b.db"]):
        r = run(cli, *sub, "--output", tmp_path / "results")
        assert r.returncode == 2 and f"--output {tmp_path / 'results'} is a folder" in r.stderr, r.stderr


def test_output_where_no_file_can_be_made_says_why(cli, fixtures, tmp_path):
    # "cannot create /sys/a.db.tmp-30824: unable to open database file" named a file the
    # user never asked for and no reason. /sys refuses new files even to root.
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", "/sys/a.db")
    assert r.returncode == 1
    assert r.stderr.startswith("traceloom: cannot write the analysis database /sys/a.db: "
                               "cannot create a file in /sys (Permission denied)"), r.stderr
    assert "analysed" not in r.stdout


def test_summary_tells_the_inputs_of_a_directory_apart(cli, fixtures, tmp_path):
    # A directory of ranks printed "device 0 N002 ..." once per rank, with nothing to say
    # which input each line is about; a rank without any repeat printed nothing at all.
    import sqlite3
    out = tmp_path / "a.db"
    r = run(cli, fixtures / "two_ranks", "--output", out)
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(out)
    trees = con.execute("SELECT db_idx, device_id, anchor_count FROM traceloom_tree_core "
                        "ORDER BY db_idx, device_id").fetchall()
    assert len({db for db, _, _ in trees}) == 2
    tops = [ln for ln in r.stdout.splitlines() if ln.startswith("  ") and not ln.startswith("    ")]
    for db, device, anchors in trees:
        repeats = con.execute("SELECT count(*) FROM traceloom_v_tree_node WHERE db_idx = ? AND "
                              "device_id = ? AND kind = 'repeat'", (db, device)).fetchone()[0]
        mine = [ln for ln in tops if ln.startswith(f"  db {db} device {device}")]
        if repeats:
            assert mine and all(re.match(rf"  db {db} device {device} N\d+ ", ln) for ln in mine), tops
        else:
            assert mine == [f"  db {db} device {device}: no repeat among its {anchors} anchors"], tops
    # One input: the lines say the device only, as before.
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", tmp_path / "one.db")
    assert r.returncode == 0 and "  device 0: no repeat among its 2 anchors" in r.stdout.splitlines()


def test_what_the_profile_could_not_give_is_printed(cli, fixtures, tmp_path):
    # A profile without STRING_IDS analysed "successfully" with 0 graph launches instead of
    # 12 and 70 anchors instead of 16, and printed nothing about it; a torch-npu rank with
    # two PROF_* siblings (README: "refused explicitly") said nothing either; the split
    # layout's fallback warning (README: "with a warning") was stored, never shown.
    import shutil
    import sqlite3
    prof = tmp_path / "nostrings"
    shutil.copytree(fixtures / "exact_hlt" / "mono", prof)
    (db,) = prof.glob("PROF_*/msprof_*.db")
    with sqlite3.connect(db) as con:
        con.execute("DROP TABLE STRING_IDS")
    r = run(cli, prof, "--output", tmp_path / "a.db")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.startswith("not usable in this profile") for ln in lines), r.stdout
    assert "  string_table: table STRING_IDS is absent" in lines

    r = run(cli, fixtures / "torchnpu" / "ambiguous", "--output", tmp_path / "b.db")
    assert r.returncode == 0, r.stderr
    (companion,) = [ln for ln in r.stdout.splitlines() if ln.startswith("  capture_stream_companion: ")]
    assert "2 sibling PROF_* containers" in companion and "exact graph replay is disabled" in companion

    r = run(cli, fixtures / "split_golden" / "fallback", "--output", tmp_path / "c.db")
    assert r.returncode == 0, r.stderr
    assert "traceloom: warning: using Ascend split SQLite fallback: " in r.stderr

    # A profile with everything: no such lines.
    demo = docblocks.run_demo(ROOT, BUILD)
    r = run(cli, demo / "graph_profile", "--output", tmp_path / "d.db")
    assert r.returncode == 0, r.stderr
    assert "not usable" not in r.stdout and "warning" not in r.stderr


def test_help_leads_to_the_cluster_command(cli, build_dir):
    # `python -m traceloom --help` (the package's console script) prints the native help,
    # which never named `traceloom cluster`, the package's own subcommand (README, "Cluster
    # runs"): a user of the package could not find it from --help.
    import os
    import sys
    text = " ".join(run(cli, "--help").stdout.split())
    assert "`traceloom cluster RUN_DIR`" in text and "`traceloom cluster --help`" in text
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python"), "TRACELOOM_NATIVE_DIR": str(build_dir)}
    r = run(sys.executable, "-m", "traceloom", "cluster", "--help", env=env)
    assert r.returncode == 0 and r.stdout.startswith("usage: traceloom cluster"), r.stderr


def test_every_output_gets_its_missing_folders(cli, fixtures, tmp_path):
    # The README says "missing folders of the output are created": true of the analysis,
    # while --perfetto-out, --compat-db-out, export-perfetto --output, compare --output and
    # --markdown failed on a folder not yet there ("cannot create a temporary file beside
    # ...", "unable to open database: nodir/x.db.tmp-1356").
    a = tmp_path / "a.db"
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", a,
            "--perfetto-out", tmp_path / "t1" / "timeline.json.gz",
            "--compat-db-out", tmp_path / "c1" / "copy.db")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "t1" / "timeline.json.gz").is_file() and (tmp_path / "c1" / "copy.db").is_file()
    r = run(cli, "export-perfetto", a, "--output", tmp_path / "t2" / "deep" / "t.pftrace")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "t2" / "deep" / "t.pftrace").is_file()
    r = run(cli, "compare", a, a.with_name("c1") / "copy.db", "--output", tmp_path / "k" / "cmp.db",
            "--markdown", tmp_path / "m" / "report.md")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "k" / "cmp.db").is_file() and (tmp_path / "m" / "report.md").is_file()
    # A failed export removes the folders it made; an existing folder given as the file is
    # refused before the analysis runs.
    before = listing(tmp_path)
    r = run(cli, "export-perfetto", tmp_path / "m" / "report.md", "--output", tmp_path / "t3" / "t.json")
    assert r.returncode == 1 and listing(tmp_path) == before
    r = run(cli, fixtures / "minimal_smoke" / "mono", "--output", tmp_path / "b.db",
            "--perfetto-out", tmp_path / "t1")
    assert r.returncode == 2 and f"--perfetto-out {tmp_path / 't1'} is a folder" in r.stderr
    assert listing(tmp_path) == before


def test_python_analyze_takes_the_other_options(build_dir, tmp_path):
    # README lists analyze options (step_markers, idle_evidence, text_id_indexes, ...) that
    # traceloom.analyze() had no way to pass: only threads, context and rules_config.
    import os
    import sys
    code = """
import sys
sys.path.insert(0, sys.argv[1])
import traceloom
trace, out = sys.argv[2], sys.argv[3]
steps = lambda db: db.query("SELECT count(*) AS n FROM traceloom_profiler_step")[0]["n"]
print(steps(traceloom.analyze(trace, output=out + "/a.db")))
print(steps(traceloom.analyze(trace, output=out + "/b.db", options={"step_markers": ""})))
try:
    traceloom.analyze(trace, output=out + "/c.db", options={"step_marker": ""})
except traceloom.AnalysisError as e:
    print(e.returncode, "step_markers" in str(e))
try:
    traceloom.analyze(trace, output=out + "/c.db", options={"threads": 2})
except ValueError as e:
    print("ValueError")
"""
    trace = ROOT / "tests" / "data" / "kineto" / "llama_l3_d4.pt.trace.json.gz"
    env = {**os.environ, "TRACELOOM_NATIVE_DIR": str(build_dir)}
    r = run(sys.executable, "-c", code, ROOT / "python", trace, tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    # the trace's ProfilerStep#0..4 (tests/data/kineto/llama_l3_d4.json: 1 prefill + 4 decode)
    assert r.stdout.split() == ["5", "0", "2", "True", "ValueError"]


def test_readme_profile_example_names_each_file(cli):
    # Its comment promises "each input and file"; the file rows printed only their role
    # ("primary", "companion"), not which file.
    readme = (ROOT / "README.md").read_text()
    (stmt,) = re.findall(r"SELECT item[^;]*FROM traceloom_profile\([^;]*;", readme)
    demo = docblocks.run_demo(ROOT, BUILD)
    r = run("sqlite3", "-bail", "-separator", "|", "-cmd", f".load {BUILD / 'traceloom'}", ":memory:",
            stmt.replace("'build/demo/profile'", f"'{demo / 'profile'}'"))
    assert r.returncode == 0, r.stderr
    files = [row.split("|") for row in r.stdout.splitlines() if row.startswith("file|")]
    assert files
    for row in files:
        role, _, path = row[1].partition(" ")
        assert role in ("primary", "companion") and pathlib.Path(path).is_file(), row


def test_usage_errors_leak_nothing(cli):
    # The argument loop's usage-error returns left the --context array behind (valgrind:
    # 24 bytes definitely lost for `traceloom --thread 2`).
    import shutil
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    for args in (["--thread", "2"], ["a", "b"], ["x", "--context"]):
        r = run("valgrind", "-q", "--leak-check=full", "--errors-for-leak-kinds=definite",
                "--error-exitcode=9", cli, *args)
        assert r.returncode == 2, r.stderr


def test_cluster_doc_example_shows_the_late_rank(tmp_path, build_dir):
    # docs/CLUSTER.md had nothing a reader could run (every block skipped). Its example now
    # generates 4 ranks with rank 2 late at every collective and analyses them; what its
    # prose says the query shows must be what it shows.
    import os
    import shutil
    import sqlite3
    import sys
    (block,) = [b for b in docblocks.collect(ROOT) if b.document == "docs/CLUSTER.md"
                and b.runner == "shell" and b.skip is None]
    late = int(re.search(r"--late-ns (\d+)", block.code).group(1))
    rank = int(re.search(r"--late-rank (\d+)", block.code).group(1))
    ws = tmp_path / "ws"
    (ws / "build" / "demo").mkdir(parents=True)
    for name in ("python", "tools"):
        (ws / name).symlink_to(ROOT / name)
    for name in ("traceloom", "traceloom.so"):
        shutil.copy(build_dir / name, ws / "build" / name)
    env = {**os.environ, "PATH": f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    r = run("bash", "-e", "-c", block.code, cwd=ws, env=env)
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(ws / "build" / "demo" / "cluster.db")
    rows = con.execute("SELECT rank, times_last, mean_lateness_ns, mean_own_wait_ns "
                       "FROM traceloom_cluster_v_wait_cause ORDER BY times_last DESC").fetchall()
    assert rows[0][0] == rank and rows[0][1] > 0 and rows[0][2] == late
    assert len(rows) == 4 and all(t == 0 and wait == late for _, t, _, wait in rows[1:])


def test_an_nsight_report_gets_the_export_command(cli, tmp_path):
    # nsys writes a .nsys-rep (formerly .qdrep); TraceLoom reads its SQLite export. Passing the
    # report itself said only "file is not a database (expected a SQLite database)".
    for name in ("run.nsys-rep", "old.qdrep"):
        report = tmp_path / name
        report.write_bytes(bytes(range(256)) * 8)  # not SQLite, as a real report is not
        r = run(cli, report, "--output", tmp_path / "a.db")
        assert r.returncode == 1
        stem = str(report)[: str(report).rindex(".")]
        assert "file is not a database" in r.stderr
        assert f"nsys export --type sqlite --output {stem}.sqlite {report}" in r.stderr, r.stderr
    # Another file that is no database keeps the plain message.
    (tmp_path / "notes.txt").write_text("hello\n")
    r = run(cli, tmp_path / "notes.txt", "--output", tmp_path / "a.db")
    assert r.returncode == 1 and "nsys export" not in r.stderr


def test_zero_supported_relations_say_why_when_there_are_no_calls(cli, fixtures, tmp_path):
    # A CPU-only PyTorch trace has no runtime calls, so each of its events gets a typed
    # non-relation: "3363 runtime-device relations (0 supported)" read as a failed link step.
    trace = ROOT / "tests" / "data" / "kineto" / "llama_l3_d4.pt.trace.json.gz"
    r = run(cli, trace, "--output", tmp_path / "a.db")
    assert r.returncode == 0, r.stderr
    assert "0 runtime calls" in r.stdout
    assert "(0 supported; the profile has no runtime calls)" in r.stdout
    # With runtime calls the count stands alone.
    r = run(cli, fixtures / "exact_hlt" / "mono", "--output", tmp_path / "b.db")
    assert r.returncode == 0 and re.search(r"relations \(\d+ supported\)", r.stdout), r.stdout

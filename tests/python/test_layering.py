"""tools/check_layering.py: the layering of ext/ (docs/ARCHITECTURE.md, Layers) holds on the
tree, and each rule fails on a copy of the tree that breaks it."""
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / "tools" / "check_layering.py"


def run(root):
    p = subprocess.run([sys.executable, str(CHECK), "--root", str(root)], capture_output=True,
                       text=True)
    return p.returncode, p.stdout + p.stderr


@pytest.fixture
def tree(tmp_path):
    """A copy of ext/ and docs/ARCHITECTURE.md to break."""
    shutil.copytree(ROOT / "ext", tmp_path / "ext")
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "ARCHITECTURE.md", tmp_path / "docs")
    return tmp_path


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def test_the_tree_passes():
    rc, out = run(ROOT)
    assert rc == 0, out
    assert ": ok" in out


def test_a_back_edge_fails(tree):
    # trace comes before analyze: the trace including the driver is a back edge
    append(tree / "ext" / "trace" / "trace.c", '\n#include "analyze/analyze.h"\n')
    rc, out = run(tree)
    assert rc == 1
    assert 'ext/trace/trace.c: #include "analyze/analyze.h": layer trace may not include analyze' in out


def test_a_file_outside_source_opening_a_profile_fails(tree):
    append(tree / "ext" / "replay" / "replay.c",
           "\nstatic int peek(sqlite3 **db, tl_err *e) { return tl_sql_open_ro(\"x.db\", db, e); }\n")
    rc, out = run(tree)
    assert rc == 1
    assert "ext/replay/replay.c: calls tl_sql_open_ro, allowed only in ext/source/" in out


def test_a_stage_appending_to_the_trace_fails(tree):
    append(tree / "ext" / "replay" / "replay.c",
           "\nstatic int add(tl_trace *t, const tl_event_row *r) { return tl_trace_add_event(t, r); }\n")
    rc, out = run(tree)
    assert rc == 1
    assert "ext/replay/replay.c: calls tl_trace_add_event, allowed only in ext/trace/" in out


def test_a_cycle_in_the_table_fails(tree):
    doc = tree / "docs" / "ARCHITECTURE.md"
    text = doc.read_text().replace("| util | `ext/util/` | |", "| util | `ext/util/` | trace |")
    doc.write_text(text)
    rc, out = run(tree)
    assert rc == 1
    assert "layer util may include trace, which comes later in the table" in out


def test_an_exception_no_longer_needed_fails(tree):
    # an exception row whose include does not exist (util/buf.c includes no trace header)
    doc = tree / "docs" / "ARCHITECTURE.md"
    text = doc.read_text().replace("<!-- layer-exceptions:end -->",
                                   "| util | trace | `ext/util/buf.c` | test |\n<!-- layer-exceptions:end -->")
    doc.write_text(text)
    rc, out = run(tree)
    assert rc == 1
    assert "exception util -> trace for ext/util/buf.c is no longer needed" in out


def test_a_file_in_no_layer_fails(tree):
    (tree / "ext" / "newstage").mkdir()
    (tree / "ext" / "newstage" / "x.c").write_text("int x;\n")
    rc, out = run(tree)
    assert rc == 1
    assert "ext/newstage/x.c: in no layer of the table" in out


def test_a_bare_include_fails(tree):
    # one include style: a header of ext/ by its path under ext/, never a bare name
    append(tree / "ext" / "trace" / "trace.c", '\n#include "buf.h"\n')
    rc, out = run(tree)
    assert rc == 1
    assert 'ext/trace/trace.c: #include "buf.h" should be #include "util/buf.h"' in out


def test_fix_includes_applies_the_style(tree):
    append(tree / "ext" / "trace" / "trace.c", '\n#include "buf.h"\n')
    (tree / "tests").mkdir()
    (tree / "bench").mkdir()
    p = subprocess.run([sys.executable, str(CHECK), "--root", str(tree), "--fix-includes"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert '#include "util/buf.h"' in (tree / "ext" / "trace" / "trace.c").read_text()
    rc, out = run(tree)
    assert rc == 0, out


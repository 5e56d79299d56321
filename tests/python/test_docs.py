"""Every code block of README.md, python/README.md and docs/*.md runs against the demo
profile, so that an example can never rot again (docs/DOCTEST.md has the convention).

`examples/demo.sh` (what `make demo` runs) first builds build/demo/: the example Ascend
profile `profile/`, its analysis `analysis.db`, the ACL-graph profile `graph_profile/` with
scheduler context, and its analysis `graph.db`. Each document then gets a workspace of its
own that looks like the repository root: a fresh copy of build/demo/, the extension and the
CLI at build/traceloom(.so), and every other top-level folder linked. Its blocks run there,
in document order, so a block may use what an earlier block of the same document wrote:

- `sql`: `sqlite3 -bail build/demo/analysis.db` reads the block (`.open` another database
  in the block to use it, `.load build/traceloom` to call the extension's functions);
- `sh` / `bash` / `shell`: `bash -e -o pipefail`, with `traceloom` on PATH (the CLI, as the
  Python package installs it) and `python` the test interpreter;
- `python` / `py`: the test interpreter, with python/ importable and the build folder's
  native files (TRACELOOM_NATIVE_DIR), as after `pip install ./python`.

A non-zero exit, or any SQL error, fails the block's test with the block and its output.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import docblocks
from conftest import BUILD, ROOT

BLOCKS = docblocks.collect(ROOT)
BLOCK_TIMEOUT_S = 300


def runnable_or_skipped(block: docblocks.Block) -> bool:
    return block.runner is not None or block.skip is not None or block.skip_error is not None


@pytest.fixture(scope="session")
def demo_dir() -> Path:
    return docblocks.run_demo(ROOT, BUILD)


@pytest.fixture(scope="session")
def workspaces(demo_dir, tmp_path_factory):
    """One workspace per document, made on its first block."""
    made = {}

    def get(document: str) -> Path:
        if document not in made:
            base = tmp_path_factory.mktemp("doc-" + document.replace("/", "-").replace(".", "-"))
            made[document] = docblocks.make_workspace(base, demo_dir, ROOT, BUILD)
        return made[document]
    return get


def block_env(ws: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRACELOOM_NATIVE_DIR"}
    env["PATH"] = f"{ws.parent / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT / "python")
    env["TRACELOOM_NATIVE_DIR"] = str(BUILD.resolve())
    return env


def run_block(block: docblocks.Block, ws: Path) -> subprocess.CompletedProcess:
    script = ws.parent / f"block-{block.line}"
    script.write_text(block.code)
    if block.runner == "sql":
        cmd = ["sqlite3", "-bail", "build/demo/analysis.db"]
        stdin = script.open()
    elif block.runner == "shell":
        cmd, stdin = ["bash", "-e", "-o", "pipefail", str(script)], subprocess.DEVNULL
    else:
        cmd, stdin = [sys.executable, str(script)], subprocess.DEVNULL
    try:
        return subprocess.run(cmd, cwd=ws, env=block_env(ws), stdin=stdin, capture_output=True,
                              text=True, timeout=BLOCK_TIMEOUT_S)
    finally:
        if stdin is not subprocess.DEVNULL:
            stdin.close()


@pytest.mark.parametrize("block", [b for b in BLOCKS if runnable_or_skipped(b)],
                         ids=lambda b: b.test_id)
def test_doc_block_runs(block, workspaces):
    assert block.skip_error is None, block.skip_error
    if block.skip is not None:
        pytest.skip(f"{block.test_id}: {block.skip}")
    r = run_block(block, workspaces(block.document))
    report = (f"{block.test_id} exited {r.returncode}\n--- block\n{block.code}"
              f"--- stdout\n{r.stdout[-4000:]}\n--- stderr\n{r.stderr[-4000:]}")
    assert r.returncode == 0, report
    if block.runner == "sql":
        # The shell reports some errors (a failed .load, say) without a non-zero exit.
        assert "Error" not in r.stderr and "error" not in r.stderr.lower(), report


def test_the_documents_have_runnable_blocks():
    # A parser that silently found nothing would make every test above vacuous.
    by_doc = {}
    for b in BLOCKS:
        if b.runner and b.skip is None:
            by_doc.setdefault(b.document, set()).add(b.runner)
    assert {"sql", "shell", "python"} <= by_doc.get("README.md", set()), by_doc
    assert "python" in by_doc.get("python/README.md", set()), by_doc


def test_parser_follows_commonmark_fences_and_skip_lines():
    text = "\n".join([
        "intro",
        "```sql",
        "SELECT 1;",
        "```",
        "<!-- doctest: skip (needs a GPU) -->",
        "~~~~sh",
        "nvidia-smi",
        "```",          # shorter and of another kind: still inside the block
        "~~~~",
        "  ```python",
        "  print(1)",
        "  ```",
        "<!-- doctest: skip -->",
        "```bash",
        "true",
        "```",
        "```",
        "plain text",
        "```",
    ])
    blocks = docblocks.parse(text, "x.md")
    assert [(b.line, b.language, b.runner, b.skip) for b in blocks] == [
        (2, "sql", "sql", None), (6, "sh", "shell", "needs a GPU"),
        (10, "python", "python", None), (14, "bash", "shell", None), (17, "", None, None)]
    assert blocks[0].code == "SELECT 1;\n"
    assert blocks[1].code == "nvidia-smi\n```\n"
    assert blocks[2].code == "print(1)\n"
    assert blocks[3].skip_error and "needs a reason" in blocks[3].skip_error

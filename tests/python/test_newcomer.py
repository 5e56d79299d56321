"""What a newcomer met in their first hour with the README and the CLI (branch fh46), each
pinned by a test that failed before its fix: output samples in the README that the commands
no longer print, paths the documents name that do not exist, and CLI messages that did not
say what happened or what to do.
"""
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

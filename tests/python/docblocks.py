"""The fenced code blocks of the project's Markdown documents, as tests/python/test_docs.py
runs them (the convention is documented in docs/DOCTEST.md).

A block is a CommonMark fence (``` or ~~~, three or more) with an info string; its first
word is the language. Blocks in RUN_LANGUAGES run; every other language (text, yaml, json,
c, none at all, ...) is a sample and does not. The line directly above a fence may say

    <!-- doctest: skip (why it cannot run here) -->

and the block is reported as skipped with that reason; a skip without a reason is an error.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

#: The documents whose blocks run, relative to the repository root (docs/*.md by glob).
DOCUMENTS = ("README.md", "python/README.md", "docs/*.md")

#: Language of the info string -> how the block runs.
RUN_LANGUAGES = {"sql": "sql", "sh": "shell", "bash": "shell", "shell": "shell",
                 "python": "python", "py": "python"}

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)(.*)$")
_SKIP = re.compile(r"^\s*<!--\s*doctest:\s*skip\b(.*?)-->\s*$")
_REASON = re.compile(r"^\s*\((.+)\)\s*$")


@dataclass
class Block:
    document: str        # path relative to the repository root
    line: int            # 1-based line of the opening fence
    language: str        # first word of the info string, lower-cased ('' when none)
    code: str
    skip: Optional[str]  # the reason of a doctest: skip line above the fence
    skip_error: Optional[str] = None  # a skip line without a reason

    @property
    def runner(self) -> Optional[str]:
        return RUN_LANGUAGES.get(self.language)

    @property
    def test_id(self) -> str:
        return f"{self.document}:{self.line}:{self.language or 'none'}"


def documents(root: Path) -> List[Path]:
    found: List[Path] = []
    for pattern in DOCUMENTS:
        found.extend(sorted(root.glob(pattern)))
    return [p for p in found if p.is_file()]


def parse(text: str, document: str) -> List[Block]:
    """Every fenced block of a Markdown text, in order."""
    lines = text.split("\n")
    blocks: List[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = len(m.group(1)), m.group(2), m.group(3).lower()
        start = i
        body: List[str] = []
        i += 1
        while i < len(lines):
            close = re.match(r"^ {0,3}(" + re.escape(fence[0]) + r"{" + str(len(fence)) + r",})\s*$",
                             lines[i])
            if close:
                break
            # Content lines lose up to the opening fence's indentation (CommonMark).
            line = lines[i]
            strip = min(indent, len(line) - len(line.lstrip(" ")))
            body.append(line[strip:])
            i += 1
        i += 1  # past the closing fence (or the end of the text)
        skip = skip_error = None
        above = lines[start - 1] if start > 0 else ""
        s = _SKIP.match(above)
        if s:
            reason = _REASON.match(s.group(1))
            if reason:
                skip = reason.group(1).strip()
            else:
                skip_error = (f"{document}:{start}: a doctest skip needs a reason: "
                              "<!-- doctest: skip (why) -->")
        blocks.append(Block(document, start + 1, lang, "\n".join(body) + "\n", skip, skip_error))
    return blocks


def collect(root: Path) -> List[Block]:
    out: List[Block] = []
    for path in documents(root):
        out.extend(parse(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix()))
    return out


def run_demo(root: Path, build: Path) -> Path:
    """build/demo as `make demo` leaves it (re-analysed now, so it matches this build)."""
    r = subprocess.run(["bash", str(root / "examples" / "demo.sh")], cwd=root,
                       env={**os.environ, "BUILD": str(build)}, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError(f"examples/demo.sh failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    demo = build / "demo"
    for name in ("profile", "analysis.db", "graph_profile", "graph.db"):
        if not (demo / name).exists():
            raise AssertionError(f"examples/demo.sh left no {demo / name}")
    return demo


def make_workspace(base: Path, demo: Path, root: Path, build: Path) -> Path:
    """base/ws: a folder that looks like the repository root after `make demo` (a fresh copy
    of build/demo, the CLI and the extension linked at build/, every other top-level folder
    linked), and base/bin with `traceloom` (the CLI) and `python` (this interpreter)."""
    ws = base / "ws"
    ws.mkdir()
    for entry in root.iterdir():
        if entry.name in ("build", ".git", ".venv") or entry.name.startswith(".pytest"):
            continue
        (ws / entry.name).symlink_to(entry)
    (ws / "build").mkdir()
    for name in ("traceloom", "traceloom.so", "fixtures"):
        if (build / name).exists():
            (ws / "build" / name).symlink_to(build.resolve() / name)
    shutil.copytree(demo, ws / "build" / "demo", symlinks=True)
    bin_dir = base / "bin"
    bin_dir.mkdir()
    (bin_dir / "traceloom").write_text(f'#!/bin/sh\nexec "{build.resolve() / "traceloom"}" "$@"\n')
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)
    return ws

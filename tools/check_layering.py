#!/usr/bin/env python3
"""The layering check of `make test`: the real #include graph of ext/ against the table of
allowed dependencies in docs/ARCHITECTURE.md ("Layers").

    tools/check_layering.py [--root DIR]     exit 0 when every rule holds, 1 with the list
    tools/check_layering.py --fix-includes   rewrites the #include "..." of ext/, tests/ and
                                             bench/ C files into the one style (rule 5)

Rules:
  1. Every file of ext/ belongs to exactly one layer of the table (by folder or file name).
  2. An #include "..." that crosses layers goes to a layer its row allows, or is listed in
     the exceptions table (from layer, to layer, the files allowed). An allowed layer must
     come earlier in the table: the table itself can hold no cycle, so a new back edge
     fails rule 2 or this one.
  3. Profile databases are opened by ext/source only: tl_sql_open_ro (the profile opener) is
     called only there, sqlite3_open* only in ext/util/dbopen.c and the CLI, tl_db_open_ro
     (read-only, any database) only in ext/source, ext/util and ext/export (analysis
     databases); no SQL text outside ext/source ATTACHes a database, but for the driver's
     staging file (ext/analyze/staging.c attaches the private file it created itself).
  4. The trace is filled by its loader only: tl_trace_add_event / tl_trace_add_call are
     called in ext/trace only.
  5. One include style: a header of ext/ is included by its path under ext/, with its
     folder ("util/buf.h", "source/source.h", "traceloom.h"), never relative to the
     including file or by a bare name found through -Iext/util.
  6. Every exception is still needed (an unused one must be deleted from the table).
"""
import argparse
import glob
import os
import re
import sys

# Rule 5 (one include style): python3 tools/check_layering.py --fix-includes applies it.
STYLE = True
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
BEGIN, END = "<!-- layers:begin -->", "<!-- layers:end -->"
XBEGIN, XEND = "<!-- layer-exceptions:begin -->", "<!-- layer-exceptions:end -->"

# Rule 3: the one ATTACH outside ext/source, of a file that is never a profile (the staging
# database of the publication's second writer, docs/ARCHITECTURE.md "Publication").
ATTACH_STAGING = "analyze/staging.c"

# Rule 3 and 4: a call -> the files or folders (prefixes under ext/) that may make it.
CALLS = {
    "tl_sql_open_ro": ["source/"],
    "sqlite3_open": ["util/dbopen.c", "cli/main.c"],
    "tl_db_open_ro": ["source/", "util/", "export/", "compare/"],
    "tl_trace_add_event": ["trace/"],
    "tl_trace_add_call": ["trace/"],
}


def strip_comments(text):
    """C text without comments and string contents (for call searches)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def table_rows(doc, begin, end):
    if begin not in doc or end not in doc:
        sys.exit(f"check_layering: docs/ARCHITECTURE.md lacks the {begin} ... {end} table")
    rows = []
    for line in doc[doc.index(begin):doc.index(end)].splitlines():
        line = line.strip()
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append(cells)
    return rows[1:]  # the header row


def names(cell):
    """`a`, `b` or a, b -> [a, b] (backticks and spaces removed; empty cell -> [])."""
    return [x.strip().strip("`") for x in cell.split(",") if x.strip().strip("`")]


def ext_headers(ext):
    return set(os.path.relpath(p, ext) for p in glob.glob(os.path.join(ext, "**", "*.h"),
                                                           recursive=True))


def header_of(path, inc, ext, headers):
    """The ext/ header that #include "inc" in path finds (the C search order: the file's
    folder, then -Iext, then -Iext/util), as its path under ext/; None for other headers."""
    local = os.path.normpath(os.path.join(os.path.dirname(path), inc))
    if os.path.exists(local):
        rel = os.path.relpath(local, ext)
        return rel if rel in headers else None
    if inc in headers:
        return inc
    if os.path.join("util", inc) in headers:
        return os.path.join("util", inc)
    return None


def fix_includes(root):
    """Rule 5 applied: every include of an ext/ header written as its path under ext/."""
    ext = os.path.join(root, "ext")
    headers = ext_headers(ext)
    changed = 0
    for top in ("ext", "tests", "bench"):
        for path in sorted(glob.glob(os.path.join(root, top, "**", "*.[ch]"), recursive=True)):
            text = open(path).read()

            def fix(m):
                target = header_of(path, m.group(2), ext, headers)
                return m.group(0) if target is None else m.group(1) + target + '"'
            new = re.sub(r'^(\s*#\s*include\s+")([^"]+)"', fix, text, flags=re.M)
            if new != text:
                open(path, "w").write(new)
                changed += 1
    print(f"check_layering: include style applied to {changed} file(s)")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--fix-includes", action="store_true")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if args.fix_includes:
        return fix_includes(root)
    ext = os.path.join(root, "ext")
    doc = open(os.path.join(root, "docs", "ARCHITECTURE.md")).read()

    layers, order, members = {}, {}, []  # name -> allowed; name -> rank; (member, name)
    for i, (name, files, allowed, *_rest) in enumerate(table_rows(doc, BEGIN, END)):
        layers[name] = set(names(allowed))
        order[name] = i
        members += [(m[len("ext/"):] if m.startswith("ext/") else m, name) for m in names(files)]
    exceptions = {}  # (from, to) -> set of files (relative to ext/)
    for frm, to, files, *_why in table_rows(doc, XBEGIN, XEND):
        exceptions[(frm.strip("`"), to.strip("`"))] = {f[len("ext/"):] if f.startswith("ext/") else f
                                                      for f in names(files)}
    problems, used = [], set()

    for name, allowed in layers.items():
        for a in sorted(allowed):
            if a not in order:
                problems.append(f"layer {name}: unknown layer {a} in its row")
            elif order[a] >= order[name]:
                problems.append(f"layer {name} may include {a}, which comes later in the table "
                                f"(a back edge: move the code or the row)")

    def layer_of(rel):
        best = None
        for m, name in members:
            if rel == m or (m.endswith("/") and rel.startswith(m)):
                if best is None or len(m) > len(best[0]):
                    best = (m, name)
        return best[1] if best else None

    files = sorted(os.path.relpath(p, ext) for p in glob.glob(os.path.join(ext, "**", "*.[ch]"),
                                                              recursive=True))
    headers = set(f for f in files if f.endswith(".h"))
    for rel in files:
        lay = layer_of(rel)
        if lay is None:
            problems.append(f"ext/{rel}: in no layer of the table (add its folder to a row)")
            continue
        text = open(os.path.join(ext, rel)).read()
        for inc in INCLUDE.findall(text):
            target = header_of(os.path.join(ext, rel), inc, ext, headers)
            if target is None:
                continue  # a system or generated header
            if STYLE and inc != target:
                problems.append(f'ext/{rel}: #include "{inc}" should be #include "{target}" '
                                f"(one include style: the path under ext/)")
            to = layer_of(target)
            if to is None or to == lay or to in layers[lay]:
                continue
            allowed_files = exceptions.get((lay, to))
            if allowed_files is not None and rel in allowed_files:
                used.add((lay, to, rel))
                continue
            problems.append(f'ext/{rel}: #include "{inc}": layer {lay} may not include {to} '
                            f"(docs/ARCHITECTURE.md, Layers)")
        code = strip_comments(text)
        for call, where in CALLS.items():
            if not re.search(r"\b" + call + r"\w*\s*\(", code):
                continue
            if any(rel == w or (w.endswith("/") and rel.startswith(w)) for w in where):
                continue
            if rel in exceptions.get((lay, call), set()):
                used.add((lay, call, rel))
                continue
            problems.append(f"ext/{rel}: calls {call}, allowed only in "
                            + ", ".join("ext/" + w for w in where))
        if (not rel.startswith("source/") and rel != ATTACH_STAGING
                and re.search(r'"[^"\n]*\bATTACH\b', code)):
            problems.append(f"ext/{rel}: SQL that ATTACHes a database outside ext/source")

    for (frm, to), fs in sorted(exceptions.items()):
        for f in sorted(fs):
            if (frm, to, f) not in used:
                problems.append(f"exception {frm} -> {to} for ext/{f} is no longer needed: "
                                f"delete it from docs/ARCHITECTURE.md")

    for p in problems:
        print("check_layering: " + p)
    if problems:
        print(f"check_layering: {len(problems)} problem(s)")
        return 1
    print(f"check_layering: {len(files)} files in {len(layers)} layers, "
          f"{sum(len(v) for v in exceptions.values())} listed exception(s): ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

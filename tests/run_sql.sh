#!/usr/bin/env bash
# Runs SQL test files through the sqlite3 shell with the extension loaded.
#
# Each file runs in a fresh in-memory database with the working directory at the build
# folder, so `fixtures/...` names materialized fixtures and `./traceloom` the extension.
# An assertion is a row `SELECT 'label', <condition>;` that prints `label|1`; a row ending
# in `|0`, any SQL error, or an `expect-error:` mismatch fails the file.
#
# Other output lines (the summary a bare `SELECT traceloom_analyze(...)` returns, say) are
# shown only under a failing file, as context, or always with TRACELOOM_SQL_VERBOSE=1: a
# passing run prints one `ok` line per file and the count.
#
# `-- include: FILE` inserts FILE (relative to the test file) at that line.
# Errors that must happen are written as a comment line followed by one statement:
#   -- expect-error: <substring of the message>
#   SELECT traceloom_analyze('fixtures/bad/not_sqlite.db');
set -uo pipefail
BUILD="${BUILD:-build}"
ROOT="$(pwd)"
passed=0; failed=0
for f in "$@"; do
  case "$f" in /*) abs="$f";; *) abs="$ROOT/$f";; esac
  # Split into chunks: plain SQL runs as one script; each expect-error statement alone.
  tmpdir="$(mktemp -d)"
  python3 - "$abs" "$tmpdir" <<'PY'
import sys, re, os
src, out = sys.argv[1], sys.argv[2]
def expand(path):
    out = []
    for line in open(path).read().split('\n'):
        m = re.match(r'\s*--\s*include:\s*(\S+)', line)
        out.extend(expand(os.path.join(os.path.dirname(path), m.group(1))) if m else [line])
    return out
lines = expand(src)
chunks, cur, i = [], [], 0
while i < len(lines):
    m = re.match(r'\s*--\s*expect-error:\s*(.*)$', lines[i])
    if m:
        if cur: chunks.append(('ok', '\n'.join(cur))); cur = []
        stmt = []; i += 1
        while i < len(lines):
            stmt.append(lines[i])
            if lines[i].rstrip().endswith(';'): break
            i += 1
        chunks.append(('err:' + m.group(1).strip(), '\n'.join(stmt)))
    else:
        cur.append(lines[i])
    i += 1
if cur: chunks.append(('ok', '\n'.join(cur)))
for n, (kind, body) in enumerate(chunks):
    with open(os.path.join(out, '%04d.sql' % n), 'w') as fh: fh.write(body + '\n')
    with open(os.path.join(out, '%04d.kind' % n), 'w') as fh: fh.write(kind)
PY
  fail_file=0
  notes=""
  # All chunks share one database file so later assertions see earlier analysis results.
  dbfile="$tmpdir/test.db"
  for chunk in "$tmpdir"/*.sql; do
    kind="$(cat "${chunk%.sql}.kind")"
    out="$(cd "$BUILD" && sqlite3 -bail -cmd '.load ./traceloom' "$dbfile" <"$chunk" 2>&1)"; rc=$?
    if [ "$kind" = ok ]; then
      if [ $rc -ne 0 ]; then echo "FAIL $f: $out" | head -20; fail_file=1; failed=$((failed+1)); break; fi
      while IFS= read -r line; do
        [ -z "$line" ] && continue
        case "$line" in
          *'|1') passed=$((passed+1));;
          *'|0') echo "FAIL $f: $line"; failed=$((failed+1)); fail_file=1;;
          *) notes+="  $f: $line"$'\n';;
        esac
      done <<<"$out"
    else
      want="${kind#err:}"
      if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$out"; then passed=$((passed+1))
      else echo "FAIL $f: expected error containing '$want', got (rc=$rc): $out" | head -20; failed=$((failed+1)); fail_file=1; fi
    fi
  done
  rm -rf "$tmpdir"
  if [ $fail_file != 0 ] || [ -n "${TRACELOOM_SQL_VERBOSE:-}" ]; then printf '%s' "$notes"; fi
  [ $fail_file = 0 ] && echo "ok   $f"
done
echo "sql: $passed passed, $failed failed"
[ $failed = 0 ]

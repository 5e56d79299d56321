#!/usr/bin/env python3
"""make_corpus: seed corpora and dictionaries for the libFuzzer harnesses (make fuzz).

  tests/fuzz/make_corpus.py FIXTURES OUT

FIXTURES is the materialized fixture folder (make fixtures); OUT gets one corpus folder per
harness (OUT/<harness>/) and a dictionary per harness (OUT/<harness>.dict):

  json     analyze options, spec-shaped documents and edge cases of strict JSON
  options  the analyze options (valid and each documented rejection)
  rules    the bundled rule manifests and configs and the test rule files
  reader   byte 0 selects the base profile (0 Ascend, 1 Nsight, 2 Hygon), the rest is SQL
           run on a copy of it: the fixtures' own mutation scripts, and per table and
           column NULL / text / negative / INT64_MAX values, dropped columns and tables
           (the dictionary adds the extreme values the mutator splices in)

Only files under OUT are written. The same inputs give the same corpus.
"""
import hashlib
import pathlib
import sqlite3
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "fixtures" / "ascend_sqlite"

BASES = [  # must match fuzz_reader.c
    "exact_hlt/mono/PROF_0/msprof_0.db",
    "nsys/nsys_basic.sqlite",
    "hygon/hipprof.db",
]

JSON_SEEDS = [
    '{}', '{"threads":2}', '{"source_kind":"auto","progress":false}', '{"embed_raw":true}',
    '{"rules_config":"scheduler-step"}', '{"rules_config":null}', '[1,2.5,-0,1e308,-1e-308]',
    '"\\u00e9\\ud83d\\ude00\\n\\t\\\\\\"\\u0000"', '9223372036854775807', '-9223372036854775808',
    '9223372036854775808', 'null', 'true', 'false', '\ufeff{"a":[{"b":{}}]}', '{"a":1,"a":2}',
    '01', 'NaN', '"\\ud800"', '[' * 64 + ']' * 64, '{"window_ns":1000000,"k":[null,true]}',
    '1.5e+10', '"\x01"', '{"a" : 1 , "b" : [ ] }',
]

OPTION_SEEDS = [
    '', '{}', '{"threads":1}', '{"threads":256}', '{"threads":0}', '{"threads":"2"}',
    '{"threads":2.0}', '{"source_kind":"ascend_sqlite_hot_path"}', '{"source_kind":"cuda_nsys_sqlite"}',
    '{"source_kind":"nope"}', '{"progress":true}', '{"progress":1}', '{"embed_raw":false}',
    '{"rules_config":"deepseekv4"}', '{"rules_config":""}', '{"rules_config":null}', '{"bogus":1}',
    '[]', '{"threads":4,"source_kind":"auto","progress":false,"embed_raw":true}',
]

# Per-column value mutations for the reader corpus.
VALUES = ["NULL", "'x'", "-1", "9223372036854775807"]


def write(folder: pathlib.Path, data: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def dict_file(path: pathlib.Path, words) -> None:
    lines = []
    for w in sorted(set(words)):
        esc = "".join(ch if 32 <= ord(ch) < 127 and ch not in '"\\' else
                      "".join("\\x%02X" % b for b in ch.encode()) for ch in w)
        lines.append('"%s"' % esc)
    path.write_text("\n".join(lines) + "\n")


def schema(db: pathlib.Path):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        out = {}
        for (t,) in con.execute("SELECT name FROM sqlite_schema WHERE type='table' ORDER BY name"):
            out[t] = [r[1] for r in con.execute('PRAGMA table_info("%s")' % t)]
        return out
    finally:
        con.close()


def main() -> int:
    fixtures, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)

    for s in JSON_SEEDS:
        write(out / "json", s.encode())
    dict_file(out / "json.dict", ['{', '}', '[', ']', ':', ',', '"', 'true', 'false', 'null',
                                  '\\u', '\\ud83d', '\\udc00', 'e+', 'E-', '-0', '.5', '\xef\xbb\xbf'])

    for s in OPTION_SEEDS:
        write(out / "options", s.encode())
    dict_file(out / "options.dict", ['"threads"', '"source_kind"', '"progress"', '"embed_raw"',
                                     '"rules_config"', '"auto"', '"ascend_sqlite_split"',
                                     '"hygon_sqlite"', '"kineto_json"', 'true', 'null'])

    yaml_words = set()
    for f in sorted([*ROOT.glob("rules/*.yaml"), *ROOT.glob("configs/*.yaml"),
                     *ROOT.glob("tests/fixtures/rules/*.yaml")]):
        data = f.read_bytes()
        write(out / "rules", data)
        for line in data.decode("utf-8", "replace").splitlines():
            key = line.strip().lstrip("- ").split(":", 1)[0]
            if key and key.replace("_", "").isalnum() and len(key) < 40:
                yaml_words.add(key + ":")
    dict_file(out / "rules.dict", [*yaml_words, "- ", ": ", "&a", "*a", "<<", "!!str", "|", ">",
                                   "{", "}", "[", "]", "'", '"', "---", "...", "#"])

    reader_words = set()
    for sel, base in enumerate(BASES):
        db = fixtures / base
        if not db.exists():
            print("make_corpus: missing %s (run make fixtures)" % db, file=sys.stderr)
            return 1
        prefix = bytes([sel])
        write(out / "reader", prefix)
        for table, cols in schema(db).items():
            reader_words.update([table, *cols])
            q = '"%s"' % table
            write(out / "reader", prefix + ('DROP TABLE %s;' % q).encode())
            write(out / "reader", prefix + ('DELETE FROM %s;' % q).encode())
            write(out / "reader", prefix + ('INSERT INTO %s SELECT * FROM %s;' % (q, q)).encode())
            for c in cols:
                write(out / "reader", prefix + ('ALTER TABLE %s DROP COLUMN "%s";' % (q, c)).encode())
                for v in VALUES:
                    write(out / "reader", prefix + ('UPDATE %s SET "%s"=%s;' % (q, c, v)).encode())
    # The fixtures' own mutation scripts apply to the Ascend base.
    for m in sorted(SHARED.glob("*/mutations/*.sql")):
        write(out / "reader", b"\x00" + m.read_bytes())
    dict_file(out / "reader.dict", [*reader_words, "UPDATE ", " SET ", " WHERE ", "DELETE FROM ",
                                    "DROP TABLE ", "ALTER TABLE ", " DROP COLUMN ", " RENAME TO ",
                                    "INSERT INTO ", " SELECT ", "NULL", "rowid", "CREATE TABLE ",
                                    "CREATE VIEW ", "-1", "9223372036854775807", "4294967295",
                                    "-9223372036854775808", "X'00'", "1e300", "'x'"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
  split    byte 0 selects the split profile (0 exact_hlt/split, 1 split_golden/split), byte 1
           the file (index in the sorted file list), the rest is SQL run on a copy of it;
           the same per table and column mutations as the reader corpus
  replay   byte 0 selects the graph profile (exact_hlt, aclgraph_smoke, body_mismatch,
           nsys_graph), byte 1 the file, the rest is SQL: per table and column mutations
           plus the graph-evidence mutations (controls, model ids, capture streams)
  kineto   the Kineto fixtures (JSON and .json.gz) as they are, compact excerpts of the
           large traces (one event of each phase and category), and per event field
           NULL / string / negative / huge / missing values
  context  scheduler.jsonl + NUL + worker0.jsonl pairs of the context fixtures, the
           rejected fixture files, and single-record variants

Only files under OUT are written. The same inputs give the same corpus.
"""
import hashlib
import pathlib
import sqlite3
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "fixtures" / "ascend_sqlite"

SPLIT_BASES = ["exact_hlt/split", "split_golden/split"]  # must match fuzz_split.c
REPLAY_BASES = [  # must match fuzz_replay.c: (copied folder, only this file of it)
    ("exact_hlt/mono", None), ("aclgraph_smoke/mono", None), ("body_mismatch/mono", None),
    ("nsys", "nsys_graph.sqlite"),
]

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


def tree(root: pathlib.Path, only=None):
    """Files under root, relative, sorted as fuzz_profile.h sorts them (strcmp order)."""
    rels = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.parts))
    return [r for r in rels if only is None or r == only]


def table_mutations(db: pathlib.Path, words: set):
    """SQL seeds for every table and column of db (as for the reader corpus)."""
    out = []
    for table, cols in schema(db).items():
        words.update([table, *cols])
        q = '"%s"' % table
        out += ['DROP TABLE %s;' % q, 'DELETE FROM %s;' % q,
                'INSERT INTO %s SELECT * FROM %s;' % (q, q),
                'DELETE FROM %s WHERE rowid %% 2 = 0;' % q,
                'UPDATE %s SET rowid = -rowid;' % q]
        for c in cols:
            out.append('ALTER TABLE %s DROP COLUMN "%s";' % (q, c))
            out.append('ALTER TABLE %s RENAME COLUMN "%s" TO "%s_renamed";' % (q, c, c))
            for v in VALUES:
                out.append('UPDATE %s SET "%s"=%s;' % (q, c, v))
            out.append('UPDATE %s SET "%s"="%s"+1 WHERE rowid %% 3 = 0;' % (q, c, c))
    return out


def kineto_excerpt(doc: dict, per_kind: int) -> dict:
    """The document with at most per_kind events of each (ph, cat), in array order."""
    seen, events = {}, []
    for ev in doc.get("traceEvents", []):
        key = (ev.get("ph"), ev.get("cat")) if isinstance(ev, dict) else None
        if seen.get(key, 0) < per_kind:
            seen[key] = seen.get(key, 0) + 1
            events.append(ev)
    out = {k: v for k, v in doc.items() if k != "traceEvents"}
    out["traceEvents"] = events
    return out


def kineto_seeds(fixtures: pathlib.Path, folder: pathlib.Path, words: set) -> None:
    import gzip
    import json
    docs = []
    for f in sorted((fixtures / "kineto").rglob("*")):
        if not f.is_file():
            continue
        data = f.read_bytes()
        if len(data) <= 16384:
            write(folder, data)
        try:
            text = gzip.decompress(data) if f.name.endswith(".gz") else data
            doc = json.loads(text)
        except (OSError, ValueError, EOFError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
            docs.append(doc)
    compact = lambda d: json.dumps(d, separators=(",", ":")).encode()
    for doc in docs:
        for per_kind in (1, 3):
            ex = kineto_excerpt(doc, per_kind)
            data = compact(ex)
            if len(data) <= 8192:
                write(folder, data)
                write(folder, gzip.compress(data, mtime=0))
        for k in doc:
            words.add('"%s"' % k)
    # Per field of a kernel, memcpy and runtime event: wrong values and absence.
    base = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_64x64_nn", "pid": 0, "tid": 7,
         "ts": 100.5, "dur": 3.25, "args": {"device": 0, "stream": 7, "correlation": 11,
                                              "context": 1}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": "stream 7",
         "ts": 90.0, "dur": 1.0, "args": {"device": 0, "stream": 7, "correlation": 10}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 42, "tid": 43,
         "ts": 99.0, "dur": 1.5, "args": {"correlation": 11}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 42, "tid": 43,
         "ts": 98.0, "dur": 0.5, "args": {"correlation": 12}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 42, "tid": 43, "ts": 97.0,
         "dur": 4.0}], "baseTimeNanoseconds": 1700000000000000000}
    write(folder, compact(base))
    values = [None, "x", -1, -1e300, 1e300, 9223372036854775807, 18446744073709551616,
              [], {}, True, 1.0000000005]
    for i in range(len(base["traceEvents"])):
        for field in ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args"]:
            for v in values + ["<missing>"]:
                doc = json.loads(json.dumps(base))
                if v == "<missing>":
                    doc["traceEvents"][i].pop(field, None)
                else:
                    doc["traceEvents"][i][field] = v
                write(folder, compact(doc))
        for arg in ["device", "stream", "correlation", "context"]:
            for v in [None, "x", -1, 4294967296, 9223372036854775807, "stream 9"]:
                doc = json.loads(json.dumps(base))
                doc["traceEvents"][i].setdefault("args", {})[arg] = v
                write(folder, compact(doc))
    for v in [None, "1", -1, 9223372036854775807, 1.5]:
        doc = json.loads(json.dumps(base))
        doc["baseTimeNanoseconds"] = v
        write(folder, compact(doc))
    words.update(['"traceEvents"', '"ph"', '"X"', '"cat"', '"kernel"', '"gpu_memcpy"',
                  '"gpu_memset"', '"cuda_runtime"', '"cuda_driver"', '"cpu_op"',
                  '"user_annotation"', '"python_function"', '"name"', '"pid"', '"tid"',
                  '"ts"', '"dur"', '"args"', '"device"', '"stream"', '"correlation"',
                  '"context"', '"baseTimeNanoseconds"', '"distributedInfo"', '"rank"',
                  '"deviceProperties"', '"cudaGraphLaunch"', '"ProfilerStep#1"', '"nccl"',
                  'ncclKernel_AllReduce', '9223372036854775807', '-1', '1e308', '0.0005',
                  '{', '}', '[', ']', ':', ',', 'null', 'true', '\\u0000'])


def context_seeds(fixtures: pathlib.Path, folder: pathlib.Path, words: set) -> None:
    import json
    root = fixtures / "context_gen"
    for sched in sorted(root.rglob("scheduler.jsonl")):
        s = sched.read_bytes()
        write(folder, s)
        for worker in sorted(sched.parent.glob("worker*.jsonl")):
            w = worker.read_bytes()
            write(folder, s + b"\0" + w)
            # A few records of each: small seeds the mutator can work on quickly.
            head = lambda b, n: b"".join(b.splitlines(keepends=True)[:n])
            write(folder, head(s, 3) + b"\0" + head(w, 3))
            lines = s.splitlines() + w.splitlines()
            for line in lines[:50]:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict):
                    words.update('"%s"' % k for k in rec)
                    for k, v in rec.items():
                        if isinstance(v, str) and len(v) < 40:
                            words.add('"%s"' % v)
    for bad in sorted((root / "bad").glob("*.jsonl")) if (root / "bad").exists() else []:
        write(folder, bad.read_bytes())
    words.update(['{', '}', '[', ']', ':', ',', 'null', 'true', 'false', '\\n', '-1',
                  '9223372036854775807', '"type"', '"session"', '"step"', '"execution"',
                  '"summary"', '"schema"', '"traceloom.scheduler.v1"', '"requests"'])


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
    # Split profiles and graph profiles: byte 0 base, byte 1 file, SQL.
    split_words = set()
    for sel, base in enumerate(SPLIT_BASES):
        root = fixtures / base
        for fi, rel in enumerate(tree(root)):
            prefix = bytes([sel, fi])
            write(out / "split", prefix)
            for sql in table_mutations(root / rel, split_words):
                write(out / "split", prefix + sql.encode())
    # The split-specific rules: negative durations, NULL start, time in ticks overflowing.
    for sql in ['UPDATE AscendTask SET duration = -duration;',
                'UPDATE AscendTask SET start_time = 9223372036854775807 - duration;',
                'UPDATE AscendTask SET duration = 9223372036854775807;',
                'UPDATE ApiData SET "end" = start - 1;',
                'UPDATE ApiData SET start = 922337203685477580;',
                'UPDATE AscendTask SET connection_id = 0;',
                'UPDATE TaskInfo SET context_id = 4294967295;']:
        for sel in range(len(SPLIT_BASES)):
            for fi in range(len(tree(fixtures / SPLIT_BASES[sel]))):
                write(out / "split", bytes([sel, fi]) + sql.encode())
    replay_words = set()
    for sel, (base, only) in enumerate(REPLAY_BASES):
        root = fixtures / base
        for fi, rel in enumerate(tree(root, only)):
            prefix = bytes([sel, fi])
            write(out / "replay", prefix)
            for sql in table_mutations(root / rel, replay_words):
                write(out / "replay", prefix + sql.encode())
    for sql in ['UPDATE TASK SET modelId = modelId + 1 WHERE rowid % 5 = 0;',
                'UPDATE TASK SET streamId = streamId + 1 WHERE rowid % 4 = 0;',
                'UPDATE TASK SET endNs = startNs - 1 WHERE rowid % 7 = 0;',
                'DELETE FROM TASK WHERE rowid % 9 = 0;',
                'UPDATE TASK SET connectionId = NULL WHERE rowid % 3 = 0;',
                'INSERT INTO TASK SELECT * FROM TASK WHERE rowid % 2 = 0;']:
        for sel in range(3):
            n = len(tree(fixtures / REPLAY_BASES[sel][0]))
            for fi in range(n):
                write(out / "replay", bytes([sel, fi]) + sql.encode())
    for sql in ['UPDATE CaptureStreamInfo SET model_id = model_id + 1 WHERE rowid % 2 = 0;',
                'INSERT INTO CaptureStreamInfo SELECT * FROM CaptureStreamInfo;',
                'UPDATE CaptureStreamInfo SET stream_id = NULL;',
                'UPDATE CaptureStreamInfo SET device_id = 1;']:
        for sel in range(3):
            write(out / "replay", bytes([sel, 0]) + sql.encode())
    for sql in ['UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphNodeId = NULL WHERE rowid % 3 = 0;',
                'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = correlationId + 1 '
                'WHERE rowid % 4 = 0;',
                'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 1;',
                'UPDATE CUDA_GRAPH_NODE_EVENTS SET originalGraphNodeId = 0;',
                'INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL;']:
        write(out / "replay", bytes([3, 0]) + sql.encode())
    sql_words = ["UPDATE ", " SET ", " WHERE ", "DELETE FROM ", "DROP TABLE ", "ALTER TABLE ",
                 " DROP COLUMN ", " RENAME TO ", " RENAME COLUMN ", "INSERT INTO ", " SELECT ",
                 "NULL", "rowid", "CREATE TABLE ", "CREATE VIEW ", "-1", "9223372036854775807",
                 "4294967295", "-9223372036854775808", "X'00'", "X'FF'", "1e300", "'x'", " % "]
    dict_file(out / "split.dict", [*split_words, *sql_words])
    dict_file(out / "replay.dict", [*replay_words, *sql_words, "MODEL_EXECUTE", "NOTIFY_WAIT",
                                    "NOTIFY_RECORD", "EVENT_RECORD", "cudaGraphLaunch"])

    kineto_words = set()
    kineto_seeds(fixtures, out / "kineto", kineto_words)
    dict_file(out / "kineto.dict", kineto_words)
    (out / "kineto.max_len").write_text("16384\n")

    if (fixtures / "context_gen").exists():
        context_words = set()
        context_seeds(fixtures, out / "context", context_words)
        dict_file(out / "context.dict", context_words)
        (out / "context.max_len").write_text("32768\n")

    dict_file(out / "reader.dict", [*reader_words, "UPDATE ", " SET ", " WHERE ", "DELETE FROM ",
                                    "DROP TABLE ", "ALTER TABLE ", " DROP COLUMN ", " RENAME TO ",
                                    "INSERT INTO ", " SELECT ", "NULL", "rowid", "CREATE TABLE ",
                                    "CREATE VIEW ", "-1", "9223372036854775807", "4294967295",
                                    "-9223372036854775808", "X'00'", "1e300", "'x'"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

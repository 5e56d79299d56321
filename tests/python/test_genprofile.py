"""Tests of tools/genprofile.py: the generated databases match their ground_truth.json.

Every expectation is derived from the database with plain sqlite3 queries (joins on
globalTaskId, grouping by connectionId / correlationId, ordering by time), or from the
generation arguments by arithmetic, and compared with the generator's ground truth.
"""

import filecmp
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "tools", "genprofile.py")


def generate(out, *args):
    subprocess.run([sys.executable, GEN, "--out", str(out), "--quiet", *map(str, args)], check=True)
    with open(os.path.join(out, "ground_truth.json")) as f:
        return json.load(f)


def connect(path):
    return sqlite3.connect("file:%s?mode=ro" % path, uri=True)


def one(con, sql, *params):
    return con.execute(sql, params).fetchone()[0]


@pytest.fixture(scope="module")
def ascend(tmp_path_factory):
    out = tmp_path_factory.mktemp("ascend")
    truth = generate(out, "--format", "ascend", "--decode-steps", 40, "--prefill-steps", 2, "--layers", 3,
                     "--ops", 13, "--ranks", 2, "--seed", 7, "--aux", 0.08, "--noise", 0.04,
                     "--missing", 0.02)
    return out, truth


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """No perturbations: the device sequence is exactly the loop tree."""
    out = tmp_path_factory.mktemp("clean")
    truth = generate(out, "--decode-steps", 5, "--prefill-steps", 1, "--layers", 4, "--ops", 9,
                     "--aux", 0, "--noise", 0, "--missing", 0)
    return out, truth


def test_ascend_files_and_table_counts(ascend):
    out, truth = ascend
    assert truth["format"] == "ascend" and len(truth["ranks"]) == 2
    assert truth["files"] == ["PROF_0/msprof_0.db", "PROF_1/msprof_1.db"]
    for rank in truth["ranks"]:
        con = connect(out / rank["path"])
        for table, rows in rank["tables"].items():
            assert one(con, 'SELECT count(*) FROM "%s"' % table) == rows, table
        assert one(con, "SELECT count(*) FROM TASK") == rank["kernel_rows"]
        # Each perturbation kind is actually present in this profile.
        assert all(v > 0 for v in rank["perturbations"].values()), rank["perturbations"]
    assert truth["kernel_rows"] == sum(r["kernel_rows"] for r in truth["ranks"])


def test_ascend_schema_has_the_real_column_sets(ascend):
    out, truth = ascend
    con = connect(out / truth["files"][0])
    need = {
        "TASK": {"startNs", "endNs", "deviceId", "connectionId", "globalTaskId", "globalPid", "taskType",
                 "contextId", "streamId", "taskId", "modelId"},
        "STRING_IDS": {"id", "value"},
        "COMPUTE_TASK_INFO": {"globalTaskId", "name", "opType", "taskType"},
        "COMMUNICATION_TASK_INFO": {"globalTaskId", "name", "taskType"},
        "COMMUNICATION_OP": {"opName", "opType", "startNs", "endNs", "connectionId", "groupName", "opId",
                             "deviceId"},
        "CANN_API": {"startNs", "endNs", "type", "globalTid", "connectionId", "name"},
    }
    for table, cols in need.items():
        have = {r[1] for r in con.execute('PRAGMA table_info("%s")' % table)}
        assert cols <= have, (table, cols - have)


def test_ascend_timestamps_are_int64_near_1_7e18(ascend):
    out, truth = ascend
    for rank in truth["ranks"]:
        con = connect(out / rank["path"])
        for table in ("TASK", "COMMUNICATION_OP", "CANN_API"):
            assert one(con, "SELECT count(*) FROM %s WHERE typeof(startNs) <> 'integer' "
                            "OR typeof(endNs) <> 'integer' OR endNs <= startNs" % table) == 0
            lo, hi = con.execute("SELECT min(startNs), max(endNs) FROM %s" % table).fetchone()
            assert 1_700_000_000_000_000_000 < lo < hi < 1_800_000_000_000_000_000
        lo, hi = con.execute("SELECT min(startNs), max(endNs) FROM TASK").fetchone()
        t0, t1 = rank["time_range_ns"]
        assert t0 <= lo and hi <= t1
        # A stream never runs two tasks at once, extra kernels included.
        assert one(con, "SELECT count(*) FROM (SELECT startNs, lag(endNs) OVER (PARTITION BY deviceId, "
                        "streamId ORDER BY startNs) AS prev FROM TASK) WHERE startNs < prev") == 0
        assert one(con, "SELECT count(DISTINCT deviceId) FROM TASK") == 1
        assert one(con, "SELECT min(deviceId) FROM TASK") == rank["device_id"]


def test_ascend_kinds_from_identity_joins(ascend):
    out, truth = ascend
    for rank in truth["ranks"]:
        con = connect(out / rank["path"])
        compute = one(con, "SELECT count(*) FROM TASK t WHERE EXISTS (SELECT 1 FROM COMPUTE_TASK_INFO c "
                           "WHERE c.globalTaskId = t.globalTaskId)")
        comm = one(con, "SELECT count(*) FROM TASK t WHERE EXISTS (SELECT 1 FROM COMMUNICATION_TASK_INFO c "
                        "WHERE c.globalTaskId = t.globalTaskId)")
        copies = one(con, "SELECT count(*) FROM TASK t JOIN STRING_IDS s ON s.id = t.taskType "
                          "WHERE s.value = 'MEMCPY_ASYNC'")
        assert {"compute": compute, "communication": comm, "data_move": copies} == rank["task_rows_by_kind"]
        assert compute + comm + copies == rank["tables"]["TASK"]
        ops = one(con, "SELECT count(*) FROM COMMUNICATION_OP")
        assert rank["events"]["total"] == rank["tables"]["TASK"] + ops
        assert rank["events"]["by_kind"]["communication"] == comm + ops
        # Every name id decodes through STRING_IDS.
        for table, col in (("TASK", "taskType"), ("COMPUTE_TASK_INFO", "opType"), ("COMPUTE_TASK_INFO", "name"),
                           ("COMMUNICATION_TASK_INFO", "name"), ("COMMUNICATION_OP", "opName"),
                           ("CANN_API", "name")):
            assert one(con, "SELECT count(*) FROM %s x LEFT JOIN STRING_IDS s ON s.id = x.%s "
                            "WHERE s.id IS NULL" % (table, col)) == 0, (table, col)
        # Auxiliary and noise kernels, by their operator types.
        by_type = dict(con.execute("SELECT s.value, count(*) FROM COMPUTE_TASK_INFO c JOIN STRING_IDS s "
                                   "ON s.id = c.opType GROUP BY 1"))
        assert sum(by_type.get(t, 0) for t in ("TransData", "Cast", "ZerosLike")) == rank["perturbations"]["aux"]
        assert sum(by_type.get(t, 0) for t in ("Add", "Mul")) <= rank["perturbations"]["noise"]


def correlation_states(con, calls_table, calls_key, work_sql):
    """Counts relation states per identity key, as inputs.md section 10 defines them."""
    rows = con.execute(
        "WITH c AS (SELECT %s AS k, count(*) AS n FROM %s GROUP BY 1), w AS (SELECT k, count(*) AS n FROM (%s) "
        "GROUP BY 1), keys AS (SELECT k FROM c UNION SELECT k FROM w) "
        "SELECT coalesce(c.n, 0), coalesce(w.n, 0) FROM keys LEFT JOIN c USING (k) LEFT JOIN w USING (k)"
        % (calls_key, calls_table, work_sql)).fetchall()
    out = {"one_to_one": 0, "one_to_many": 0, "unmatched_runtime_call": 0, "unmatched_device_work": 0,
           "ambiguous": 0}
    for calls, work in rows:
        if calls > 1:
            out["ambiguous"] += 1
        elif calls == 1 and work == 1:
            out["one_to_one"] += 1
        elif calls == 1 and work > 1:
            out["one_to_many"] += 1
        elif calls == 1:
            out["unmatched_runtime_call"] += 1
        else:
            out["unmatched_device_work"] += 1
    out["keys"] = len(rows)
    return out


def test_ascend_correlations_by_connection_id(ascend):
    out, truth = ascend
    for rank in truth["ranks"]:
        con = connect(out / rank["path"])
        got = correlation_states(con, "CANN_API", "connectionId", "SELECT connectionId AS k FROM TASK")
        want = rank["correlations"]
        assert got["ambiguous"] == 0
        for key in ("one_to_one", "one_to_many", "unmatched_runtime_call", "unmatched_device_work", "keys"):
            assert got[key] == want[key], key
        assert want["supported_exact"] == got["one_to_one"] + got["one_to_many"]
        # Unmatched calls are the stream synchronizes plus the calls of dropped tasks.
        syncs = one(con, "SELECT count(*) FROM CANN_API a JOIN STRING_IDS s ON s.id = a.name "
                         "WHERE s.value = 'aclrtSynchronizeStream'")
        assert syncs == truth["structure"]["steps"]["total"]
        assert got["unmatched_runtime_call"] == syncs + rank["perturbations"]["dropped_tasks"]


def test_ascend_collectives_link_their_tasks(ascend):
    out, truth = ascend
    per = truth["ranks"][0]["correlations"]["tasks_per_collective"]
    assert per == 3
    for rank in truth["ranks"]:
        con = connect(out / rank["path"])
        linked = con.execute(
            "SELECT (SELECT count(*) FROM TASK t WHERE t.deviceId = o.deviceId AND t.connectionId = o.connectionId "
            "AND t.startNs < o.endNs AND t.endNs > o.startNs) FROM COMMUNICATION_OP o").fetchall()
        assert linked and all(n == per for (n,) in linked)
        phases = truth["structure"]["phases"]
        assert len(linked) == sum(p["steps"] * p["comm_ops_per_step"] for p in phases)
        assert one(con, "SELECT count(*) FROM TASK WHERE streamId = ? AND globalTaskId IN "
                        "(SELECT globalTaskId FROM COMMUNICATION_TASK_INFO)",
                   rank["streams"]["communication"]) == rank["task_rows_by_kind"]["communication"]


def test_ascend_dropped_tasks_are_absent(ascend):
    out, truth = ascend
    for rank in truth["ranks"]:
        con = connect(out / rank["path"])
        pos = rank["perturbation_positions"]
        ids = [d["global_task_id"] for d in pos["dropped_tasks"]]
        assert len(ids) == rank["perturbations"]["dropped_tasks"]
        q = ",".join("?" * len(ids))
        assert one(con, "SELECT count(*) FROM TASK WHERE globalTaskId IN (%s)" % q, *ids) == 0
        assert one(con, "SELECT count(*) FROM COMPUTE_TASK_INFO WHERE globalTaskId IN (%s)" % q, *ids) == 0
        # Neighbouring ids are there: the rows around a dropped task were kept.
        kept = [i + 1 for i in ids if i + 1 not in ids]
        assert one(con, "SELECT count(DISTINCT globalTaskId) FROM TASK WHERE globalTaskId IN (%s)"
                   % ",".join("?" * len(kept)), *kept) == len(kept)


def expand(body):
    seq = []
    for item in body:
        if isinstance(item, dict):
            seq += expand(item["body"]) * item["repeat"]
        else:
            seq.append(item)
    return seq


def test_clean_profile_sequence_is_the_loop_tree(clean):
    out, truth = clean
    s = truth["structure"]
    assert s["steps"] == {"prefill": 1, "decode": 5, "total": 6}
    assert s["layers"] == 4 and s["ops_per_layer"] == 9
    want = []
    for loop in s["loop_tree"]:
        want += expand(loop["body"]) * loop["repeat"]
    con = connect(out / truth["files"][0])
    # Device order, a collective's tasks folded into one item (its connectionId).
    got, seen = [], set()
    for conn, label in con.execute(
            "SELECT t.connectionId, coalesce(ot.value, ct.value, tt.value) FROM TASK t "
            "JOIN STRING_IDS tt ON tt.id = t.taskType "
            "LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
            "LEFT JOIN STRING_IDS ot ON ot.id = c.opType "
            "LEFT JOIN COMMUNICATION_OP o ON o.connectionId = t.connectionId "
            "LEFT JOIN STRING_IDS ct ON ct.id = o.opType ORDER BY t.startNs"):
        if conn in seen:
            continue
        seen.add(conn)
        got.append(label)
    assert got == want
    layer = s["phases"][1]["layer"]
    assert len(layer) == 9 and layer[3] == "IncreFlashAttention"
    assert s["phases"][0]["layer"][3] == "PromptFlashAttention"
    # Prefill steps carry prefill shapes, decode steps decode shapes.
    shapes = {r[0] for r in con.execute("SELECT s.value FROM COMPUTE_TASK_INFO c JOIN STRING_IDS s "
                                        "ON s.id = c.inputShapes")}
    assert shapes == {"2048,4096", "8,4096"}
    rank = truth["ranks"][0]
    rows_per_step = {p["name"]: p["kernel_rows_per_step"] for p in s["phases"]}
    assert rank["kernel_rows"] == rows_per_step["prefill"] + 5 * rows_per_step["decode"]
    # Decode layer: 9 ops, one of them a collective of 3 tasks: 8 + 3 task rows; head 2, tail 4.
    assert layer.count("hcom_allReduce_") == 1
    assert rows_per_step["decode"] == 2 + 4 * (8 + 3) + 4


def test_rows_option_derives_steps(tmp_path):
    truth = generate(tmp_path, "--rows", 20000, "--layers", 4, "--prefill-steps", 1)
    per_step = truth["structure"]["phases"][1]["kernel_rows_per_step"]
    assert abs(truth["kernel_rows"] - 20000) <= per_step
    assert truth["params"]["decode_steps"] == truth["structure"]["steps"]["decode"]


def test_same_seed_is_byte_identical(tmp_path):
    args = ("--decode-steps", 12, "--layers", 3, "--ranks", 2, "--seed", 3, "--aux", 0.1, "--noise", 0.05,
            "--missing", 0.02)
    generate(tmp_path / "a", *args)
    generate(tmp_path / "b", *args)
    generate(tmp_path / "c", *args[:-8], "--seed", 4, *args[-6:])
    for f in ("PROF_0/msprof_0.db", "PROF_1/msprof_1.db", "ground_truth.json"):
        assert filecmp.cmp(tmp_path / "a" / f, tmp_path / "b" / f, shallow=False), f
    assert not filecmp.cmp(tmp_path / "a" / "PROF_0/msprof_0.db", tmp_path / "c" / "PROF_0/msprof_0.db",
                           shallow=False)
    generate(tmp_path / "n1", "--format", "nsys", *args)
    generate(tmp_path / "n2", "--format", "nsys", *args)
    assert filecmp.cmp(tmp_path / "n1/profile.sqlite", tmp_path / "n2/profile.sqlite", shallow=False)


def test_nsys_profile_matches_ground_truth(tmp_path):
    truth = generate(tmp_path, "--format", "nsys", "--decode-steps", 20, "--layers", 3, "--ranks", 2,
                     "--aux", 0.1, "--noise", 0.05, "--missing", 0.03)
    assert truth["files"] == ["profile.sqlite"] and truth["source_kind"] == "cuda_nsys_sqlite"
    con = connect(tmp_path / "profile.sqlite")
    cols = {r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
    assert {"start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
            "demangledName", "shortName", "gridX", "blockX", "registersPerThread"} <= cols
    assert one(con, "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'")
    for rank in truth["ranks"]:
        dev = rank["device_id"]
        for table, rows in rank["tables"].items():
            if table == "CUPTI_ACTIVITY_KIND_RUNTIME":
                # Runtime rows carry no device: the rank's process is in globalTid.
                n = one(con, "SELECT count(*) FROM %s WHERE (globalTid >> 24) & 16777215 = ?" % table, 50000 + dev)
            else:
                n = one(con, "SELECT count(*) FROM %s WHERE deviceId = ?" % table, dev)
            assert n == rows, table
        nccl = one(con, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
                        "WHERE k.deviceId = ? AND s.value LIKE 'nccl%AllReduce%'", dev)
        assert nccl == rank["task_rows_by_kind"]["communication"]
    work = ("SELECT correlationId AS k FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL "
            "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    got = correlation_states(con, "CUPTI_ACTIVITY_KIND_RUNTIME", "correlationId", work)
    assert got["ambiguous"] == 0 and got["one_to_many"] == 0
    for key in ("one_to_one", "unmatched_runtime_call", "unmatched_device_work", "keys"):
        assert got[key] == sum(r["correlations"][key] for r in truth["ranks"]), key
    assert one(con, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE end <= start OR start < 1700000000000000000") == 0


def extension():
    build = os.environ.get("TRACELOOM_BUILD", "build")
    lib = os.path.join(ROOT, build, "traceloom")
    if not os.path.exists(lib + ".so") or not shutil.which("sqlite3"):
        pytest.skip("no %s.so or sqlite3 shell" % lib)
    return lib


def shell(lib, db, sql):
    r = subprocess.run(["sqlite3", "-bail", str(db), "-cmd", ".load " + lib, sql], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return [line.split("|") for line in r.stdout.splitlines()]


@pytest.mark.parametrize("fmt", ["ascend", "nsys"])
def test_extension_sees_the_ground_truth(tmp_path, fmt):
    """The events and host-device relations TraceLoom finds are the generated ones."""
    lib = extension()
    out = tmp_path / "p"
    truth = generate(out, "--format", fmt, "--decode-steps", 12, "--layers", 3, "--ranks", 2, "--aux", 0.1,
                     "--noise", 0.05, "--missing", 0.03)
    target = str(out) if fmt == "ascend" else str(out / "profile.sqlite")
    kinds = dict(shell(lib, ":memory:", "SELECT kind, count(*) FROM traceloom_events('%s') GROUP BY 1" % target))
    want = {}
    for rank in truth["ranks"]:
        for kind, n in rank["events"]["by_kind"].items():
            want[kind] = want.get(kind, 0) + n
    assert {k: int(v) for k, v in kinds.items()} == want
    shell(lib, tmp_path / "a.db", "SELECT traceloom_analyze('%s')" % target)
    states = dict(shell(lib, tmp_path / "a.db", "SELECT support_state, count(*) FROM "
                                                "traceloom_runtime_device_relation GROUP BY 1"))
    want = {}
    for rank in truth["ranks"]:
        for state, n in rank["relation_rows"].items():
            if state != "total":
                want[state] = want.get(state, 0) + n
    assert {k: int(v) for k, v in states.items()} == want

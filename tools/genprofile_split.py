"""Ascend split-layout writer for tools/genprofile.py (`--format split`).

Writes one rank as the directory tree msprof leaves before it merges a monolithic
database (inputs.md section 5), with the column sets the real exporter writes:

  PROF_<r>/device_<r>/sqlite/ascend_task.db         AscendTask
  PROF_<r>/device_<r>/sqlite/hccl_single_device.db  HCCLTaskSingleDevice, HCCLOpSingleDevice
  PROF_<r>/host/sqlite/ge_info.db                   TaskInfo (TEXT names)
  PROF_<r>/host/sqlite/runtime.db                   HostTask
  PROF_<r>/host/sqlite/api_event.db                 ApiData (start/end in 10 ns ticks)
  PROF_<r>/host/sqlite/stream_info.db               CaptureStreamInfo (graph mode only)

The rank is first generated as a monolithic msprof database (genprofile_ascend, the same
plan, the same rows) into a scratch file, and every split table is an INSERT ... SELECT
from it, so the split profile and the monolithic one describe the same run and share one
ground truth. Differences a reader has to undo:

  - names are TEXT, not STRING_IDS ids;
  - compute and communication identity are keyed (device, stream_id, task_id, context_id)
    instead of globalTaskId. task_id here is the monolithic globalTaskId, unique within
    the rank, so that key is unique (real task ids are uint16 and wrap, which would make
    the first-wins key lookup attach the wrong identity in long runs);
  - ApiData start/end are 10 ns ticks: start rounds down and end rounds up, so a call
    keeps its interval and its connection_id;
  - the device id comes from the device_<r> directory name.
"""

import os
import sqlite3

import genprofile_ascend as A

FORMAT = "split"
SOURCE_KIND = "ascend_sqlite_split"
PER_RANK_FILES = True
COMM_SUBTASKS = A.COMM_SUBTASKS
kernel_rows_per_step = A.kernel_rows_per_step
op_label = A.op_label

DEVICE_TABLES = {
    "ascend_task.db": """
CREATE TABLE AscendTask(model_id INTEGER, index_id INTEGER, stream_id INTEGER, task_id INTEGER,
  context_id INTEGER, batch_id INTEGER, start_time NUMERIC, duration NUMERIC, host_task_type TEXT,
  device_task_type TEXT, connection_id INTEGER);""",
    "hccl_single_device.db": """
CREATE TABLE HCCLTaskSingleDevice(model_id INTEGER, index_id INTEGER, op_name TEXT, iteration INTEGER,
  hccl_name TEXT, group_name TEXT, first_timestamp NUMERIC, plane_id INTEGER, timestamp NUMERIC,
  duration REAL, is_dynamic NUMERIC, task_type TEXT, op_type TEXT, connection_id INTEGER,
  is_master INTEGER, stream_id INTEGER, task_id INTEGER, duration_estimated INTEGER,
  local_rank INTEGER, remote_rank INTEGER, transport_type TEXT, size INTEGER, data_type TEXT,
  link_type TEXT, bandwidth REAL, context_id INTEGER, notify_id TEXT, batch_id INTEGER,
  rdma_type TEXT);
CREATE TABLE HCCLOpSingleDevice(model_id INTEGER, op_name TEXT, task_type TEXT, op_type TEXT,
  timestamp NUMERIC, relay INTEGER, retry INTEGER, data_type TEXT, alg_type TEXT, count NUMERIC,
  group_name TEXT, connection_id INTEGER);""",
}
HOST_TABLES = {
    "ge_info.db": """
CREATE TABLE TaskInfo(model_id INTEGER, op_name TEXT, stream_id INTEGER, task_id INTEGER,
  block_dim INTEGER, mix_block_dim INTEGER, op_state TEXT, task_type TEXT, op_type TEXT,
  index_id INTEGER, thread_id INTEGER, timestamp NUMERIC, batch_id INTEGER, tensor_num INTEGER,
  input_formats TEXT, input_data_types TEXT, input_shapes TEXT, output_formats TEXT,
  output_data_types TEXT, output_shapes TEXT, device_id INTEGER, context_id INTEGER,
  op_flag TEXT, hashid TEXT);""",
    "runtime.db": """
CREATE TABLE HostTask(model_id INTEGER, request_id INTEGER, stream_id INTEGER, task_id INTEGER,
  context_ids TEXT, batch_id INTEGER, task_type TEXT, device_id INTEGER, timestamp NUMERIC,
  connection_id INTEGER);""",
    "api_event.db": """
CREATE TABLE ApiData(struct_type TEXT, id TEXT, level TEXT, thread_id INTEGER, item_id TEXT,
  start INTEGER, "end" INTEGER, connection_id INTEGER);""",
}
CAPTURE_STREAM_SCHEMA = """
CREATE TABLE CaptureStreamInfo(device_id INTEGER, model_id INTEGER, original_stream_id INTEGER,
  stream_id INTEGER, batch_id INTEGER, capture_status INTEGER, timestamp NUMERIC);"""

# The split tables, each as a SELECT over the attached monolithic database `m`, in the
# row order a reader sees (rowid order of TASK / the identity tables).
S = "(SELECT value FROM m.STRING_IDS WHERE id = %s)"
SELECTS = {
    "AscendTask": (
        "SELECT t.modelId, -1, t.streamId, t.globalTaskId, t.contextId, 0, t.startNs, t.endNs - t.startNs, "
        "%s, %s, t.connectionId FROM m.TASK t ORDER BY t.rowid" % (S % "t.taskType", S % "t.taskType")),
    "HCCLTaskSingleDevice": (
        "SELECT t.modelId, -1, %s, 0, %s, %s, t.startNs, 0, t.startNs, t.endNs - t.startNs, 1, %s, %s, "
        "t.connectionId, c.isMaster, t.streamId, t.globalTaskId, 0, c.srcRank, c.dstRank, %s, c.size, %s, "
        "%s, c.bandwidth, t.contextId, CAST(c.notifyId AS TEXT), 0, %s "
        "FROM m.COMMUNICATION_TASK_INFO c JOIN m.TASK t ON t.globalTaskId = c.globalTaskId ORDER BY c.rowid"
        % (S % "c.name", S % "c.taskType", S % "c.groupName", S % "t.taskType", S % "c.name",
           S % "c.transportType", S % "c.dataType", S % "c.linkType", S % "c.rdmaType")),
    "HCCLOpSingleDevice": (
        "SELECT 4294967295, %s, 'HCCL', %s, o.startNs, o.relay, o.retry, %s, %s, o.count, %s, o.connectionId "
        "FROM m.COMMUNICATION_OP o ORDER BY o.rowid"
        % (S % "o.opName", S % "o.opType", S % "o.dataType", S % "o.algType", S % "o.groupName")),
    "TaskInfo": (
        "SELECT t.modelId, %s, t.streamId, t.globalTaskId, c.blockDim, c.mixBlockDim, %s, %s, %s, -1, "
        "%d, t.startNs - %d, 0, 2, %s, %s, %s, %s, %s, %s, t.deviceId, t.contextId, 'NO', '' "
        "FROM m.COMPUTE_TASK_INFO c JOIN m.TASK t ON t.globalTaskId = c.globalTaskId ORDER BY c.rowid"
        % (S % "c.name", S % "c.opState", S % "c.taskType", S % "c.opType", 0, 15_000,
           S % "c.inputFormats", S % "c.inputDataTypes", S % "c.inputShapes", S % "c.outputFormats",
           S % "c.outputDataTypes", S % "c.outputShapes")),
    "HostTask": (
        "SELECT t.modelId, 0, t.streamId, t.globalTaskId, '0', 0, %s, t.deviceId, t.startNs - %d, "
        "t.connectionId FROM m.TASK t ORDER BY t.rowid" % (S % "t.taskType", 15_000)),
    "ApiData": (
        "SELECT coalesce((SELECT name FROM m.ENUM_API_TYPE WHERE id = a.type), 'api'), %s, "
        "coalesce((SELECT name FROM m.ENUM_API_TYPE WHERE id = a.type), ''), a.globalTid & 4294967295, "
        "CAST(a.rowid AS TEXT), a.startNs / 10, (a.endNs + 9) / 10, a.connectionId "
        "FROM m.CANN_API a ORDER BY a.rowid" % (S % "a.name")),
}
TABLE_FILE = {"AscendTask": "ascend_task.db", "HCCLTaskSingleDevice": "hccl_single_device.db",
              "HCCLOpSingleDevice": "hccl_single_device.db", "TaskInfo": "ge_info.db",
              "HostTask": "runtime.db", "ApiData": "api_event.db"}


def output_files(args):
    width = len(str(args.ranks - 1))
    return ["PROF_%0*d/device_%d/sqlite/ascend_task.db" % (width, r, r) for r in range(args.ranks)]


def prof_dir_of(task_db_path):
    """PROF_<r> of the ascend_task.db path that output_files names."""
    return os.path.dirname(os.path.dirname(os.path.dirname(task_db_path)))


def _new_db(path, schema):
    if os.path.exists(path):
        os.remove(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    con = sqlite3.connect(path, isolation_level=None)
    for p in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-32768"):
        con.execute("PRAGMA " + p)
    con.executescript(schema)
    return con


def write_capture_streams(path, rows):
    """host/sqlite/stream_info.db with CaptureStreamInfo rows
    (device_id, model_id, original_stream_id, stream_id, batch_id, capture_status, timestamp)."""
    con = _new_db(path, CAPTURE_STREAM_SCHEMA)
    con.execute("BEGIN")
    con.executemany("INSERT INTO CaptureStreamInfo VALUES(?,?,?,?,?,?,?)", rows)
    con.execute("COMMIT")
    con.close()


def write_rank(plan, args, path):
    """Writes the split tree of one rank; `path` is its device ascend_task.db."""
    prof = prof_dir_of(path)
    dev = plan.rank
    mono = os.path.join(prof, "monolithic.db.tmp")
    A.write_rank(plan, args, mono)
    dirs = {"device": os.path.join(prof, "device_%d" % dev, "sqlite"), "host": os.path.join(prof, "host", "sqlite")}
    for side, files in (("device", DEVICE_TABLES), ("host", HOST_TABLES)):
        for name, schema in files.items():
            con = _new_db(os.path.join(dirs[side], name) + ".tmp", schema)
            con.execute("ATTACH DATABASE ? AS m", (mono,))
            con.execute("BEGIN")
            for table, fname in TABLE_FILE.items():
                if fname == name:
                    con.execute("INSERT INTO main.%s %s" % (table, SELECTS[table]))
            con.execute("COMMIT")
            con.execute("DETACH DATABASE m")
            con.close()
            os.replace(os.path.join(dirs[side], name) + ".tmp", os.path.join(dirs[side], name))
    capture = getattr(plan, "capture_streams", None)
    if capture:
        write_capture_streams(os.path.join(dirs["host"], "stream_info.db"), capture)
    os.remove(mono)


def rank_truth(plan, c, args):
    """The monolithic truth with the split table names (same events, calls and relations)."""
    t = A.rank_truth(plan, c, args)
    mono = t["tables"]
    t["tables"] = {
        "AscendTask": mono["TASK"],
        "TaskInfo": mono["COMPUTE_TASK_INFO"],
        "HCCLTaskSingleDevice": mono["COMMUNICATION_TASK_INFO"],
        "HCCLOpSingleDevice": mono["COMMUNICATION_OP"],
        "HostTask": mono["TASK"],
        "ApiData": mono["CANN_API"],
    }
    t["table_files"] = dict(TABLE_FILE)
    return t

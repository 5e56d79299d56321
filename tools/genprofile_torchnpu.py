"""torch-npu capture-directory writer for tools/genprofile.py (`--format torchnpu`).

torch_npu's profiler leaves one capture directory per rank (inputs.md section 1.1):

  <host>_<pid>_<ts>_ascend_pt/
    ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_<rank>.db   the analysed DB (msprof tables)
    PROF_<id>_<ts>_<tag>/host/sqlite/stream_info.db            the capture-stream companion

The analysed database is exactly the monolithic msprof database of genprofile_ascend (same
plan, same rows, same ground truth); the directory has exactly one sibling PROF_*
container holding host/sqlite/stream_info.db (CaptureStreamInfo, empty in eager mode,
the captured graphs' streams in --graph mode), so the companion is found without
ambiguity and the container is not analysed a second time.
"""

import os

import genprofile_ascend as A
import genprofile_split as SPLIT

FORMAT = "torchnpu"
SOURCE_KIND = "ascend_sqlite_hot_path"
PER_RANK_FILES = True
COMM_SUBTASKS = A.COMM_SUBTASKS
kernel_rows_per_step = A.kernel_rows_per_step
op_label = A.op_label
HOST = "gen-host"
TS = "20261129120000123"


def capture_dir(rank):
    return "%s_%d_%s_ascend_pt" % (HOST, 40_000 + rank, TS)


def output_files(args):
    return ["%s/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_%d.db" % (capture_dir(r), r)
            for r in range(args.ranks)]


def companion_dir(rank):
    return "%s/PROF_%06d_%s_GENPROFILE" % (capture_dir(rank), rank + 1, TS)


def write_rank(plan, args, path):
    A.write_rank(plan, args, path)
    top = os.path.dirname(os.path.dirname(path))
    prof = os.path.join(top, os.path.basename(companion_dir(plan.rank)))
    SPLIT.write_capture_streams(os.path.join(prof, "host", "sqlite", "stream_info.db"),
                                getattr(plan, "capture_streams", None) or [])


def rank_truth(plan, c, args):
    t = A.rank_truth(plan, c, args)
    t["capture_dir"] = capture_dir(plan.rank)
    t["stream_info"] = companion_dir(plan.rank) + "/host/sqlite/stream_info.db"
    return t

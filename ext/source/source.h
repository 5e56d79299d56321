/*
** source.h: reading profiles. The only layer that queries profile databases.
**
** A profile path (file or directory) is discovered into a tl_profile: a list of inputs
** (one db_idx each, one family each) and the files they read (source_id = index in
** files). Each family module (msprof.c, msprof_split.c, nsys.c, hygon.c, kineto.c) defines
** one tl_family_def, and families.c lists them all in one table, in detection order:
**
**   detect       does a file hold this family's profile (SQLite tables, or a JSON file)
**   inventory    capability rows for traceloom_profile()
**   events_open  a cursor over normalized device events (inputs.md section 9.1)
**   calls_open   a cursor over normalized host runtime calls (inputs.md section 9.2)
**   ...          what later stages need beyond rows (graph capture streams, CUDA graph
**                node facts, scheduler markers), read here and handed over as arrays
**
** Adding a format is a new file here with its tl_family_def and one line in families.c.
**
** Cursors stream rows one at a time; strings are interned into the caller's tl_strpool.
** The table-valued functions (traceloom_events, traceloom_host_calls) and the analysis
** use the very same cursors, so the shell sees exactly what the analysis sees.
**
** Row order ("reader order") is deterministic: inputs by db_idx; inside an input, the
** family's tables in a fixed order; inside a table, rowid order. event_id and call_id are
** dense counters over that order (see events.c).
*/
#ifndef TL_SOURCE_H
#define TL_SOURCE_H

#include "traceloom.h"
#include "util/err.h"
#include "util/strpool.h"
#include "util/vec.h"
#include "util/buf.h"
#include "util/i64map.h"

/* ---------------------------------------------------------------- discovery */

typedef enum tl_file_role {
  TL_FILE_PRIMARY = 0, /* the DB an input is read from (monolithic, Nsight, Hygon) */
  TL_FILE_SPLIT_PART,  /* one constituent file of a split Ascend profile */
  TL_FILE_COMPANION    /* host/sqlite/stream_info.db beside a monolithic DB */
} tl_file_role;

typedef struct tl_source_file {
  char *path;        /* absolute path */
  int db_idx;        /* the input it belongs to */
  tl_file_role role;
  int device_id;     /* split device_N/ files: N; otherwise -1 */
} tl_source_file;

typedef struct tl_family_def tl_family_def;

typedef struct tl_input {
  const tl_family_def *family;
  char *path;                     /* the DB file; the PROF_* directory for a split profile */
  int primary_file;               /* index into tl_profile.files of the main DB (-1: split) */
  char *stream_info_path;         /* capture-stream companion, NULL when none is usable */
  const char *stream_info_status; /* stream_info_adjacent, stream_info_sibling_container,
                                     stream_info_missing, stream_info_ambiguous_containers */
  char *stream_info_detail;       /* human-readable detail (advice, candidates) or NULL */
} tl_input;

typedef struct tl_profile {
  char *path;                     /* the path as given, made absolute */
  TL_VEC(tl_input) inputs;        /* db_idx = index */
  TL_VEC(tl_source_file) files;   /* source_id = index */
  TL_VEC(char *) warnings;        /* e.g. the split-fallback warning */
} tl_profile;

/* Discovers the inputs under path. source_kind is "auto" (or NULL) or the source kind of a
** family (tl_family_by_source_kind); an explicit kind skips detection but still
** applies that family's schema gates. On error the profile is left empty. */
int tl_profile_discover(const char *path, const char *source_kind, tl_profile *p, tl_err *e);
void tl_profile_free(tl_profile *p);
/* Adds a file to the profile; returns its source_id or -1 on out-of-memory. */
int tl_profile_add_file(tl_profile *p, const char *path, int db_idx, tl_file_role role,
                        int device_id);

/* ---------------------------------------------------------------- rows */

/* One normalized device event. String fields are tl_strpool ids (0 = absent). */
typedef struct tl_event_row {
  int db_idx;
  int source_id;              /* index into tl_profile.files */
  const char *source_table;   /* static or owned by the cursor; valid until next() */
  int64_t source_rowid;
  uint32_t device_id;
  uint32_t stream_id;         /* TL_NO_STREAM when none */
  int64_t start_ns, end_ns;
  tl_kind kind;
  uint32_t name;              /* raw label: decoded task type (Ascend), kernel label (CUDA) */
  uint32_t op_name, op_type;  /* compute identity */
  uint32_t task_type;         /* provider task type (AI_CORE, MODEL_EXECUTE, CUDA_KERNEL, ...) */
  uint32_t compute_task_type; /* e.g. MIX_AIC */
  uint32_t comm_name, comm_task_type; /* communication identity */
  int64_t task_id, global_task_id;    /* raw provider ids, TL_ABSENT when absent */
  int64_t correlation_id;     /* Ascend connectionId, CUDA correlationId; TL_ABSENT */
  int64_t context_id;         /* TL_ABSENT */
  int64_t model_id;           /* normalized: TL_ABSENT for negative or UINT32_MAX */
  int64_t graph_node_id;      /* CUDA graphNodeId; TL_ABSENT */
  int64_t op_id;              /* communication op id (COMMUNICATION_OP rows); TL_ABSENT */
} tl_event_row;

/* One normalized host runtime call. */
typedef struct tl_call_row {
  int db_idx;
  int source_id;
  const char *source_table;
  int64_t source_rowid;
  tl_provider provider;
  uint32_t api_name, api_type;  /* strpool ids */
  int64_t start_ns, end_ns;
  int64_t process_id, thread_id, global_tid; /* TL_ABSENT when absent */
  int64_t context_id;
  int64_t device_id;          /* TL_ABSENT when the call has no device */
  int64_t correlation_id;     /* TL_ABSENT */
} tl_call_row;

/* A host range beyond events and calls: what a trace says the host was doing around its
** work. Kineto: user_annotation / record_function ranges (ProfilerStep#N among them),
** nn.Module ranges (python_function "nn.Module: X_k", with_modules and with_stack) and other
** Python function ranges (with_stack). Read for the step partition and the names of repeats
** (ext/scope); ranges of one thread nest. */
typedef enum tl_host_scope_kind {
  TL_HOST_SCOPE_ANNOTATION = 0, /* user_annotation, record_function, ProfilerStep#N */
  TL_HOST_SCOPE_MODULE,         /* nn.Module: ClassName_k */
  TL_HOST_SCOPE_PYTHON          /* another Python function */
} tl_host_scope_kind;

typedef struct tl_host_scope {
  int64_t start_ns, end_ns;
  int64_t global_tid;  /* (pid << 32) | tid, as tl_call_row.global_tid */
  uint32_t name;       /* strpool id */
  uint16_t db_idx;
  uint8_t kind;        /* tl_host_scope_kind */
} tl_host_scope;

/* Where a whole-profile read (tl_profile_read) or a family's one-pass reader hands its rows:
** events and calls in reader order (the cursors' rows, in their order), host scopes in the
** order read. Each callback returns TL_OK or TL_ERROR with e set (out of memory, interrupted). */
typedef struct tl_row_sink {
  void *ctx;
  int (*event)(void *ctx, const tl_event_row *r, tl_err *e);
  int (*call)(void *ctx, const tl_call_row *r, tl_err *e);
  int (*scope)(void *ctx, const tl_host_scope *s, tl_err *e);
  /* The input's events are host operators of this thread (a CPU operator plane). */
  int (*plane)(void *ctx, int db_idx, int64_t global_tid, tl_err *e);
  int64_t dropped_events, dropped_calls; /* rows skipped by documented rules, summed */
  int threads; /* threads the read may use (the analysis option); 0 or 1: this one only */
  /* Optional (NULL: calls are read in turn): an input's calls read on a second thread while
  ** this one reads its events, for families with calls_beside. beside_begin (this thread)
  ** returns the context of beside_call (NULL: read in turn), which runs on the second thread
  ** with string ids of pool, that thread's own, and must touch nothing `event` touches.
  ** beside_end (this thread, once the second one ended, right after the input's events)
  ** takes the calls in: remap[id] is the id in the caller's pool of pool's string id (its
  ** strings interned there in pool's id order, the order a read in turn interns them); remap
  ** NULL discards them (an error; e may then be NULL). */
  void *(*beside_begin)(void *ctx, tl_strpool *pool);
  int (*beside_call)(void *bctx, const tl_call_row *r, tl_err *e);
  int (*beside_end)(void *ctx, void *bctx, const uint32_t *remap, tl_err *e);
} tl_row_sink;

/* Optional filter that cursors MAY use to skip work; the caller re-checks every row. And how
** many threads the cursor may use: with 2 or more, a family may read some tables on a helper
** thread of its own while it opens (msprof.c: COMMUNICATION_TASK_INFO and COMMUNICATION_OP
** beside COMPUTE_TASK_INFO); its rows are the same for any count. */
typedef struct tl_event_filter {
  int has_device;
  uint32_t device_id;
  int threads;        /* 0 or 1: the calling thread only */
} tl_event_filter;

/* A cursor. Families embed this as the first member of their own struct. */
typedef struct tl_cursor tl_cursor;
struct tl_cursor {
  /* Fills *row (a tl_event_row or tl_call_row). Returns 1 = row, 0 = end, -1 = error. */
  int (*next)(tl_cursor *c, void *row, tl_err *e);
  void (*close)(tl_cursor *c);
  /* Source rows skipped by a documented rule (NULL or negative times, end before start,
  ** ...). Families increment it; the whole-profile cursor sums it over inputs. */
  int64_t dropped_rows;
};

/* ---------------------------------------------------------------- inventory */

typedef struct tl_inventory_row {
  int db_idx;          /* -1 for profile-wide rows */
  const char *item;    /* "input", "file", "table", "capability", "warning" (static) */
  char *source_kind;   /* family source kind, or NULL */
  char *path;          /* file path, or NULL */
  char *table_name;    /* or NULL */
  int64_t row_count;   /* -1 when not applicable */
  char *capability;    /* capability name, or NULL */
  int usable;          /* 1/0, or -1 when not applicable */
  char *detail;        /* reason when not usable, warning text, ... or NULL */
} tl_inventory_row;

typedef TL_VEC(tl_inventory_row) tl_inventory;

/* Appends a row; strings are copied. Returns TL_OK or TL_ERROR (out of memory). */
int tl_inventory_add(tl_inventory *inv, int db_idx, const char *item, const char *source_kind,
                     const char *path, const char *table, int64_t row_count,
                     const char *capability, int usable, const char *detail, tl_err *e);
void tl_inventory_free(tl_inventory *inv);

/* Builds the whole inventory of a discovered profile: inputs, files, tables with row
** counts, family capabilities and warnings. It reads the profile only (the driver takes it
** on the hashing thread while the rows are read). */
int tl_profile_inventory(const tl_profile *p, tl_inventory *inv, tl_err *e);

/* ---------------------------------------------------------------- evidence beyond rows */

/* What later stages need from a profile besides its events and calls, read here and handed
** over as arrays: no file outside ext/source opens a profile. */

/* CaptureStreamInfo rows of an input's capture-stream companion (stream_info.db; ACL graph
** capture instances, recovery.md 7.1), sorted by (device, model, stream, rowid). Rows with a
** NULL or negative field are left out. No companion: no rows (capture.c). */
typedef struct tl_capture_stream {
  int64_t device_id, model_id, stream_id;
} tl_capture_stream;
typedef TL_VEC(tl_capture_stream) tl_capture_streams;
int tl_read_capture_streams(const tl_profile *p, int db_idx, tl_capture_streams *out,
                            tl_err *e);

/* originalGraphNodeId of a graph node listed with two different originals. */
#define TL_ORIGINAL_AMBIGUOUS INT64_MIN

/* What CUDA graph replay reconstruction needs from an Nsight export beyond its rows
** (recovery.md 7.2; nsys_graph.c). */
typedef struct tl_cuda_graph_facts {
  int node_level;       /* CUDA_GRAPH_NODE_EVENTS has rows (node-level graph trace) */
  int capable;          /* the capability gate: every table holding graph rows has the
                           identity columns, and no graph row lacks one */
  tl_i64map original;   /* graphNodeId -> originalGraphNodeId | TL_ORIGINAL_AMBIGUOUS */
  tl_i64map graph_id;   /* CUPTI_ACTIVITY_KIND_GRAPH_TRACE rowid -> graphId */
  tl_i64map exec_id;    /* CUPTI_ACTIVITY_KIND_GRAPH_TRACE rowid -> graphExecId */
} tl_cuda_graph_facts;
void tl_cuda_graph_facts_free(tl_cuda_graph_facts *f);

/* Host rows of the scheduler context's identity chain (context-observer.md 5) in one profile
** file (msprof_marks.c): execution markers (named marker_prefix...) and task-queue rows
** (Enqueue@... / Dequeue@... with their connection id). Names are in text. Rows whose
** timestamps or thread are not canonical (section 5.1) are left out. */
typedef struct tl_host_mark {
  int64_t rowid, start_ns, end_ns, global_tid;
  int64_t connection_id;  /* task-queue rows; TL_ABSENT for markers */
  size_t name;            /* offset of the NUL-terminated name in tl_host_marks.text */
  uint8_t dequeue;        /* task-queue rows: 1 Dequeue@, 0 Enqueue@ */
} tl_host_mark;
typedef struct tl_host_marks {
  TL_VEC(tl_host_mark) markers; /* rowid order */
  TL_VEC(tl_host_mark) queue;   /* (rowid, connection id) order */
  tl_buf text;
} tl_host_marks;
void tl_host_marks_free(tl_host_marks *m);

/* The raw tables of one SQLite file of a profile, as they are, for the analysis option
** embed_raw (raw.c): tables in name order (views and sqlite_* left out), rows with rowids.
** A file of a non-SQLite family has no tables. tl_raw_value(c, 0) is the rowid of the
** current row, tl_raw_value(c, 1 + k) its column k; values are valid until the next row. */
typedef struct tl_raw_cursor tl_raw_cursor;
struct tl_columns;
struct sqlite3_value;
int tl_raw_open(const tl_profile *p, size_t file, tl_raw_cursor **out, tl_err *e);
/* 1 with the next table's name and columns, 0 at the end, -1 on error. */
int tl_raw_next_table(tl_raw_cursor *c, const char **table, const struct tl_columns **cols,
                      tl_err *e);
/* 1 on a row of the current table, 0 at its end, -1 on error. */
int tl_raw_next_row(tl_raw_cursor *c, tl_err *e);
struct sqlite3_value *tl_raw_value(tl_raw_cursor *c, int i);
void tl_raw_close(tl_raw_cursor *c);

/* ---------------------------------------------------------------- families */

/* An open SQLite file being detected (sqlsrc.h): its connection, path and sorted tables. */
struct tl_sql_probe;

struct tl_family_def {
  const char *source_kind;     /* option source_kind, traceloom_input.source_kind, ... */
  const char *name;            /* for messages: "Ascend msprof", "Chrome-trace JSON", ... */
  tl_provider provider;        /* provider of its runtime calls and device work */
  /* Detection of a single file, tried in registry order (NULL: found by a directory layout
  ** only, discover.c). detect_sqlite: 1 when the open SQLite file is this family's, 0 when
  ** not, -1 on a hard error (e set: a table of the family with an incompatible schema).
  ** detect_file: a non-SQLite file whose name ends in one of file_suffixes; 1 or 0 (with
  ** the reason in e). */
  int (*detect_sqlite)(const struct tl_sql_probe *f, tl_err *e);
  int (*detect_file)(const char *path, tl_err *e);
  const char *const *file_suffixes;
  const char *detect_hint;     /* what detect_sqlite looks for, for "no profile" messages */
  const char *layout_hint;     /* what a directory scan finds, for "no profile" messages */
  unsigned sqlite_files : 1;   /* its files are SQLite databases (tables, embed_raw) */
  unsigned capture_companion : 1; /* may have a capture-stream companion (stream_info.db) */
  unsigned calls_beside : 1;   /* its calls cursor may run on a second thread beside its events
                                  cursor: its own connection, nothing shared but p (read) */
  unsigned launch_envelopes : 1; /* a graph launch's kernels carry its correlation id but no
                                  graph node id: each launch gives a graph-level envelope,
                                  never members (inputs.md section 8; ext/replay/cudagraph.c) */
  int (*inventory)(const tl_profile *p, int db_idx, tl_inventory *inv, tl_err *e);
  int (*events_open)(const tl_profile *p, int db_idx, const tl_event_filter *f,
                     tl_strpool *pool, tl_cursor **out, tl_err *e);
  int (*calls_open)(const tl_profile *p, int db_idx, tl_strpool *pool, tl_cursor **out,
                    tl_err *e);
  /* Optional: the input's events, calls and host scopes in one read of its file, into sink
  ** (the cursors read a file once each). NULL: tl_profile_read uses the two cursors. */
  int (*read)(const tl_profile *p, int db_idx, tl_strpool *pool, tl_row_sink *sink, tl_err *e);
  /* Evidence beyond rows; NULL when the family has none. want_graph_trace: the trace holds
  ** graph-level (GRAPH_TRACE) events of this input, whose graph ids are wanted. */
  int (*cuda_graph_facts)(const tl_profile *p, int db_idx, int want_graph_trace,
                          tl_cuda_graph_facts *out, tl_err *e);
  int (*host_marks)(const tl_profile *p, size_t file, const char *marker_prefix,
                    tl_host_marks *out, tl_err *e);
};

/* The families in detection order (inputs.md section 1), NULL-terminated (families.c). */
extern const tl_family_def *const tl_families[];
/* The family of a source kind, NULL when none ("auto" is the callers' business). */
const tl_family_def *tl_family_by_source_kind(const char *source_kind);
/* Appends the source kinds of every family, separated by sep. */
void tl_family_kinds_list(tl_buf *b, const char *sep);
const char *tl_family_source_kind(const tl_family_def *f);  /* "unknown" for NULL */
tl_provider tl_family_provider(const tl_family_def *f);

/* The Ascend families, which discovery also finds by their directory layouts (discover.c:
** PROF_* containers, torch-npu capture directories, the split layout). */
extern const tl_family_def tl_msprof_family;       /* msprof.c: msprof_*.db, torch-npu DBs */
extern const tl_family_def tl_msprof_split_family; /* msprof_split.c: PROF_x/{host,device_N} */

/* 1 when path is a Chrome trace whose top-level object has a traceEvents array (read up to
** that array only); 0 otherwise, with the reason (malformed JSON at byte N, ...) in e. */
int tl_kineto_detect(const char *path, tl_err *e);

/* Ascend kind rules of inputs.md 9.1 (shared by the monolithic and split readers). */
tl_kind tl_ascend_kind(const char *task_type, int has_comm_identity, int has_compute_identity);

/* ---------------------------------------------------------------- whole-profile cursors */

/* Streams the events of every input in db_idx order. Owns nothing of p or pool. */
int tl_events_open(const tl_profile *p, const tl_event_filter *f, tl_strpool *pool,
                   tl_cursor **out, tl_err *e);
int tl_calls_open(const tl_profile *p, tl_strpool *pool, tl_cursor **out, tl_err *e);
/* Reads every input in db_idx order into sink: its events, then or interleaved with its
** calls (each kind in reader order), and its host scopes. A family with a one-pass reader
** reads its file once; the others through their two cursors, the calls on a second thread
** where the sink (beside_begin) and the family (calls_beside) take it. */
int tl_profile_read(const tl_profile *p, tl_strpool *pool, tl_row_sink *sink, tl_err *e);

#endif

/*
** context.h: scheduler context (traceloom.scheduler.v1 JSONL) and its identity-only link to
** device work (context-observer.md sections 2 to 7).
**
** Three stages, run by the analysis driver in this order:
**
**   tl_context *c;
**   tl_context_load(paths, n, &c, e);          (jsonl.c) every file validated before any
**                                              profile is read; one bad line fails it all
**   tl_context_link(c, trace, rels, prof, replay, e);
**                                              (link.c) markers in PYTORCH_API, host scope,
**                                              task-queue bridge, provider relations, exact
**                                              replay members: a step per device event
**   tl_context_partition_events(c, anchors.event, anchors.n, &part, e);
**                                              step partition per anchor token, for
**                                              step-constrained recovery (section 7)
**   tl_context_publish(db, c, e);              (publish_context.c) inside the publication
**                                              savepoint, after the views exist
**   tl_context_free(c);
**
** Identity first, never time windows: a step reaches a device event only through the exact
** marker name, same-thread containment in that marker (or a task-queue connection id whose
** enqueue lies in it), a supported provider relation and an exact replay membership.
** Timestamps only decide containment inside one thread of one source file.
**
** The struct below is shared by the three files of this module; other code uses only the
** functions.
*/
#ifndef TL_CONTEXT_H
#define TL_CONTEXT_H

#include "util/sqlite_api.h"
#include "util/err.h"
#include "util/strpool.h"
#include "util/vec.h"
#include "util/i64map.h"
#include "trace/trace.h"
#include "relate/relate.h"
#include "replay/replay.h"

/* Limits of section 3. */
#define TL_CTX_MAX_FILE (256ll * 1024 * 1024)
#define TL_CTX_MAX_LINE (1024ll * 1024)
#define TL_CTX_MAX_REQUESTS 4096
#define TL_CTX_NONE UINT32_MAX
/* An event without a single known step: recovery's TL_RECOVER_NO_PARTITION (the driver,
** which hands the partitions to recovery, checks that they are equal). */
#define TL_CTX_NO_PARTITION UINT32_MAX

typedef struct tl_context tl_context;

/* Reads and validates the context files (section 3): all-or-nothing. A rejected file
** fails with the reference text, then the file, line and field, e.g.
** "invalid scheduled request (context file /x/a.jsonl, line 3, field requests[0].payload_kind:
** expected "new" or "cached")". */
int tl_context_load(const char *const *paths, size_t n, tl_context **out, tl_err *e);

/* The identity chain of section 5 over a loaded trace. rel are the trace's provider
** relations; replay (NULL when none) must already be promoted, so that the synthetic
** launch events exist in t and take the step of their launch. Call once. */
int tl_context_link(tl_context *c, const tl_trace *t, const tl_relations *rel,
                    const tl_profile *p, const tl_replay *replay, tl_err *e);

/* Step partition of event i (TL_CTX_NO_PARTITION when it has no single step, or when
** the worker or step file is not closed). Valid after tl_context_link. */
uint32_t tl_context_event_partition(const tl_context *c, size_t event);

/* (*out)[k] = partition of event events[k], k < n (malloc'd): with the anchors' events, the
** anchor_partition of tl_forest_constraints. */
int tl_context_partition_events(const tl_context *c, const uint32_t *events, size_t n,
                                uint32_t **out, tl_err *e);

/* Writes the context tables on the publication connection, inside the caller's savepoint,
** after sql/schema and sql/views ran and the runtime, event and graph tables are filled
** (the launch candidates and device assignment are derived from them in SQL). NULL c:
** nothing to write (the tables stay empty). */
int tl_context_publish(sqlite3 *db, const tl_context *c, tl_err *e);

void tl_context_free(tl_context *c);

/* Fails when output_path (the analysis database file; NULL or "" for in-memory) is one of
** the context paths (same inode): inputs are never written. Call before tl_context_load. */
int tl_context_refuse_output(const char *const *paths, size_t n, const char *output_path,
                             tl_err *e);

/* The canonical input paths. */
size_t tl_context_source_count(const tl_context *c);
const char *tl_context_source_path(const tl_context *c, size_t i);

/* Counts for the run summary and tests. */
typedef struct tl_context_stats {
  size_t sources, steps, requests, executions;
  size_t markers, supported_markers;      /* marker rows; executions with supported_marker */
  size_t queue_rows, queue_pairs;
  size_t runtime_calls_supported;         /* distinct calls claimed by exactly one execution */
  size_t events_single_step, events_ambiguous; /* device events with 1 / more steps */
  size_t events_partitioned;              /* events with a partition (closed sources) */
} tl_context_stats;
void tl_context_get_stats(const tl_context *c, tl_context_stats *s);

/* ------------------------------------------------------------------ internal */

typedef enum tl_ctx_capture { TL_CAPTURE_CLOSED = 0, TL_CAPTURE_DROPPED, TL_CAPTURE_UNCLOSED } tl_ctx_capture;
typedef enum tl_ctx_rtype { TL_REC_SESSION = 0, TL_REC_STEP, TL_REC_EXECUTION, TL_REC_SUMMARY } tl_ctx_rtype;
typedef enum tl_ctx_phase { TL_PHASE_EXECUTE_MODEL = 0, TL_PHASE_SAMPLE_TOKENS } tl_ctx_phase;
typedef enum tl_ctx_basis { TL_BASIS_SAME_THREAD = 0, TL_BASIS_TASK_QUEUE } tl_ctx_basis;

/* Nullable integers: flags of which fields are JSON null. */
#define TL_CTX_HAS_FREE 1u
#define TL_CTX_HAS_POOL 2u
#define TL_CTX_HAS_RANK 1u

typedef struct tl_ctx_source {
  char *path;          /* canonical (realpath) */
  char *text;          /* the consumed bytes */
  int64_t size;
  char sha256[65];
  uint8_t capture;     /* tl_ctx_capture */
} tl_ctx_source;

typedef struct tl_ctx_record {
  uint32_t source, line_no;
  uint32_t run_id, producer_id; /* pool ids */
  size_t off, len;              /* the verbatim line in its source's text, without '\n' */
  uint8_t type;                 /* tl_ctx_rtype */
} tl_ctx_record;

typedef struct tl_ctx_step {
  uint32_t run_id, step_id, scheduler_id, cache_json;
  int64_t ordinal, total_tokens, nrequests, free_blocks, pool_blocks;
  uint32_t source, line_no;
  uint8_t has;                  /* TL_CTX_HAS_FREE | TL_CTX_HAS_POOL */
} tl_ctx_step;

typedef struct tl_ctx_request {
  uint32_t run_id, step_id, request_id, request_json;
  int64_t scheduled_tokens;
  uint32_t source, line_no;
} tl_ctx_request;

typedef struct tl_ctx_exec {
  uint32_t run_id, execution_id, step_id, marker;
  int64_t worker_rank, process_id;
  uint32_t source, line_no;
  uint32_t step;                /* index into steps; TL_CTX_NONE = missing_step */
  uint8_t phase, raised, marker_emitted, has;
} tl_ctx_exec;

/* Link results (link.c). */
typedef struct tl_ctx_marker {
  uint32_t exec;
  int source_id;                /* profile file (traceloom_raw_source_database.source_id) */
  int64_t rowid, start_ns, end_ns, global_tid;
} tl_ctx_marker;

typedef struct tl_ctx_queue {
  int source_id;
  uint8_t dequeue;              /* 0 Enqueue@, 1 Dequeue@ */
  int64_t rowid, start_ns, end_ns, global_tid, connection_id;
} tl_ctx_queue;

typedef struct tl_ctx_pair {
  uint32_t enq, deq;            /* indices into queue */
} tl_ctx_pair;

typedef struct tl_ctx_claim {
  uint32_t exec, call;
  uint32_t pair;                /* TL_CTX_NONE for same-thread scope */
  uint8_t basis;                /* tl_ctx_basis */
} tl_ctx_claim;

struct tl_context {
  tl_strpool *pool;
  TL_VEC(tl_ctx_source) sources;
  TL_VEC(tl_ctx_record) records;
  TL_VEC(tl_ctx_step) steps;
  TL_VEC(tl_ctx_request) requests;
  TL_VEC(tl_ctx_exec) execs;
  /* after tl_context_link */
  int linked;
  TL_VEC(char *) file_paths;    /* profile file paths by source_id */
  TL_VEC(tl_ctx_marker) markers;
  TL_VEC(tl_ctx_queue) queue;
  TL_VEC(tl_ctx_pair) pairs;
  TL_VEC(tl_ctx_claim) claims;  /* sorted (exec, call, basis, pair), unique */
  uint32_t *marker_count;       /* per execution */
  size_t nevents;
  uint32_t *event_step;         /* per event: the single step, TL_CTX_NONE */
  uint8_t *event_nsteps;        /* per event: 0, 1, 2 = more than one */
  uint32_t *event_partition;    /* per event */
  tl_context_stats stats;
};

/* jsonl.c helpers shared with link.c */
const char *tl_ctx_str(const tl_context *c, uint32_t id);
/* 1 when execution x has support_state supported_marker given its marker count. */
int tl_ctx_exec_marker_supported(const tl_context *c, size_t x);

#endif

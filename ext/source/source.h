/*
** source.h: reading profiles. The only layer that queries profile databases.
**
** A profile path (file or directory) is discovered into a tl_profile: a list of inputs
** (one db_idx each, one family each) and the files they read (source_id = index in
** files). Each family module (msprof.c, msprof_split.c, nsys.c, hygon.c, ...) exports a
** tl_family_ops table with three entry points:
**
**   inventory    capability rows for traceloom_profile()
**   events_open  a cursor over normalized device events (inputs.md section 9.1)
**   calls_open   a cursor over normalized host runtime calls (inputs.md section 9.2)
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
#include "err.h"
#include "strpool.h"
#include "vec.h"

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

typedef struct tl_input {
  tl_family family;
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

/* Discovers the inputs under path. source_kind is "auto" (or NULL) or one of the
** source kinds of tl_family_source_kind(); an explicit kind skips detection but still
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

/* Optional filter that cursors MAY use to skip work; the caller re-checks every row. */
typedef struct tl_event_filter {
  int has_device;
  uint32_t device_id;
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
** counts, family capabilities and warnings. */
int tl_profile_inventory(tl_profile *p, tl_inventory *inv, tl_err *e);

/* ---------------------------------------------------------------- families */

typedef struct tl_family_ops {
  tl_family family;
  int (*inventory)(const tl_profile *p, int db_idx, tl_inventory *inv, tl_err *e);
  int (*events_open)(const tl_profile *p, int db_idx, const tl_event_filter *f,
                     tl_strpool *pool, tl_cursor **out, tl_err *e);
  int (*calls_open)(const tl_profile *p, int db_idx, tl_strpool *pool, tl_cursor **out,
                    tl_err *e);
} tl_family_ops;

extern const tl_family_ops tl_msprof_ops;       /* msprof.c */
extern const tl_family_ops tl_msprof_split_ops; /* msprof_split.c */
extern const tl_family_ops tl_nsys_ops;         /* nsys.c */
extern const tl_family_ops tl_hygon_ops;        /* hygon.c */
extern const tl_family_ops tl_kineto_ops;       /* kineto.c */

/* 1 when path is a Chrome trace whose top-level object has a traceEvents array (read up to
** that array only); 0 otherwise, with the reason (malformed JSON at byte N, ...) in e. */
int tl_kineto_detect(const char *path, tl_err *e);

/* Ascend kind rules of inputs.md 9.1 (shared by the monolithic and split readers). */
tl_kind tl_ascend_kind(const char *task_type, int has_comm_identity, int has_compute_identity);

/* The ops of a family, or NULL when no reader exists for it yet. */
const tl_family_ops *tl_family_ops_for(tl_family f);

/* ---------------------------------------------------------------- whole-profile cursors */

/* Streams the events of every input in db_idx order. Owns nothing of p or pool. */
int tl_events_open(const tl_profile *p, const tl_event_filter *f, tl_strpool *pool,
                   tl_cursor **out, tl_err *e);
int tl_calls_open(const tl_profile *p, tl_strpool *pool, tl_cursor **out, tl_err *e);

#endif

/*
** hygon.c: the Hygon DCU hipprof SQLite reader (inputs.md section 7).
**
** A hipprof database holds, per traced process, tables named by a suffix (usually the pid):
**
**   HIPOPS_<s>(BeginNs, EndNs, dev_id, queue_id, Name, _Index, ...)  kernels    -> compute
**   HIPCOPY_<s>(BeginNs, EndNs, dev_id, queue_id, Kind, _Index,
**               Bytes, MemoryType, ...)                              copies     -> data_move
**   HIP_<s>(BeginNs, EndNs, pid, tid, Name, _Index, ...)             HIP API    -> host calls
**   STR_TABLE(STR_ID, STR_NAME)                                      names of the Name ids
**
** Times are nanoseconds. Events: every HIPOPS_* table (name order), then every HIPCOPY_*
** table, each in rowid order; rows with a NULL time or EndNs <= BeginNs are dropped and
** counted. The stream of an event is (dev_id, queue_id); _Index is a launch id, kept as
** task_id and global_task_id; there is no connection id.
**
** A kernel's name is STR_TABLE[Name] (a Name that is not an id is used as it is), else
** hip_kernel_<id>. Its compute identity is the lifted label: a fixed list of known kernel
** families (reference behaviour) maps the name to an operator (MatMul, FlashAttention, ...).
** Every kernel is task type HIP_KERNEL. Helper kernels (copies, fills, index, pointwise, the
** Tensile GEMM epilogue Cijk_B_PostGSU, ...) are not lifted to an auxiliary family: the
** reference 0.1.4 keeps each of them a HIP_KERNEL under its own name, an anchor (checked by
** running it on such names; docs/PARITY.md), and so does this reader. An unclassified kernel
** keeps its own name as op_type: an unknown kernel is real work, not noise. A rules config
** that wants helpers out of the structure can match them (classification rule on the blob).
**
** Usage: through tl_hygon_family (source.h).
*/
#include "source/source.h"
#include "source/sqlsrc.h"
#include "source/strtab.h"
#include "util/i64map.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const cols_hipops[] = {"BeginNs", "EndNs", "dev_id", "queue_id", "Name",
                                          "_Index", NULL};
static const char *const cols_hipcopy[] = {"BeginNs", "EndNs", "dev_id", "queue_id", "Kind",
                                           "_Index", "Bytes", "MemoryType", NULL};
static const char *const cols_hip_api[] = {"BeginNs", "EndNs", "Name", NULL};
static const char *const cols_str_table[] = {"STR_ID", "STR_NAME", NULL};

enum { H_OPS = 0, H_COPY, H_API, H_COUNT };
static const char *const prefixes[H_COUNT] = {"HIPOPS_", "HIPCOPY_", "HIP_"};
static const char *const *const required[H_COUNT] = {cols_hipops, cols_hipcopy, cols_hip_api};

static int has_prefix(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The table group of a name, or -1. HIPOPS_/HIPCOPY_ are tested before HIP_. */
static int table_group(const char *name) {
  for (int g = 0; g < H_COUNT; g++)
    if (has_prefix(name, prefixes[g])) return g;
  return -1;
}

/* ---------------------------------------------------------------- kernel labels */

typedef struct lift_rule {
  const char *label;       /* operator */
  const char *needles[10]; /* lower-case substrings, NULL-terminated */
} lift_rule;

/* Reference behaviour, tried in order on the lower-cased kernel name. */
static const lift_rule lift_rules[] = {
    {"MatMul", {"cijk_alik_bljk_bbh", "cijk_alik_bjlk_sb", "cijk_ailk_bljk_i8ii_"}},
    {"MambaDeltaRule", {"qwen35_gdn_decode_kernel"}},
    {"MambaStatePrep", {"qwen35_gdn_qk_state_kernel"}},
    {"FlashAttention", {"flash_fwd_kernel"}},
    {"Attention", {"kernel_unified_attention"}},
    {"KVCacheUpdate", {"reshape_and_cache_kernel_flash"}},
    {"Rope", {"rotary_kernel", "_triton_mrope_forward"}},
    {"Norm", {"layer_norm_fwd_kernel", "l2norm_fwd_kernel2", "vectorized_layer_norm_kernel"}},
    {"RmsNorm", {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0"}},
    {"Activation", {"act_and_mul_kernel", "gelucudakernelimpl"}},
    {"MambaConv", {"_causal_conv1d_fwd_kernel", "_causal_conv1d_update_kernel"}},
    {"MambaChunk", {"chunk_scaled_dot_kkt_fwd_kernel"}},
    {"MambaDeltaRule", {"chunk_gated_delta_rule_fwd_kernel", "fused_recurrent_gated_delta_rule"}},
    {"MambaChunkOut", {"chunk_fwd_kernel_o"}},
    {"MambaScan", {"chunk_local_cumsum_scalar_kernel"}},
    {"MambaLayout", {"merge_16x16_to_64x64_inverse_kernel"}},
    {"MambaRecompute", {"recompute_w_u_fwd_kernel"}},
    {"MambaSegmentReduce", {"reduce_segments"}},
    {"MambaGate", {"fused_gdn_gating_kernel"}},
};

/* The first rule whose needle occurs in the (lower-cased) name, or NULL. */
static const lift_rule *lift(const char *name, size_t len) {
  char stack[256];
  char *low = len < sizeof stack ? stack : malloc(len + 1);
  if (!low) return NULL;
  for (size_t i = 0; i < len; i++) low[i] = (char)tolower((unsigned char)name[i]);
  low[len] = 0;
  const lift_rule *found = NULL;
  for (size_t r = 0; r < sizeof lift_rules / sizeof lift_rules[0] && !found; r++)
    for (int k = 0; lift_rules[r].needles[k] && !found; k++)
      if (strstr(low, lift_rules[r].needles[k])) found = &lift_rules[r];
  if (low != stack) free(low);
  return found;
}

/* ---------------------------------------------------------------- shared state */

/* STR_TABLE(STR_ID, STR_NAME): the first row of an id wins; texts interned as read. */
static const tl_strtab_spec str_table = {"STR_TABLE", "STR_ID", "STR_NAME", 0, 0, 1, 1, NULL,
                                         NULL};

typedef struct hygon_db {
  const char *path;
  int source_id;
  sqlite3 *db;
  tl_strpool *pool;
  tl_strtab names; /* STR_TABLE */
  tl_names tables; /* every table, sorted by name */
} hygon_db;

static void hygon_close(hygon_db *h) {
  tl_sql_close(h->db);
  tl_strtab_free(&h->names);
  tl_names_free(&h->tables);
  h->db = NULL;
}

static int check_path(const char *path, tl_err *e) {
  struct stat sb;
  if (!path || !*path) return tl_fail(e, "Hygon SQLite DB path is empty");
  if (stat(path, &sb) != 0) return tl_fail(e, "Hygon SQLite DB does not exist: %s", path);
  return TL_OK;
}

/* Opens the input's database and lists its tables; loads STR_TABLE when with_names. */
static int hygon_open(const tl_profile *p, int db_idx, tl_strpool *pool, int with_names,
                      hygon_db *h, tl_err *e) {
  memset(h, 0, sizeof *h);
  h->path = p->inputs.v[db_idx].path;
  h->source_id = p->inputs.v[db_idx].primary_file;
  h->pool = pool;
  if (check_path(h->path, e) || tl_sql_open_ro(h->path, &h->db, e) ||
      tl_sql_tables(h->db, h->path, &h->tables, e))
    return TL_ERROR;
  if (!with_names) return TL_OK;
  /* Without the table names decode to hip_kernel_<id>. */
  return tl_strtab_load(h->db, h->path, &str_table, pool, &h->names, e);
}

/* Prepares "SELECT rowid, <cols> FROM <table> ORDER BY rowid" after checking the
** required columns of the table's group (a hard error when some are missing). */
static int prepare_table(hygon_db *h, const char *table, int group, const char *const *select,
                         sqlite3_stmt **out, tl_err *e) {
  tl_columns cols;
  if (tl_sql_columns(h->db, h->path, table, &cols, e)) return TL_ERROR;
  char *missing = NULL;
  if (!tl_columns_have(&cols, required[group], 0, &missing)) {
    tl_columns_free(&cols);
    tl_fail(e, "unsupported Hygon %s schema in '%s': missing required column(s): %s", table,
            h->path, missing ? missing : "?");
    free(missing);
    return TL_ERROR;
  }
  size_t cap = 64;
  for (int i = 0; select[i]; i++) cap += strlen(select[i]) * 2 + 8;
  char *q = tl_sql_quote_ident(table);
  char *sql = q ? malloc(cap + strlen(q)) : NULL;
  if (!sql) {
    free(q);
    tl_columns_free(&cols);
    return tl_nomem(e);
  }
  char *w = sql + sprintf(sql, "SELECT rowid");
  for (int i = 0; select[i]; i++) {
    if (tl_columns_find(&cols, select[i], 0) >= 0)
      w += sprintf(w, ", \"%s\"", select[i]);
    else
      w += sprintf(w, ", NULL");
  }
  sprintf(w, " FROM %s ORDER BY rowid", q);
  free(q);
  tl_columns_free(&cols);
  int rc = tl_sql_prepare(h->db, h->path, sql, out, e);
  free(sql);
  return rc;
}

/* A kernel or API name: STR_TABLE[Name]; a Name that is text and not an id is the name
** itself; otherwise <fallback><id>. */
static uint32_t decode_name(hygon_db *h, sqlite3_stmt *st, int col, const char *fallback) {
  int type = sqlite3_column_type(st, col);
  int64_t id = tl_col_i64(st, col, -1);
  if (type == SQLITE_TEXT && tl_col_i64(st, col, INT64_MIN) == INT64_MIN) {
    int len;
    const char *t = tl_col_text(st, col, &len);
    return tl_strpool_intern(h->pool, t, (size_t)len);
  }
  uint32_t known = tl_strtab_lookup(&h->names, h->pool, id, NULL);
  if (known != TL_STR_NOMEM) return known;
  char buf[64];
  int n = snprintf(buf, sizeof buf, "%s%lld", fallback, (long long)id);
  return tl_strpool_intern(h->pool, buf, (size_t)n);
}

/* ---------------------------------------------------------------- events cursor */

static const char *const select_ops[] = {"BeginNs", "EndNs", "dev_id", "queue_id", "Name",
                                         "_Index", NULL};
static const char *const select_copy[] = {"BeginNs", "EndNs", "dev_id", "queue_id", "Kind",
                                          "_Index", "Bytes", "MemoryType", NULL};

typedef struct hygon_events {
  tl_cursor base;
  hygon_db h;
  int db_idx;
  int group;        /* H_OPS, then H_COPY */
  size_t next;      /* next table index in h.tables for the group */
  const char *table;
  sqlite3_stmt *st;
  uint32_t hip_kernel, memcpy_type, data_move;
} hygon_events;

static void events_close(tl_cursor *c) {
  hygon_events *he = (hygon_events *)c;
  sqlite3_finalize(he->st);
  hygon_close(&he->h);
  free(he);
}

/* Opens the next table of the current group; 0 = opened, 1 = no tables left. */
static int next_table(hygon_events *he, tl_err *e) {
  sqlite3_finalize(he->st);
  he->st = NULL;
  while (he->group <= H_COPY) {
    while (he->next < he->h.tables.n) {
      const char *t = he->h.tables.v[he->next++];
      if (table_group(t) != he->group) continue;
      he->table = t;
      if (prepare_table(&he->h, t, he->group, he->group == H_OPS ? select_ops : select_copy,
                        &he->st, e))
        return -1;
      return 0;
    }
    he->group++;
    he->next = 0;
  }
  return 1;
}

/* Text of an integer-ish column for a label: its SQL text, or fallback when NULL. */
static const char *label_part(sqlite3_stmt *st, int col, const char *fallback) {
  return sqlite3_column_type(st, col) == SQLITE_NULL ? fallback
                                                     : (const char *)sqlite3_column_text(st, col);
}

static int events_next(tl_cursor *c, void *row, tl_err *e) {
  hygon_events *he = (hygon_events *)c;
  tl_event_row *r = row;
  for (;;) {
    if (!he->st) {
      int rc = next_table(he, e);
      if (rc) return rc < 0 ? -1 : 0;
    }
    int s = sqlite3_step(he->st);
    if (s == SQLITE_DONE) {
      sqlite3_finalize(he->st);
      he->st = NULL;
      continue;
    }
    if (s != SQLITE_ROW)
      return tl_fail(e, "failed to read Hygon table %s in '%s': %s", he->table, he->h.path,
                     sqlite3_errmsg(he->h.db)),
             -1;
    sqlite3_stmt *st = he->st;
    /* rowid, BeginNs, EndNs, dev_id, queue_id, Name|Kind, _Index[, Bytes, MemoryType] */
    int64_t start = tl_col_i64(st, 1, INT64_MIN), end = tl_col_i64(st, 2, INT64_MIN);
    /* No interval, or no integer device to place it on: dropped, counted. */
    int64_t dev = tl_col_i64(st, 3, -1);
    if (start == INT64_MIN || end == INT64_MIN || end <= start || dev < 0 ||
        dev > (int64_t)UINT32_MAX - 1) {
      he->base.dropped_rows++;
      continue;
    }
    memset(r, 0, sizeof *r);
    r->db_idx = he->db_idx;
    r->source_id = he->h.source_id;
    r->source_table = he->table;
    r->source_rowid = sqlite3_column_int64(st, 0);
    r->start_ns = start;
    r->end_ns = end;
    int64_t queue = tl_col_i64(st, 4, -1);
    r->device_id = (uint32_t)dev;
    r->stream_id = queue < 0 || queue >= (int64_t)TL_NO_STREAM ? TL_NO_STREAM : (uint32_t)queue;
    r->task_id = r->global_task_id = tl_col_i64(st, 6, TL_ABSENT);
    r->correlation_id = r->context_id = r->model_id = TL_ABSENT;
    r->graph_node_id = r->op_id = TL_ABSENT;
    if (he->group == H_OPS) {
      r->name = r->op_name = decode_name(&he->h, st, 5, "hip_kernel_");
      if (r->name == TL_STR_NOMEM) return tl_nomem(e), -1;
      const char *label = tl_strpool_str(he->h.pool, r->name);
      const lift_rule *rule = lift(label, tl_strpool_len(he->h.pool, r->name));
      r->kind = TL_KIND_COMPUTE;
      r->task_type = he->hip_kernel;
      if (!rule) {
        r->op_type = r->name;
      } else {
        r->op_type = tl_strpool_intern_cstr(he->h.pool, rule->label);
        if (r->op_type == TL_STR_NOMEM) return tl_nomem(e), -1;
      }
    } else {
      char *label = tl_mprintf("hip_copy kind=%s memory_type=%s bytes=%s",
                               label_part(st, 5, "-1"), label_part(st, 8, "-1"),
                               label_part(st, 7, "0"));
      if (!label) return tl_nomem(e), -1;
      r->name = r->op_name = tl_strpool_intern_cstr(he->h.pool, label);
      free(label);
      if (r->name == TL_STR_NOMEM) return tl_nomem(e), -1;
      r->kind = TL_KIND_DATA_MOVE;
      r->task_type = he->memcpy_type;
      r->op_type = he->data_move;
    }
    return 1;
  }
}

static int events_open(const tl_profile *p, int db_idx, const tl_event_filter *f,
                       tl_strpool *pool, tl_cursor **out, tl_err *e) {
  (void)f; /* every row is read: event ids are dense over the reader order */
  *out = NULL;
  hygon_events *he = calloc(1, sizeof *he);
  if (!he) return tl_nomem(e);
  he->base.next = events_next;
  he->base.close = events_close;
  he->db_idx = db_idx;
  he->group = H_OPS;
  if (hygon_open(p, db_idx, pool, 1, &he->h, e)) goto fail;
  he->hip_kernel = tl_strpool_intern_cstr(pool, "HIP_KERNEL");
  he->memcpy_type = tl_strpool_intern_cstr(pool, "MEMCPY");
  he->data_move = tl_strpool_intern_cstr(pool, "DataMove");
  if (he->hip_kernel == TL_STR_NOMEM ||
      he->memcpy_type == TL_STR_NOMEM || he->data_move == TL_STR_NOMEM) {
    tl_nomem(e);
    goto fail;
  }
  /* Schema errors surface at open, not half-way through the stream. */
  for (size_t i = 0; i < he->h.tables.n; i++) {
    int g = table_group(he->h.tables.v[i]);
    if (g != H_OPS && g != H_COPY) continue;
    sqlite3_stmt *st;
    if (prepare_table(&he->h, he->h.tables.v[i], g, g == H_OPS ? select_ops : select_copy, &st,
                      e))
      goto fail;
    sqlite3_finalize(st);
  }
  *out = &he->base;
  return TL_OK;
fail:
  events_close(&he->base);
  return TL_ERROR;
}

/* ---------------------------------------------------------------- calls cursor */

static const char *const select_api[] = {"BeginNs", "EndNs", "Name", "pid", "tid", NULL};

typedef struct hygon_calls {
  tl_cursor base;
  hygon_db h;
  int db_idx;
  size_t next;
  const char *table;
  sqlite3_stmt *st;
  uint32_t hip_api;
} hygon_calls;

static void calls_close(tl_cursor *c) {
  hygon_calls *hc = (hygon_calls *)c;
  sqlite3_finalize(hc->st);
  hygon_close(&hc->h);
  free(hc);
}

static int calls_next(tl_cursor *c, void *row, tl_err *e) {
  hygon_calls *hc = (hygon_calls *)c;
  tl_call_row *r = row;
  for (;;) {
    if (!hc->st) {
      while (hc->next < hc->h.tables.n && table_group(hc->h.tables.v[hc->next]) != H_API)
        hc->next++;
      if (hc->next >= hc->h.tables.n) return 0;
      hc->table = hc->h.tables.v[hc->next++];
      if (prepare_table(&hc->h, hc->table, H_API, select_api, &hc->st, e)) return -1;
    }
    int s = sqlite3_step(hc->st);
    if (s == SQLITE_DONE) {
      sqlite3_finalize(hc->st);
      hc->st = NULL;
      continue;
    }
    if (s != SQLITE_ROW)
      return tl_fail(e, "failed to read Hygon table %s in '%s': %s", hc->table, hc->h.path,
                     sqlite3_errmsg(hc->h.db)),
             -1;
    sqlite3_stmt *st = hc->st;
    /* rowid, BeginNs, EndNs, Name, pid, tid */
    int64_t start = tl_col_i64(st, 1, INT64_MIN), end = tl_col_i64(st, 2, INT64_MIN);
    if (start == INT64_MIN || end == INT64_MIN || end <= start) {
      hc->base.dropped_rows++;
      continue;
    }
    memset(r, 0, sizeof *r);
    r->db_idx = hc->db_idx;
    r->source_id = hc->h.source_id;
    r->source_table = hc->table;
    r->source_rowid = sqlite3_column_int64(st, 0);
    r->provider = TL_PROVIDER_HYGON;
    r->start_ns = start;
    r->end_ns = end;
    r->api_name = decode_name(&hc->h, st, 3, "hip_api_");
    if (r->api_name == TL_STR_NOMEM) return tl_nomem(e), -1;
    r->api_type = hc->hip_api;
    r->process_id = tl_col_i64(st, 4, TL_ABSENT);
    r->thread_id = tl_col_i64(st, 5, TL_ABSENT);
    /* hipprof has no correlation id shared with HIPOPS (section 7): relations stay open. */
    r->global_tid = r->context_id = r->device_id = r->correlation_id = TL_ABSENT;
    return 1;
  }
}

static int calls_open(const tl_profile *p, int db_idx, tl_strpool *pool, tl_cursor **out,
                      tl_err *e) {
  *out = NULL;
  hygon_calls *hc = calloc(1, sizeof *hc);
  if (!hc) return tl_nomem(e);
  hc->base.next = calls_next;
  hc->base.close = calls_close;
  hc->db_idx = db_idx;
  if (hygon_open(p, db_idx, pool, 1, &hc->h, e)) goto fail;
  hc->hip_api = tl_strpool_intern_cstr(pool, "hip_api");
  if (hc->hip_api == TL_STR_NOMEM) {
    tl_nomem(e);
    goto fail;
  }
  *out = &hc->base;
  return TL_OK;
fail:
  calls_close(&hc->base);
  return TL_ERROR;
}

/* ---------------------------------------------------------------- inventory */

static int inventory(const tl_profile *p, int db_idx, tl_inventory *inv, tl_err *e) {
  static const char *const capability[H_COUNT] = {"device_kernels", "device_copies", "host_api"};
  const char *kind = tl_family_source_kind(p->inputs.v[db_idx].family);
  hygon_db h;
  if (hygon_open(p, db_idx, NULL, 0, &h, e)) {
    hygon_close(&h);
    return TL_ERROR;
  }
  char *reason = NULL;
  int ok = tl_sql_capability(h.db, h.path, "STR_TABLE", cols_str_table, 0, &reason, e);
  int rc = ok < 0 ? TL_ERROR : TL_OK;
  if (rc == TL_OK)
    rc = tl_inventory_add(inv, db_idx, "capability", kind, h.path, "STR_TABLE", -1,
                          "string_table", ok,
                          ok ? "kernel names from STR_TABLE" : reason, e);
  free(reason);
  /* One row per HIPOPS_/HIPCOPY_/HIP_ table; a group without tables is one unusable row. */
  for (int g = 0; g < H_COUNT && rc == TL_OK; g++) {
    int seen = 0;
    for (size_t i = 0; i < h.tables.n && rc == TL_OK; i++) {
      const char *t = h.tables.v[i];
      if (table_group(t) != g) continue;
      seen = 1;
      char *why = NULL;
      ok = tl_sql_capability(h.db, h.path, t, required[g], 0, &why, e);
      int64_t rows = ok < 0 ? -1 : tl_sql_count(h.db, h.path, t, e);
      if (ok < 0 || rows < 0)
        rc = TL_ERROR;
      else
        rc = tl_inventory_add(inv, db_idx, "capability", kind, h.path, t, rows, capability[g],
                              ok, why, e);
      free(why);
    }
    if (!seen && rc == TL_OK) {
      char *why = tl_mprintf("no %s* table in '%s'", prefixes[g], h.path);
      rc = why ? tl_inventory_add(inv, db_idx, "capability", kind, h.path, NULL, 0,
                                  capability[g], 0, why, e)
               : tl_nomem(e);
      free(why);
    }
  }
  hygon_close(&h);
  return rc;
}

/* A read error counts as found: the reader reports it, with its message. */
static int detect(const tl_sql_probe *f, tl_err *e) {
  static const char *const prefixes[] = {"HIPOPS_", "HIPCOPY_", "HIP_"};
  for (int i = 0; i < 3; i++)
    if (tl_sql_probe_nonempty_prefix(f, prefixes[i]) != 0) return 1;
  return 0;
}

const tl_family_def tl_hygon_family = {
    .source_kind = "hygon_sqlite",
    .name = "Hygon hipprof",
    .provider = TL_PROVIDER_HYGON,
    .detect_sqlite = detect,
    .detect_hint = "HIPOPS_*/HIPCOPY_*/HIP_* (Hygon hipprof)",
    .layout_hint = "*.db/*.sqlite files with HIPOPS_*/HIPCOPY_*/HIP_* tables",
    .sqlite_files = 1,
    .inventory = inventory,
    .events_open = events_open,
    .calls_open = calls_open,
    .calls_beside = 1,
};

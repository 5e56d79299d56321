/*
** analyze.c: the analysis driver (see analyze.h).
*/
#include "analyze.h"
#include "json.h"
#include "buf.h"
#include "sha256.h"
#include "source/source.h"
#include "trace/trace.h"
#include "relate/relate.h"
#include "publish/publish.h"
#include "anchor/anchors.h"
#include "classify/classify.h"
#include "cost/packets.h"
#include "structure/structure.h"
#include "replay/replay.h"
#include "context/context.h"
#include "reports/reports.h"
#include "idle/idle.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ options */

void tl_options_free(tl_options *o) {
  free(o->source_kind);
  free(o->rules_config);
  free(o->idle_evidence);
  for (size_t i = 0; i < o->ncontext; i++) free(o->context[i]);
  free(o->context);
  memset(o, 0, sizeof *o);
}

int tl_options_parse(const char *options_json, tl_options *o, char **canonical, tl_err *e) {
  memset(o, 0, sizeof *o);
  o->threads = 2;
  o->progress = -1;
  *canonical = NULL;
  tl_json *doc = NULL;
  if (options_json && *options_json) {
    if (tl_json_parse(options_json, strlen(options_json), &doc, e))
      return tl_fail(e, "invalid analyze options"), TL_ERROR;
    if (tl_json_type_of(doc) != TL_JSON_OBJECT) {
      tl_json_free(doc);
      return tl_fail(e, "analyze options must be a JSON object, e.g. {\"threads\": 2}");
    }
    for (size_t i = 0; i < tl_json_len(doc); i++) {
      const char *key = tl_json_key_at(doc, i);
      const tl_json *v = tl_json_value_at(doc, i);
      if (strcmp(key, "threads") == 0) {
        int64_t n;
        if (tl_json_i64(v, &n) || n < 1 || n > 256) {
          tl_json_free(doc);
          tl_options_free(o);
          return tl_fail(e, "analyze option \"threads\" must be an integer from 1 to 256");
        }
        o->threads = (int)n;
      } else if (strcmp(key, "source_kind") == 0) {
        const char *s = tl_json_str(v, NULL);
        if (!s || (strcmp(s, "auto") != 0 && tl_family_from_source_kind(s) < 0)) {
          tl_json_free(doc);
          tl_options_free(o);
          return tl_fail(e,
                         "analyze option \"source_kind\" must be one of auto, "
                         "ascend_sqlite_hot_path, ascend_sqlite_split, cuda_nsys_sqlite, "
                         "hygon_sqlite, kineto_json");
        }
        free(o->source_kind);
        o->source_kind = tl_strdup(s);
      } else if (strcmp(key, "rules_config") == 0) {
        const char *s = tl_json_type_of(v) == TL_JSON_NULL ? NULL : tl_json_str(v, NULL);
        if (tl_json_type_of(v) != TL_JSON_NULL && (!s || !*s)) {
          tl_json_free(doc);
          tl_options_free(o);
          return tl_fail(e,
                         "analyze option \"rules_config\" must be a rules file path or a "
                         "bundled config name (scheduler-step, deepseekv4, qwen35-serving)");
        }
        free(o->rules_config);
        o->rules_config = s ? tl_strdup(s) : NULL;
      } else if (strcmp(key, "context") == 0) {
        int ok = tl_json_type_of(v) == TL_JSON_ARRAY;
        for (size_t k = 0; ok && k < tl_json_len(v); k++) {
          const char *cs = tl_json_str(tl_json_at(v, k), NULL);
          ok = cs && *cs;
        }
        if (!ok) {
          tl_json_free(doc);
          tl_options_free(o);
          return tl_fail(e, "analyze option \"context\" must be a JSON array of context JSONL "
                            "paths, e.g. {\"context\": [\"scheduler.jsonl\"]}");
        }
        for (size_t k = 0; k < o->ncontext; k++) free(o->context[k]);
        free(o->context);
        o->ncontext = 0;
        o->context = calloc(tl_json_len(v) + 1, sizeof *o->context);
        if (!o->context) {
          tl_json_free(doc);
          tl_options_free(o);
          return tl_nomem(e);
        }
        for (size_t k = 0; k < tl_json_len(v); k++) {
          o->context[k] = tl_strdup(tl_json_str(tl_json_at(v, k), NULL));
          if (!o->context[k]) {
            tl_json_free(doc);
            tl_options_free(o);
            return tl_nomem(e);
          }
          o->ncontext = k + 1;
        }
      } else if (strcmp(key, "embed_raw") == 0) {
        int b = tl_json_bool(v);
        if (b < 0) {
          tl_json_free(doc);
          tl_options_free(o);
          return tl_fail(e, "analyze option \"embed_raw\" must be true or false");
        }
        o->embed_raw = b;
      } else if (strcmp(key, "graph_replay") == 0) {
        int b = tl_json_bool(v);
        if (b < 0) {
          tl_json_free(doc);
          tl_options_free(o);
          return tl_fail(e, "analyze option \"graph_replay\" must be true or false");
        }
        o->no_graph_replay = !b;
      } else if (strcmp(key, "progress") == 0) {
        int b = tl_json_bool(v);
        if (b < 0) {
          tl_json_free(doc);
          tl_options_free(o);
          return tl_fail(e, "analyze option \"progress\" must be true or false");
        }
        o->progress = b;
      } else if (strcmp(key, "idle_evidence") == 0) {
        tl_idle_options io; /* checked now, used by ext/reports after the structure */
        tl_buf text = {0};
        int bad = tl_idle_options_parse(v, &io, e);
        tl_idle_options_free(&io);
        if (!bad) tl_json_write(v, &text);
        if (bad || text.oom) {
          tl_buf_free(&text);
          tl_json_free(doc);
          tl_options_free(o);
          return bad ? TL_ERROR : tl_nomem(e);
        }
        free(o->idle_evidence);
        o->idle_evidence = text.p;
      } else {
        tl_fail(e,
                "unknown analyze option \"%s\": expected threads, source_kind, rules_config, "
                "context, embed_raw, graph_replay, idle_evidence or progress",
                key);
        tl_json_free(doc);
        tl_options_free(o);
        return TL_ERROR;
      }
    }
    tl_json_free(doc);
  }
  if (!o->source_kind) o->source_kind = tl_strdup("auto");
  tl_buf b = {0};
  tl_buf_puts(&b, "{\"source_kind\":");
  tl_buf_json_string(&b, o->source_kind ? o->source_kind : "", o->source_kind ? strlen(o->source_kind) : 0);
  if (o->embed_raw) tl_buf_puts(&b, ",\"embed_raw\":true");
  if (o->no_graph_replay) tl_buf_puts(&b, ",\"graph_replay\":false");
  if (o->idle_evidence) tl_buf_puts(&b, ",\"idle_evidence\":"), tl_buf_puts(&b, o->idle_evidence);
  if (o->ncontext) {
    tl_buf_puts(&b, ",\"context\":[");
    for (size_t k = 0; k < o->ncontext; k++) {
      if (k) tl_buf_puts(&b, ",");
      tl_buf_json_string(&b, o->context[k], strlen(o->context[k]));
    }
    tl_buf_puts(&b, "]");
  }
  tl_buf_puts(&b, "}");
  if (b.oom || !o->source_kind) {
    tl_buf_free(&b);
    tl_options_free(o);
    return tl_nomem(e);
  }
  *canonical = b.p;
  return TL_OK;
}

/* ------------------------------------------------------------------ progress */

typedef struct progress {
  int on;
  double t0;
  int timing;          /* TRACELOOM_TIMING=1: stage durations on stderr */
  double stage_t0;
  const char *stage;
  sqlite3 *db;           /* the analysis connection, probed for sqlite3_interrupt() */
  sqlite3_stmt *probe;
  int interrupted;
} progress;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* sqlite3_interrupt() on the analysis connection (Ctrl-C in the shell and the CLI) must
** stop every stage, not only publication: a one-row statement on that connection returns
** SQLITE_INTERRUPT once it was called (SQLite 3.40 has no sqlite3_is_interrupted()). */
static int was_interrupted(progress *p) {
  if (!p->probe &&
      sqlite3_prepare_v2(p->db, "SELECT 1", -1, &p->probe, NULL) != SQLITE_OK)
    return 0;
  int rc = sqlite3_step(p->probe);
  sqlite3_reset(p->probe);
  if (rc == SQLITE_INTERRUPT) p->interrupted = 1;
  return p->interrupted;
}

static int progress_fn(void *ctx, const char *stage, int64_t done) {
  progress *p = ctx;
  if (p->on) {
    fprintf(stderr, "\rtraceloom: %s %lld rows (%.1f s)   ", stage, (long long)done,
            now_s() - p->t0);
    fflush(stderr);
  }
  return was_interrupted(p);
}

static void timing_mark(progress *p, const char *next) {
  if (!p->timing) return;
  double t = now_s();
  if (p->stage) fprintf(stderr, "traceloom timing: %-40s %8.3f s\n", p->stage, t - p->stage_t0);
  p->stage = next;
  p->stage_t0 = t;
}

/* Marks the start of a stage; fails with "interrupted" when the connection was. */
static int progress_stage(progress *p, const char *stage, tl_err *e) {
  timing_mark(p, stage);
  if (p->on) {
    fprintf(stderr, "\rtraceloom: %-40s (%.1f s)   ", stage, now_s() - p->t0);
    fflush(stderr);
  }
  return was_interrupted(p) ? tl_fail(e, "interrupted (before %s); nothing was published", stage)
                            : TL_OK;
}

static void progress_end(progress *p) {
  timing_mark(p, NULL);
  sqlite3_finalize(p->probe);
  p->probe = NULL;
  if (!p->on) return;
  fprintf(stderr, "\r%60s\r", "");
  fflush(stderr);
}

/* ------------------------------------------------------------------ driver */

/* The analysis database must never be one of the inputs (same path or same inode). */
static int refuse_self(sqlite3 *db, const tl_profile *p, tl_err *e) {
  const char *out = sqlite3_db_filename(db, "main");
  if (!out || !*out) return TL_OK; /* in-memory or temporary database */
  struct stat so;
  if (stat(out, &so) != 0) return TL_OK;
  for (size_t i = 0; i < p->files.n; i++) {
    struct stat si;
    if (stat(p->files.v[i].path, &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
      return tl_fail(e,
                     "refusing to analyse %s into itself: the analysis database is an input of "
                     "the profile (write the analysis into another database)",
                     p->files.v[i].path);
  }
  return TL_OK;
}

static int hashing_interrupted(void *ctx) { return was_interrupted(ctx); }

static int digest_files(const tl_profile *p, tl_source_digest **out, int (*stop)(void *),
                        void *stop_ctx, tl_err *e) {
  tl_source_digest *d = calloc(p->files.n ? p->files.n : 1, sizeof *d);
  if (!d) return tl_nomem(e);
  for (size_t i = 0; i < p->files.n; i++)
    if (tl_sha256_file_cancellable(p->files.v[i].path, d[i].sha256, &d[i].size, stop, stop_ctx,
                                   e)) {
      free(d);
      return TL_ERROR;
    }
  *out = d;
  return TL_OK;
}

/* With threads >= 2 the source files are hashed on a second thread while the main thread
** reads their rows: both are bound by the same files, and hashing takes about a third of the
** reading time. The digests are the same whoever computes them. The hashing thread never
** touches SQLite; the main thread tells it to stop through `stop` (an interrupt or error). */
typedef struct hash_job {
  const tl_profile *profile;
  tl_source_digest *digests;
  atomic_int stop;
  int rc;
  tl_err err;
  pthread_t thread;
} hash_job;

static int hash_job_stopped(void *ctx) { return atomic_load(&((hash_job *)ctx)->stop); }

static void *hash_job_run(void *arg) {
  hash_job *j = arg;
  j->rc = digest_files(j->profile, &j->digests, hash_job_stopped, j, &j->err);
  return NULL;
}

int tl_analyze(sqlite3 *db, const char *path, const char *options_json, char **summary,
               tl_err *e) {
  *summary = NULL;
  tl_options opt;
  char *canonical = NULL;
  if (tl_options_parse(options_json, &opt, &canonical, e)) return TL_ERROR;
  const char *timing = getenv("TRACELOOM_TIMING");
  progress pr = {opt.progress < 0 ? isatty(2) : opt.progress, now_s(),
                 timing && *timing && *timing != '0', now_s(), NULL, db, NULL, 0};
  tl_profile profile;
  tl_trace trace;
  tl_relations relations = {0};
  tl_inventory inventory = {0};
  tl_source_digest *digests = NULL;
  tl_classification cls;
  tl_replay replay;
  tl_context *ctx = NULL;
  memset(&replay, 0, sizeof replay);
  memset(&trace, 0, sizeof trace);
  memset(&cls, 0, sizeof cls);
  /* Rules first: an invalid rules config refuses the analysis before anything is read. */
  tl_rules *rules = NULL;
  char *with_rules = NULL;
  int rc = tl_rules_load(opt.rules_config, &rules, e);
  if (rc) goto done_opts;
  {
    /* The canonical options gain the effective rule manifests and their digests. */
    tl_buf b = {0};
    tl_buf_append(&b, canonical, strlen(canonical) - 1); /* drop the closing brace */
    tl_buf_puts(&b, ",\"rules\":");
    tl_rules_options_json(rules, &b);
    tl_buf_puts(&b, "}");
    if (b.oom) {
      tl_buf_free(&b);
      rc = tl_nomem(e);
      goto done_opts;
    }
    with_rules = b.p;
  }
  /* Step-constrained recovery needs the steps: never a silent downgrade. */
  if (rules->macro.partition_by_scheduler_step && !opt.ncontext) {
    rc = tl_fail(e, "protected replay has missing or conflicting step identity: the rules "
                    "config sets partition_by: scheduler_step but no scheduler context was "
                    "given (analyze option \"context\", CLI --context FILE)");
    goto done_opts;
  }
  /* Context files are validated before any profile is read. */
  if (opt.ncontext) {
    rc = tl_context_refuse_output((const char *const *)opt.context, opt.ncontext,
                                  sqlite3_db_filename(db, "main"), e);
    if (rc == TL_OK) rc = tl_context_load((const char *const *)opt.context, opt.ncontext, &ctx, e);
    if (rc) goto done_opts;
  }
  rc = tl_profile_discover(path, opt.source_kind, &profile, e);
  if (rc) goto done_opts;
  rc = refuse_self(db, &profile, e);
  if (rc == TL_OK) {
    rc = progress_stage(&pr, "inventory", e);
    if (rc == TL_OK) rc = tl_profile_inventory(&profile, &inventory, e);
  }
  hash_job *hashing = NULL;
  if (rc == TL_OK && opt.threads >= 2 && (hashing = calloc(1, sizeof *hashing)) != NULL) {
    hashing->profile = &profile;
    atomic_init(&hashing->stop, 0);
    if (pthread_create(&hashing->thread, NULL, hash_job_run, hashing) != 0) {
      free(hashing);
      hashing = NULL; /* no thread to be had: hash on this one */
    }
  }
  if (rc == TL_OK && !hashing) {
    rc = progress_stage(&pr, "hashing sources", e);
    if (rc == TL_OK) rc = digest_files(&profile, &digests, hashing_interrupted, &pr, e);
  }
  if (rc == TL_OK) {
    rc = progress_stage(&pr, hashing ? "reading events and calls, hashing"
                                     : "reading events and calls", e);
    if (rc == TL_OK) rc = tl_trace_load(&profile, &trace, progress_fn, &pr, e);
  }
  if (hashing) {
    if (rc != TL_OK) atomic_store(&hashing->stop, 1);
    pthread_join(hashing->thread, NULL);
    if (rc == TL_OK && hashing->rc != TL_OK) {
      tl_fail(e, "%s", hashing->err.msg ? hashing->err.msg : "hashing the sources failed");
      rc = TL_ERROR;
    }
    tl_err_clear(&hashing->err);
    digests = hashing->digests;
    if (rc == TL_OK && !digests) rc = tl_nomem(e);
    if (rc != TL_OK) {
      free(digests);
      digests = NULL;
    }
    free(hashing);
  }
  if (rc == TL_OK) {
    rc = progress_stage(&pr, "relating runtime calls to device work", e);
    if (rc == TL_OK) rc = tl_relate(&trace, &relations, e);
  }
  if (rc == TL_OK) {
    rc = progress_stage(&pr, "reconstructing graph replays", e);
    /* graph_replay: false leaves launches and their members as eager work (baselines) */
    if (rc == TL_OK && !opt.no_graph_replay) rc = tl_replay_build(&trace, &profile, &replay, e);
    if (rc == TL_OK) rc = tl_replay_promote(&trace, &replay, e);
  }
  if (rc == TL_OK && ctx) {
    rc = progress_stage(&pr, "linking scheduler context", e);
    if (rc == TL_OK) rc = tl_context_link(ctx, &trace, &relations, &profile, &replay, e);
  }
  /* The runtime calls and relations are written now and freed: nothing after this point
  ** reads them, and they are the largest arrays after the events (tl_publish_begin). The
  ** rest of the publication joins the same SAVEPOINT once the structure is built. */
  size_t supported = 0;
  for (size_t i = 0; rc == TL_OK && i < relations.n; i++)
    supported += relations.v[i].state == TL_SUPPORTED_EXACT ||
                 relations.v[i].state == TL_SUPPORTED_DETERMINISTIC;
  int publishing = 0, context_savepoint = 0;
  tl_publication pub = {db, NULL};
  if (rc == TL_OK) rc = progress_stage(&pr, "publishing runtime calls and relations", e);
  if (rc == TL_OK) {
    /* The context relations and the report facts join the same atomic publication. */
    rc = tl_pub_exec(db, "SAVEPOINT traceloom_context_publish", e);
    context_savepoint = rc == TL_OK;
  }
  if (rc == TL_OK) {
    tl_publish_input early = {.profile = &profile,
                              .trace = &trace,
                              .relations = &relations,
                              .inventory = &inventory,
                              .digests = digests,
                              .threads = opt.threads};
    rc = tl_publish_begin(&pub, db, &early, e);
    publishing = rc == TL_OK;
  }
  if (publishing) {
    tl_trace_release_calls(&trace);
    free(relations.v);
    relations.v = NULL, relations.cap = 0; /* n stays: the metadata and summary count */
  }
  /* Roles and symbols, anchors, cost packets, structure. */
  uint8_t *roles = NULL, *costs = NULL;
  uint32_t *symbols = NULL, *role_class = NULL;
  const char **sem_role = NULL, **sem_reason = NULL;
  tl_anchors anchors;
  tl_packets packets = {0};
  tl_forest forest;
  memset(&anchors, 0, sizeof anchors);
  memset(&forest, 0, sizeof forest);
  if (rc == TL_OK) {
    rc = progress_stage(&pr, "classifying evidence roles and symbols", e);
    size_t n = trace.ev.n ? trace.ev.n : 1;
    sem_role = malloc(n * sizeof *sem_role);
    sem_reason = malloc(n * sizeof *sem_reason);
    role_class = malloc(n * sizeof *role_class);
    if (rc == TL_OK && (!sem_role || !sem_reason || !role_class)) rc = tl_nomem(e);
    if (rc == TL_OK) rc = tl_classify(&trace, rules, &cls, e);
    if (rc == TL_OK) rc = tl_classification_event_arrays(&cls, &trace, &roles, &costs, &symbols, e);
    for (size_t i = 0; rc == TL_OK && i < trace.ev.n; i++)
      role_class[i] = tl_event_class(&cls, &trace, i)->class_id;
    /* Launch anchors of exact replay units: anchors by construction, their symbol the
    ** composition role (ACLH, ACLL, ...), whatever the rules say about their label. */
    for (size_t k = 0; rc == TL_OK && k < replay.launches.n; k++) {
      const tl_graph_launch *l = &replay.launches.v[k];
      if (l->anchor_event == TL_REPLAY_NONE) continue;
      roles[l->anchor_event] = TL_ROLE_ANCHOR;
      costs[l->anchor_event] = TL_COST_ELIGIBLE;
      symbols[l->anchor_event] = tl_event_label(&trace, l->anchor_event)->name;
    }
  }
  if (rc == TL_OK) {
    rc = progress_stage(&pr, "selecting anchors", e);
    tl_anchor_input ain = {&trace, roles, costs, symbols, replay.owned};
    if (rc == TL_OK) rc = tl_anchors_build(&ain, &anchors, e);
  }
  if (rc == TL_OK) {
    for (size_t i = 0; i < trace.ev.n; i++) {
      switch (anchors.non_anchor[i]) {
        case TL_NA_NONE:
          sem_role[i] = "anchor";
          sem_reason[i] = roles[i] == TL_ROLE_UNKNOWN_ANCHOR ? "unmatched_observation_unknown_first"
                                                             : "matched_positive_rule";
          break;
        case TL_NA_REPRESENTED_BY_COMM_OP:
          sem_role[i] = "aux";
          sem_reason[i] = "represented_by_communication_op";
          break;
        case TL_NA_OWNED_BY_REPLAY:
          sem_role[i] = "aux";
          sem_reason[i] = "owned_by_exact_replay_unit";
          break;
        default:
          sem_role[i] = roles[i] == TL_ROLE_TRANSPARENT ? "transparent" : "aux";
          sem_reason[i] = "matched_positive_rule";
      }
    }
    /* The events are written now, and what only their rows needed is freed: the provider
    ** ids and source rowids, and the per-event classification arrays. */
    rc = progress_stage(&pr, "publishing events", e);
    if (rc == TL_OK) {
      tl_publish_input mid = {.profile = &profile,
                              .trace = &trace,
                              .event_symbol = symbols,
                              .event_semantic_role = sem_role,
                              .event_semantic_role_reason = sem_reason,
                              .event_role_class = role_class};
      rc = tl_publish_events(&pub, &mid, e); /* rolls back the whole publication on failure */
      if (rc != TL_OK) publishing = 0;
    }
    if (rc == TL_OK) {
      tl_trace_release_event_ids(&trace);
      free(symbols), free(sem_role), free(sem_reason), free(role_class), free(roles), free(costs);
      symbols = role_class = NULL, sem_role = sem_reason = NULL, roles = costs = NULL;
    }
    if (rc == TL_OK) rc = progress_stage(&pr, "costing anchors", e);
    if (rc == TL_OK) rc = tl_packets_build(&trace, &anchors, &packets, e);
  }
  if (rc == TL_OK) {
    rc = progress_stage(&pr, "recovering structure", e);
    uint32_t *anchor_unit = NULL;
    int64_t *anchor_key = NULL;
    if (rc == TL_OK && replay.units.n) {
      anchor_unit = calloc(anchors.n ? anchors.n : 1, sizeof *anchor_unit);
      anchor_key = calloc(anchors.n ? anchors.n : 1, sizeof *anchor_key);
      if (!anchor_unit || !anchor_key) rc = tl_nomem(e);
      for (size_t k = 0; rc == TL_OK && k < anchors.n; k++) {
        uint32_t x = anchors.event[k];
        if (x < replay.n_real_events) continue;
        uint32_t l = replay.launch_of_synthetic[x - replay.n_real_events];
        const tl_graph_launch *gl = &replay.launches.v[l];
        anchor_unit[k] = gl->unit + 1;
        /* token identity (graph template, body template, slot): negative, never a symbol id */
        anchor_key[k] = -(((int64_t)replay.units.v[gl->unit].graph_template << 40) |
                          ((int64_t)gl->body_template << 16) | (int64_t)(gl->slot_order + 1));
      }
    }
    /* Step-constrained recovery: repeats never cross a scheduler step. */
    uint32_t *part = NULL;
    if (rc == TL_OK && ctx && rules->macro.partition_by_scheduler_step) {
      part = malloc((anchors.n ? anchors.n : 1) * sizeof *part);
      if (!part) rc = tl_nomem(e);
      else rc = tl_context_partition_anchors(ctx, &anchors, part);
    }
    tl_forest_constraints fc = {anchor_unit, anchor_key, part};
    if (rc == TL_OK) rc = tl_forest_build(&trace, &anchors, &packets, &fc, &forest, e);
    free(anchor_unit);
    free(anchor_key);
    free(part);
  }
  if (rc == TL_OK) {
    rc = progress_stage(&pr, "publishing", e);
  }
  /* The summary's buffer exists before publication commits: nothing may fail after it. */
  enum { SUMMARY_MAX = 512 };
  char *summary_buf = rc == TL_OK ? malloc(SUMMARY_MAX) : NULL;
  if (rc == TL_OK && !summary_buf) rc = tl_nomem(e);
  if (rc == TL_OK) {
    tl_structure_input sin = {&trace, &anchors, &packets, &forest};
    tl_publish_input in = {.profile = &profile,
                           .trace = &trace,
                           .relations = &relations,
                           .inventory = &inventory,
                           .digests = digests,
                           .options_json = with_rules,
                           .event_symbol = symbols,
                           .event_semantic_role = sem_role,
                           .event_semantic_role_reason = sem_reason,
                           .structure = &sin,
                           .embed_raw = opt.embed_raw,
                           .rules = rules,
                           .classification = &cls,
                           .event_role_class = role_class,
                           .replay = &replay,
                           .threads = opt.threads};
    rc = tl_publish_finish(&pub, &in, e); /* releases its SAVEPOINT, or rolls it back */
    publishing = 0;
    if (rc == TL_OK && ctx) rc = tl_context_publish(db, ctx, e);
    if (rc == TL_OK) {
      tl_reports_input rin = {&trace, &anchors, &packets, &replay, rules, opt.idle_evidence};
      rc = tl_reports_publish(db, &rin, e); /* ext/reports: after the views exist */
    }
  }
  if (publishing) tl_publish_abort(&pub); /* failed between the publication steps */
  if (context_savepoint) {
    if (rc == TL_OK) {
      rc = tl_pub_exec(db, "RELEASE traceloom_context_publish", e);
    } else {
      sqlite3_exec(db, "ROLLBACK TO traceloom_context_publish", NULL, NULL, NULL);
      sqlite3_exec(db, "RELEASE traceloom_context_publish", NULL, NULL, NULL);
    }
  }
  size_t n_anchors = anchors.n, n_trees = forest.trees.n;
  size_t n_real_events = replay.launches.n ? replay.n_real_events : trace.ev.n, n_exact = 0;
  for (size_t k = 0; k < replay.launches.n; k++) n_exact += replay.launches.v[k].unit != TL_REPLAY_NONE;
  tl_forest_free(&forest);
  tl_packets_free(&packets);
  tl_anchors_free(&anchors);
  free(roles), free(costs), free(symbols), free(sem_role), free(sem_reason), free(role_class);
  tl_classification_free(&cls);
  tl_replay_free(&replay);
  if (rc == TL_OK) {
    snprintf(summary_buf, SUMMARY_MAX,
             "traceloom: analysed %zu input(s) (%s): %zu events, %zu runtime calls, %zu "
             "runtime-device relations (%zu supported), %zu exact graph launch(es), %zu anchors "
             "in %zu tree(s) in %.2f s",
             profile.inputs.n, tl_family_source_kind(profile.inputs.v[0].family), n_real_events,
             trace.calls.n, relations.n, supported, n_exact, n_anchors, n_trees, now_s() - pr.t0);
    *summary = summary_buf;
  } else {
    free(summary_buf);
  }
  progress_end(&pr);
  free(digests);
  TL_VEC_FREE(&relations);
  tl_inventory_free(&inventory);
  tl_trace_free(&trace);
  tl_profile_free(&profile);
done_opts:
  tl_context_free(ctx);
  tl_rules_free(rules);
  free(with_rules);
  free(canonical);
  tl_options_free(&opt);
  return rc;
}

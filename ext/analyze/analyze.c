/*
** analyze.c: the analysis driver (see analyze.h).
**
** tl_analyze() is the stage list below, run in order over one `analysis` (what each stage
** hands the next). A stage is one call into its module; its row of the table names it for
** progress lines and TRACELOOM_TIMING=1. Everything the stages write goes into one
** savepoint (publication.h): a failure anywhere leaves the database as it was.
**
** Adding a stage: a function `static int name(analysis *a, tl_err *e)` that calls the module,
** its fields in `analysis` (freed in analysis_free), and one row in `stages`. Adding a
** writer: a function of the same signature that builds the writer's input and calls it, and
** one row in `publishers`, at the step and place publication needs it.
*/
#include "analyze/analyze.h"
#include "analyze/hashing.h"
#include "analyze/progress.h"
#include "analyze/publication.h"
#include "analyze/staging.h"
#include "util/buf.h"
#include "util/timing.h"
#include "publish/publish.h"
#include "source/source.h"
#include "trace/trace.h"
#include "relate/relate.h"
#include "replay/replay.h"
#include "context/context.h"
#include "classify/classify.h"
#include "anchor/anchors.h"
#include "cost/packets.h"
#include "structure/structure.h"
#include "structure/publish_structure.h"
#include "reconcile/reconcile.h"
#include "reports/reports.h"
#include "bodypattern/bodypattern.h"
#include "scope/scope.h"
#include "export/looptree.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the stages hand each other, in stage order. */
typedef struct analysis {
  sqlite3 *db;
  tl_options opt;
  char *options_json;          /* canonical options with the rule manifests */
  tl_rules *rules;
  tl_context *ctx;             /* scheduler context; NULL without the "context" option */
  tl_progress pr;
  tl_profile profile;
  tl_inventory inventory;
  tl_hashing *hashing;         /* the hashing thread while it runs */
  int hashing_beside;          /* the files are hashed on that thread (beside reading) */
  tl_source_digest *digests;
  tl_trace trace;
  tl_relations relations;
  size_t supported_relations;
  int32_t *event_call;         /* per trace event: the call of its supported relation, or -1
                                  (from the relations' release to the anchors' endpoints) */
  uint32_t *anchor_call;       /* per anchor: its runtime endpoint call (ext/reports), or none */
  tl_host_calls *host_calls;   /* the calls' columns the host windows read, once released */
  tl_host_windows *host_windows; /* found once the anchors are (ext/reports) */
  double host_windows_wall;    /* how long finding them took (TRACELOOM_TIMING) */
  double host_windows_cpu;
  tl_replay replay;
  tl_reconciliation *reconciliation; /* event reconciliation's decisions (ext/reconcile) */
  tl_anchor_merges merges;     /* the reconciled pairs anchor selection folds */
  tl_analysis_txn txn;
  tl_staging *staging;         /* the second writer of the trees (threads >= 2), NULL: one writer */
  tl_staging *runtime_staging; /* the second writer of the runtime relations, likewise */
  tl_staging *events_staging;  /* the second writer of the upper half of the events */
  tl_structure_input structure; /* what the staged trees writer reads while it runs */
  tl_classification cls;
  tl_event_classes classes;
  tl_anchors anchors;
  uint8_t *semantic;           /* per event: its tl_semantic code (role and reason) */
  tl_packets packets;
  tl_forest forest;
  size_t ntrees;               /* forest.trees.n, kept for the summary once it is freed */
  tl_scopes scopes;            /* the trace's host scopes: steps, host points */
  uint32_t **node_names;       /* per tree, per node: a name from the host scopes, 0 = none */
  char *summary;
  tl_analyze_extra *extra;     /* the caller's requests beyond publication; NULL: none */
  tl_structure_loop_trees loop; /* the loop tree's rows, rendered by loop_thread (extra) */
  pthread_t loop_thread;
  int loop_threaded;           /* loop_thread runs (joined by loop_tree_finish) */
  double loop_cpu;             /* its CPU seconds (TRACELOOM_TIMING) */
  struct ahead {               /* stages run beside a staging copy (run_ahead) */
    int (*run)(struct analysis *a, tl_err *e);
    pthread_t thread;
    int started;               /* the thread runs, or ran and was not joined */
    int rc;
    tl_err err;
    double cpu;                /* its CPU seconds (TRACELOOM_TIMING) */
  } anchors_ahead, structure_ahead, loop_ahead;
  const struct tl_structure_trees *trees; /* the staged trees' rows while loop_ahead reads them */
  int loop_rows_wanted;        /* loop_ahead builds the loop tree's rows */
  tl_symbol_summary *symbol_summary; /* built beside the trees' copy, written after it */
  int calls_released;          /* the runtime calls and relations are freed */
  int event_inputs_released;   /* what only the event rows read is freed */
} analysis;

/* ------------------------------------------------------------------ stages */

/* With threads >= 2 the inventory is taken and the files hashed on a second thread while
** this one reads them (hashing.h); else the inventory is taken here, and the files hashed
** next. */
static int take_inventory(analysis *a, tl_err *e) {
  if (a->opt.threads >= 2) a->hashing = tl_hashing_start(&a->profile, &a->inventory);
  a->hashing_beside = a->hashing != NULL;
  return a->hashing_beside ? TL_OK : tl_profile_inventory(&a->profile, &a->inventory, e);
}
static int hashing_here(const analysis *a) { return !a->hashing_beside; }
static int hashing_beside(const analysis *a) { return a->hashing_beside; }

static int hash_sources(analysis *a, tl_err *e) {
  return tl_hashing_run(&a->profile, &a->digests, tl_progress_interrupted, &a->pr, e);
}

static int read_trace(analysis *a, tl_err *e) {
  int rc = tl_trace_load_threads(&a->profile, &a->trace, a->opt.threads, tl_progress_rows, &a->pr,
                                 e);
  if (a->hashing) rc = tl_hashing_join(a->hashing, rc, &a->digests, e);
  a->hashing = NULL;
  return rc;
}

static int relate(analysis *a, tl_err *e) { return tl_relate(&a->trace, &a->relations, e); }

/* graph_replay: false leaves launches and their members as eager work (baselines): an
** empty reconstruction over the same events. */
static int reconstruct_replays(analysis *a, tl_err *e) {
  int rc = a->opt.no_graph_replay ? TL_OK : tl_replay_build(&a->trace, &a->profile, &a->replay, e);
  return rc == TL_OK ? tl_replay_promote(&a->trace, &a->replay, e) : rc;
}

/* Event reconciliation (recovery.md S2): duplicate observations of one device action are
** decided after the replays (a pair never straddles an exact replay) and before the roles and
** anchors, from the trace's provider ids in memory; anchor selection folds the reconciled
** pairs, the report stage writes the decisions. */
static int reconcile(analysis *a, tl_err *e) {
  int rc = tl_reconcile_decide(&a->trace, &a->replay, a->rules, &a->reconciliation, e);
  return rc == TL_OK ? tl_reconcile_merges(a->reconciliation,
                                           tl_event_count(&a->trace, &a->replay.launch_events),
                                           &a->merges, e)
                     : rc;
}

static int with_context(const analysis *a) { return a->ctx != NULL; }

/* Host scopes (Kineto): each event's host point and the step markers, while the calls and
** relations that reach a launching thread are still held. */
static int link_scopes(analysis *a, tl_err *e) {
  return tl_scope_link(&a->trace, &a->relations, a->opt.step_markers, &a->scopes, e);
}
static int with_scopes(const analysis *a) { return a->trace.scopes.n > 0; }

static int link_context(analysis *a, tl_err *e) {
  return tl_context_link(a->ctx, &a->trace, &a->relations, &a->profile, &a->replay, e);
}

/* ------------------------------------------------------------------ stages ahead */

/* The copy that ends a staged publication step (tl_staging_copy) is SQLite's work alone on
** the analysis connection, and the worker has returned: the second core idles. The stages
** that follow the step read and write arrays only, never the connection, so with threads >= 2
** they run then, on a helper thread: the same functions on the same inputs (the same result
** for any thread count), started once the step has freed what only its rows read (so they
** hold no more memory than in turn), joined by the stage that would have run them. */
typedef struct ahead ahead;

static int select_and_find_windows(analysis *a, tl_err *e);
static int cost_and_recover(analysis *a, tl_err *e);
static int release_calls(analysis *a, tl_err *e);
static void release_event_classes(analysis *a);
static void release_event_inputs(analysis *a);

static void *ahead_main(void *arg) {
  analysis *a = ((void **)arg)[0];
  ahead *h = ((void **)arg)[1];
  free(arg);
  double cpu0 = tl_thread_cpu_s();
  h->rc = h->run(a, &h->err);
  h->cpu = tl_thread_cpu_s() - cpu0;
  return NULL;
}

/* Starts run on a helper thread (threads >= 2); else, or when no thread starts, the stages
** that join it run it in turn. */
static void run_ahead(analysis *a, ahead *h, int (*run)(analysis *a, tl_err *e)) {
  void **arg = a->opt.threads >= 2 ? malloc(2 * sizeof *arg) : NULL;
  if (!arg) return;
  arg[0] = a, arg[1] = h;
  h->run = run, h->rc = TL_OK;
  if (pthread_create(&h->thread, NULL, ahead_main, arg) == 0) h->started = 1;
  else free(arg);
}

/* Waits for the helper; its failure is the analysis' (its message and code). */
static int join_ahead(ahead *h, tl_err *e) {
  if (!h->started) return TL_OK;
  pthread_join(h->thread, NULL);
  h->started = 0;
  int rc = h->rc;
  if (rc != TL_OK && e)
    tl_fail_code(e, h->err.code ? (tl_err_code)h->err.code : TL_ERR_FAILED, "%s",
                 h->err.msg ? h->err.msg : "a stage run ahead failed");
  tl_err_clear(&h->err);
  tl_timer tm;
  tl_timer_start(&tm, "ahead");
  tl_timer_threads(&tm, "helper thread", &h->cpu, 1);
  return rc;
}

/* ------------------------------------------------------------------ publishers */

/* Every writer of the analysis, one row each, in publication order; a stage that publishes
** runs the rows of its step. A writer takes what it needs from the analysis (its own input
** struct, built here) and calls its module: ext/publish for the trace's own facts and the
** publication's frame (savepoint, views, catalog), each stage for its own relations. */
typedef enum {
  PUBLISH_RUNTIME, /* after replay reconstruction and context linking: calls, relations */
  PUBLISH_EVENTS,  /* once anchors are selected: the events */
  PUBLISH_REST     /* once the structure is recovered: everything else */
} publish_step_id;

static const tl_derived *derived(const analysis *a) { return &a->replay.launch_events; }

/* With threads >= 2 the staging databases are attached first: ATTACH is refused inside the
** savepoint (staging.h). */
static int pub_open(analysis *a, tl_err *e) {
  if (a->opt.threads >= 2) {
    a->runtime_staging = tl_staging_attach(a->db, TL_STAGING_RUNTIME_SCHEMA);
    a->events_staging = tl_staging_attach(a->db, TL_STAGING_EVENTS_SCHEMA);
    a->staging = tl_staging_attach(a->db, TL_STAGING_SCHEMA);
  }
  return tl_txn_begin(&a->txn, a->db, e);
}

static int pub_resume(analysis *a, tl_err *e) { return tl_publish_resume(&a->txn.pub, e); }

static int write_relations(sqlite3 *db, void *rows, tl_err *e) {
  return tl_runtime_rows_relations(db, rows, e);
}

/* With a staging database the relations are written there by its worker while this
** connection writes the calls, then moved in (staging.h); the rows are the same either way. */
static int pub_runtime(analysis *a, tl_err *e) {
  tl_runtime_input in = {&a->trace, &a->relations};
  if (!a->runtime_staging) return tl_publish_runtime(&a->txn.pub, &in, e);
  tl_runtime_rows *rows = NULL;
  int rc = tl_runtime_rows_prepare(&in, &rows, e);
  if (rc == TL_OK)
    rc = tl_staging_start(a->runtime_staging, tl_runtime_relation_tables, write_relations, rows, e);
  if (rc == TL_OK) rc = tl_runtime_rows_calls(a->db, rows, e);
  rc = tl_staging_join(a->runtime_staging, rc, tl_progress_interrupted, &a->pr, e);
  if (rc == TL_OK) rc = tl_runtime_rows_finish(&a->txn.pub, rows, e);
  tl_runtime_rows_free(rows); /* the worker has returned */
  /* the copy reads the staging file only: the calls and relations go first, and the next
  ** stages run beside it */
  if (rc == TL_OK) rc = release_calls(a, e);
  if (rc == TL_OK) run_ahead(a, &a->anchors_ahead, select_and_find_windows);
  return tl_staging_copy(a->runtime_staging, rc, e);
}

static int pub_inventory(analysis *a, tl_err *e) {
  tl_inventory_input in = {&a->profile, &a->trace, derived(a), &a->inventory, a->digests};
  return tl_publish_inventory(a->db, &in, e);
}

/* The events [lo, hi) that the staging worker writes. */
typedef struct event_range {
  const tl_event_rows *rows;
  size_t lo, hi;
} event_range;

static int write_events(sqlite3 *db, void *range, tl_err *e) {
  const event_range *r = range;
  return tl_event_rows_write(db, r->rows, r->lo, r->hi, e);
}

/* With a staging database the upper half of the events is written there by its worker while
** this connection writes the lower half, then appended (staging.h); the rows are the same
** either way. */
static int pub_events(analysis *a, tl_err *e) {
  tl_event_input in = {.trace = &a->trace,
                       .derived = derived(a),
                       .symbol = a->classes.symbol,
                       .semantic = a->semantic,
                       .semantic_role_name = tl_semantic_role_name,
                       .semantic_reason_name = tl_semantic_reason_name,
                       .role_class = a->classes.role_class,
                       .anchor_event = a->anchors.event,
                       .nanchors = a->anchors.n};
  if (!a->events_staging) return tl_publish_events(&a->txn.pub, &in, e);
  tl_event_rows *rows = NULL;
  int rc = tl_event_rows_prepare(&a->txn.pub, &in, &rows, e);
  /* the event shapes are written: the rows the two writers write read no classification */
  release_event_classes(a);
  size_t n = rows ? tl_event_rows_count(rows) : 0;
  event_range upper = {rows, n / 2, n};
  if (rc == TL_OK) rc = tl_staging_start(a->events_staging, tl_event_tables, write_events, &upper, e);
  if (rc == TL_OK) rc = tl_event_rows_write(a->db, rows, 0, upper.lo, e);
  rc = tl_staging_join(a->events_staging, rc, tl_progress_interrupted, &a->pr, e);
  tl_event_rows_free(rows); /* the worker has returned */
  tl_publish_events_done(&a->txn.pub);
  /* the copy reads the staging file only: the events' inputs go first, and the next stages
  ** run beside it */
  if (rc == TL_OK) {
    release_event_inputs(a);
    run_ahead(a, &a->structure_ahead, cost_and_recover);
  }
  return tl_staging_copy(a->events_staging, rc, e);
}

static int pub_embedded(analysis *a, tl_err *e) {
  return tl_publish_embedded(&a->txn.pub, &a->profile, e);
}
static int with_embed_raw(const analysis *a) { return a->opt.embed_raw; }

static int pub_classification(analysis *a, tl_err *e) {
  return tl_publish_classification(a->db, &a->trace, derived(a), a->rules, &a->cls, e);
}

/* What the trees' staging worker writes: the nodes, then the occurrences from `from` on. */
typedef struct staged_trees {
  const tl_structure_trees *trees;
  size_t from;
} staged_trees;

static int write_staged(sqlite3 *db, void *arg, tl_err *e) {
  const staged_trees *st = arg;
  return tl_structure_trees_staged(db, st->trees, st->from, e);
}

/* With a staging database the tree nodes and the upper part of the occurrences are written
** there by its worker while this connection writes the anchors and the lower part, then
** moved in (staging.h), and the tree rows follow here; the rows are the same either way.
** The split gives each side about the same work: the anchors cost about what the nodes do,
** so the occurrences are halved. */
/* The loop tree Markdown of the trees in memory (extra), on its own thread: it reads only the
** rows tl_structure_loop_trees_build copied, which it frees. */
static void *loop_tree_main(void *arg) {
  analysis *a = arg;
  double cpu0 = tl_thread_cpu_s();
  tl_err e = {0};
  if (tl_loop_tree_render(a->extra->loop_tree_options, a->loop.trees, a->loop.ntrees,
                          a->loop.shapes, a->loop.nshapes, &a->extra->loop_tree_md, &e) != TL_OK)
    a->extra->loop_tree_md = NULL; /* the caller reads it back from the published analysis */
  tl_err_clear(&e);
  if (a->extra->loop_tree_md) {
    tl_buf lines = {0};
    tl_loop_tree_summary(a->loop.trees, a->loop.ntrees, a->loop.shapes, a->loop.nshapes, &lines);
    if (lines.oom) tl_buf_free(&lines);
    /* an empty summary is still one (no Repeat): "" rather than NULL */
    else a->extra->loop_tree_summary = lines.p ? lines.p : tl_strdup("");
  }
  tl_structure_loop_trees_free(&a->loop);
  a->loop_cpu = tl_thread_cpu_s() - cpu0;
  return NULL;
}

/* The trees' rows are built (the structure is published): render them beside the rest of the
** publication, which is on this thread and SQLite's alone. With threads 1 they are rendered
** when the analysis ends (loop_tree_finish). */
static void loop_tree_start(analysis *a) {
  if (a->extra && a->opt.threads > 1 &&
      pthread_create(&a->loop_thread, NULL, loop_tree_main, a) == 0)
    a->loop_threaded = 1;
}

/* The Markdown is there (or was not wanted) once this returns; not kept when the analysis
** failed. */
static void loop_tree_finish(analysis *a, int rc) {
  if (!a->extra) return;
  if (a->loop_threaded) pthread_join(a->loop_thread, NULL);
  else if (rc == TL_OK && a->loop.trees) loop_tree_main(a);
  a->loop_threaded = 0;
  tl_timer tm;
  tl_timer_start(&tm, "publish");
  tl_timer_threads(&tm, "loop tree Markdown (thread)", &a->loop_cpu, 1);
  tl_structure_loop_trees_free(&a->loop);
  if (rc != TL_OK) {
    free(a->extra->loop_tree_md), free(a->extra->loop_tree_summary);
    a->extra->loop_tree_md = a->extra->loop_tree_summary = NULL;
  }
}

/* The loop tree's rows (one tl_loop_tree_row a node) are built beside the structure's
** publication, at the analysis' peak of memory, and held until the render beside the report
** stage. Up to this budget they are; a larger forest (5M nodes for the 10M-task bench: +400
** MB at the peak, over 1 GB) renders nothing here, and the caller reads the tree back from
** the committed analysis, once its arrays are freed (tl_analyze_ex). */
enum { LOOP_ROWS_BUDGET = 64 << 20 };

static int loop_rows_fit(const analysis *a) {
  size_t nodes = 0;
  for (size_t i = 0; i < a->forest.trees.n; i++) nodes += a->forest.trees.v[i].nnodes;
  return nodes <= LOOP_ROWS_BUDGET / sizeof(tl_loop_tree_row);
}

static int build_loop_rows(analysis *a, tl_err *e) {
  return tl_structure_loop_trees_build(a->trees, &a->loop, e);
}

/* The symbol summary's rows are computed from the anchors and their packets alone (a counting
** pass and two selections per symbol, while its rows are a few hundred): beside the trees'
** copy, where the second core has only the loop tree's rows to build, rather than on the
** analysis thread before the trees' writer starts. It holds 8 bytes an anchor (each anchor's
** duration, bucketed by symbol); beside the trees' ranks and node shapes that would raise
** the 10M peak by 59 MB (ARCHITECTURE.md Memory), so up to this budget of anchors (about
** 2.8M, as when its sort held 24 bytes an anchor in 64 MiB) it is built there, and a larger
** analysis writes it first. */
enum { SUMMARY_BESIDE_BUDGET = 21 << 20, SUMMARY_SORT_BYTES = 8 };

static int summary_beside_copy(const analysis *a) {
  return a->anchors.n <= SUMMARY_BESIDE_BUDGET / SUMMARY_SORT_BYTES;
}

/* What runs beside the trees' copy: the loop tree's rows (when wanted), the summary's rows. */
static int build_beside_copy(analysis *a, tl_err *e) {
  int rc = a->loop_rows_wanted ? build_loop_rows(a, e) : TL_OK;
  tl_timer tm;
  tl_timer_start(&tm, "structure");
  if (rc == TL_OK) rc = tl_structure_summary_build(&a->structure, &a->symbol_summary, e);
  tl_timer_mark(&tm, "symbol summary rows");
  return rc;
}

static int pub_structure(analysis *a, tl_err *e) {
  tl_structure_input in = {&a->trace, &a->anchors, &a->packets, &a->forest, a->anchor_call,
                           (const uint32_t *const *)a->node_names};
  a->structure = in;
  tl_structure_loop_trees *loop = a->extra && loop_rows_fit(a) ? &a->loop : NULL;
  if (!a->staging) {
    int rc = tl_publish_structure(a->db, &a->structure, loop, e);
    if (rc == TL_OK && loop) loop_tree_start(a);
    return rc;
  }
  tl_structure_trees *trees = NULL;
  /* over the budget, the summary's sort first: its scratch is not held beside the trees'
  ** ranks and the worker's (ARCHITECTURE.md Memory) */
  int beside = summary_beside_copy(a);
  int rc = beside ? TL_OK : tl_publish_structure_summary(a->db, &a->structure, e);
  if (rc == TL_OK) rc = tl_structure_trees_prepare(a->db, &a->structure, &trees, e);
  staged_trees st = {trees, trees ? tl_structure_trees_occurrences(trees) / 2 : 0};
  if (rc == TL_OK) rc = tl_staging_start(a->staging, tl_structure_staged_tables, write_staged, &st, e);
  if (rc == TL_OK) rc = tl_publish_structure_anchors(a->db, &a->structure, e);
  if (rc == TL_OK) rc = tl_structure_trees_lower(a->db, trees, st.from, e);
  rc = tl_staging_join(a->staging, rc, tl_progress_interrupted, &a->pr, e);
  /* the loop tree's rows read the trees as the tree rows below do: built beside the copy,
  ** with the summary's rows */
  a->trees = trees;
  a->loop_rows_wanted = loop != NULL;
  if (rc == TL_OK && (loop || beside)) run_ahead(a, &a->loop_ahead, build_beside_copy);
  int ahead = a->loop_ahead.started;
  rc = tl_staging_copy(a->staging, rc, e);
  if (rc == TL_OK) rc = tl_structure_trees_rows(a->db, trees, e);
  int built = join_ahead(&a->loop_ahead, rc == TL_OK ? e : NULL);
  if (rc == TL_OK) rc = built;
  if (rc == TL_OK && (loop || beside) && !ahead) rc = build_beside_copy(a, e);
  if (rc == TL_OK && beside)
    rc = tl_structure_summary_write(a->db, &a->structure, a->symbol_summary, e);
  tl_structure_summary_free(a->symbol_summary);
  a->symbol_summary = NULL;
  a->trees = NULL;
  tl_structure_trees_free(trees); /* the worker and the helper have returned */
  if (rc == TL_OK && loop) loop_tree_start(a);
  return rc;
}

/* The trees (and their repeat names) are read by the structure publication alone: freed
** after it, they are not held beside the report surfaces' arrays (ARCHITECTURE.md Memory). */
static int release_forest(analysis *a, tl_err *e) {
  a->ntrees = a->forest.trees.n;
  tl_scope_names_free(a->node_names, a->forest.trees.n);
  a->node_names = NULL;
  tl_forest_free(&a->forest);
  return TL_OK;
}

static int pub_replay(analysis *a, tl_err *e) {
  /* NULL when the reconstruction was switched off: no "no replay units" issue then */
  return tl_publish_replay(a->db, &a->trace, a->opt.no_graph_replay ? NULL : &a->replay,
                           a->anchors.event, a->anchors.n, e);
}

static int pub_views(analysis *a, tl_err *e) {
  return tl_publish_views(&a->txn.pub, a->opt.threads, a->opt.text_id_indexes,
                          a->opt.idle_evidence != NULL, e);
}

static int pub_metadata(analysis *a, tl_err *e) {
  tl_metadata_input in = {
      .profile = &a->profile,
      .trace = &a->trace,
      .derived = derived(a),
      .nrelations = a->relations.n,
      .digests = a->digests,
      .options_json = a->options_json,
      .embed_raw = a->opt.embed_raw,
      .partition_by = a->rules->macro.partition_by_scheduler_step ? "scheduler_step" : "none"};
  int rc = tl_publish_metadata(a->db, &in, e);
  return rc == TL_OK ? tl_publish_catalog(a->db, e) : rc;
}

/* ext/bodypattern reads the published replay cost map back (same savepoint). */
static int pub_body_patterns(analysis *a, tl_err *e) {
  int64_t body_domains = 0;
  return tl_replay_body_patterns(a->db, &body_domains, e);
}

static int pub_context(analysis *a, tl_err *e) { return tl_context_publish(a->db, a->ctx, e); }

/* ext/reports reads back the runtime relations published above (same savepoint). */
static int pub_reports(analysis *a, tl_err *e) {
  tl_reports_input in = {.trace = &a->trace,
                         .anchors = &a->anchors,
                         .packets = &a->packets,
                         .replay = &a->replay,
                         .rules = a->rules,
                         .idle_evidence_json = a->opt.idle_evidence,
                         .anchor_call = a->anchor_call,
                         .host_windows = a->host_windows,
                         .reconciliation = a->reconciliation,
                         .evidence_role_structure = a->opt.evidence_role_structure,
                         .threads = a->opt.threads};
  int rc = tl_reports_publish(a->db, &in, e);
  tl_host_windows_free(a->host_windows);
  a->host_windows = NULL;
  return rc;
}

static int pub_scopes(analysis *a, tl_err *e) {
  return tl_scope_publish(a->db, &a->scopes, &a->trace, &a->anchors, e);
}

static int pub_stats(analysis *a, tl_err *e) { return tl_txn_stats(&a->txn, e); }

typedef struct publisher {
  publish_step_id step;
  const char *name;                     /* TRACELOOM_TIMING=1 label; NULL: none */
  int (*run)(analysis *a, tl_err *e);
  int (*wanted)(const analysis *a);     /* NULL: always */
} publisher;

static const publisher publishers[] = {
    {PUBLISH_RUNTIME, "schema", pub_open, NULL},
    /* before the calls are released (pub_runtime, with a staging database) */
    {PUBLISH_RUNTIME, "inventory", pub_inventory, NULL},
    {PUBLISH_RUNTIME, "calls and relations", pub_runtime, NULL},
    {PUBLISH_EVENTS, NULL, pub_resume, NULL},
    {PUBLISH_EVENTS, "events", pub_events, NULL},
    {PUBLISH_REST, NULL, pub_resume, NULL},
    {PUBLISH_REST, "embedded raw tables", pub_embedded, with_embed_raw},
    {PUBLISH_REST, "classification", pub_classification, NULL},
    {PUBLISH_REST, "structure", pub_structure, NULL},
    {PUBLISH_REST, NULL, release_forest, NULL},
    {PUBLISH_REST, "replays", pub_replay, NULL},
    {PUBLISH_REST, "views", pub_views, NULL},
    {PUBLISH_REST, "metadata and catalog", pub_metadata, NULL},
    {PUBLISH_REST, "replay body patterns", pub_body_patterns, NULL},
    {PUBLISH_REST, "context", pub_context, with_context},
    {PUBLISH_REST, "reports", pub_reports, NULL},
    {PUBLISH_REST, "host scopes", pub_scopes, NULL},
    {PUBLISH_REST, "planner statistics", pub_stats, NULL},
};

/* Runs the writers of one step, in table order. */
static int publish_step(analysis *a, publish_step_id step, tl_err *e) {
  tl_timer tm;
  tl_timer_start(&tm, "publish");
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < sizeof publishers / sizeof publishers[0]; i++) {
    const publisher *p = &publishers[i];
    if (p->step != step || (p->wanted && !p->wanted(a))) continue;
    rc = p->run(a, e);
    if (p->name) tl_timer_mark(&tm, p->name);
  }
  return rc;
}

/* The host windows keep the calls' times, shapes and inputs from the calls' release until
** they are found, beside the anchors (24 bytes a call, moved out of the trace), and build a
** scope index there (16 bytes a call, 4 more while it merges): while the anchors are
** selected, which is not the analysis' peak for a million tasks but would raise the 10M
** bench's by a quarter (947 MB to 1,205 MB measured). Up to this budget they do; more calls
** (about 1.5M) are read back from their published rows by the report stage, at its end, as
** they were before (ext/reports/host_window.c): the same rows either way. */
enum { HOST_CALLS_BUDGET = 64 << 20, HOST_CALLS_BYTES = 44 };

/* Nothing after the runtime publication reads the calls and relations, the largest arrays
** after the events, but the host windows (above) and the anchors' runtime endpoints, which
** read each event's call (4 bytes an event): taken from the relations here, at their
** release, not before their publication (45 MB less beside its writers at 10M). */
static int release_calls(analysis *a, tl_err *e) {
  if (a->calls_released) return TL_OK;
  a->calls_released = 1;
  int rc = tl_relations_event_call(&a->relations, a->trace.ev.n, &a->event_call, e);
  if (rc == TL_OK && a->trace.calls.n <= HOST_CALLS_BUDGET / HOST_CALLS_BYTES)
    rc = tl_host_calls_take(&a->trace, &a->host_calls, e);
  tl_trace_release_calls(&a->trace);
  free(a->relations.v);
  a->relations.v = NULL, a->relations.cap = 0; /* n stays: the metadata and summary count */
  return rc;
}

/* The runtime calls and relations are written now and freed: nothing after this point reads
** them, and they are the largest arrays after the events. */
static int publish_calls(analysis *a, tl_err *e) {
  a->supported_relations = tl_relations_supported(&a->relations);
  int rc = publish_step(a, PUBLISH_RUNTIME, e);
  if (rc == TL_OK) rc = release_calls(a, e);
  return rc;
}

static int classify(analysis *a, tl_err *e) {
  int rc = tl_classify(&a->trace, &a->replay.launch_events, a->rules, &a->cls, e);
  return rc == TL_OK
             ? tl_event_classes_build(&a->cls, &a->trace, &a->replay.launch_events, &a->classes, e)
             : rc;
}

/* Anchors from the trace's events and the launch anchors replay derived. */
static int select_anchors(analysis *a, tl_err *e) {
  const tl_derived *launches = &a->replay.launch_events;
  tl_anchor_input in = {&a->trace, launches, a->classes.role, a->classes.cost, a->classes.symbol,
                        a->replay.owned, &a->merges};
  int rc = tl_anchors_build(&in, &a->anchors, e);
  size_t n = tl_event_count(&a->trace, launches);
  if (rc == TL_OK)
    rc = tl_anchor_semantic_roles(&a->anchors, a->classes.role, n, &a->semantic, e);
  /* a task a communication op represents, and a reconciled pair's non-canonical member, are
  ** decided by a system rule (classify.h) */
  uint8_t *represented = rc == TL_OK ? malloc(n ? n : 1) : NULL;
  if (rc == TL_OK && !represented) rc = tl_nomem(e);
  if (rc == TL_OK) {
    for (size_t i = 0; i < n; i++)
      represented[i] = a->anchors.non_anchor[i] == TL_NA_REPRESENTED_BY_COMM_OP ? TL_REPRESENTED_BY_COMM
                       : a->anchors.non_anchor[i] == TL_NA_RECONCILED           ? TL_REPRESENTED_BY_RECONCILED
                                                                                : 0;
    rc = tl_classification_represent(&a->cls, &a->trace, launches, represented,
                                     a->classes.role_class, e);
  }
  free(represented);
  return rc;
}

/* What only the event shapes read: the per-event classification and semantic codes. */
static void release_event_classes(analysis *a) {
  tl_event_classes_free(&a->classes);
  free(a->semantic);
  a->semantic = NULL;
}

/* What only the event rows read: the provider ids and source rowids, and the per-event
** classification. */
static void release_event_inputs(analysis *a) {
  if (a->event_inputs_released) return;
  a->event_inputs_released = 1;
  tl_trace_release_event_ids(&a->trace);
  release_event_classes(a);
}

/* Each anchor's runtime endpoint (from the event calls), then the host windows between
** adjacent anchors and the calls observed inside them, from the calls' columns kept at their
** release, which go now (ext/reports: the report stage writes the windows found here). */
static int find_host_windows(analysis *a, tl_err *e) {
  double t0 = tl_now_s(), cpu0 = tl_thread_cpu_s();
  int rc = tl_reports_anchor_endpoints(&a->anchors, &a->replay, a->event_call, a->trace.ev.n,
                                       &a->anchor_call, e);
  free(a->event_call); /* read by the endpoints alone */
  a->event_call = NULL;
  if (rc == TL_OK && a->host_calls) /* else over the budget: the report stage finds them */
    rc = tl_host_windows_find(a->host_calls, &a->anchors, a->anchor_call, &a->host_windows, e);
  tl_host_calls_free(a->host_calls);
  a->host_calls = NULL;
  a->host_windows_wall = tl_now_s() - t0, a->host_windows_cpu = tl_thread_cpu_s() - cpu0;
  return rc;
}

/* Run ahead beside the runtime copy (pub_runtime), or in turn. */
static int select_and_find_windows(analysis *a, tl_err *e) {
  int rc = classify(a, e);
  if (rc == TL_OK) rc = select_anchors(a, e);
  return rc == TL_OK ? find_host_windows(a, e) : rc;
}
static int anchors_here(const analysis *a) { return !a->anchors_ahead.started; }
static int anchors_beside(const analysis *a) { return a->anchors_ahead.started; }

/* TRACELOOM_TIMING: what finding the host windows on the helper thread cost (its CPU), and
** how much later the analysis thread went on because of it: its wait for the helper, up to
** the windows' part of the helper's run (the helper finds them last; without them it would
** have returned that much sooner). bench/reports_bench.py counts that wait as the report
** surfaces' cost. */
static int join_anchors(analysis *a, tl_err *e) {
  double t0 = tl_now_s();
  int rc = join_ahead(&a->anchors_ahead, e);
  double waited = tl_now_s() - t0;
  tl_timer tm;
  tl_timer_start(&tm, "reports");
  tl_timer_threads(&tm, "host windows (helper thread)", &a->host_windows_cpu, 1);
  tl_timer_span(&tm, "host windows (waited for)",
                waited < a->host_windows_wall ? waited : a->host_windows_wall, 0);
  return rc;
}

/* The events are written now, and what only their rows needed is freed: the provider ids and
** source rowids, and the per-event classification. */
static int publish_events(analysis *a, tl_err *e) {
  int rc = publish_step(a, PUBLISH_EVENTS, e);
  if (rc == TL_OK) release_event_inputs(a);
  return rc;
}

static int cost(analysis *a, tl_err *e) {
  return tl_packets_build(&a->trace, &a->anchors, &a->packets, e);
}

/* Exact replay units stay whole tokens; with partition_by: scheduler_step repeats never
** cross a scheduler step, else never a profiler step (step markers of the host scopes). */
_Static_assert(TL_CTX_NO_PARTITION == TL_RECOVER_NO_PARTITION, "context partitions are recovery's");
static int recover(analysis *a, tl_err *e) {
  tl_forest_constraints fc = {NULL, NULL, NULL, NULL};
  uint32_t *unit = NULL, *partition = NULL;
  tl_scope_hint_table hint = {0};
  int64_t *key = NULL;
  int rc = tl_replay_anchor_tokens(&a->replay, a->anchors.event, a->anchors.n, &unit, &key, e);
  if (rc == TL_OK && a->ctx && a->rules->macro.partition_by_scheduler_step)
    rc = tl_context_partition_events(a->ctx, a->anchors.event, a->anchors.n, &partition, e);
  else if (rc == TL_OK)
    rc = tl_scope_partition(&a->scopes, a->anchors.event, a->anchors.n, &partition, e);
  if (rc == TL_OK) rc = tl_scope_hints(&a->scopes, &a->anchors, &hint, e);
  fc.anchor_unit = unit, fc.anchor_token_key = key, fc.anchor_partition = partition;
  fc.anchor_hint = hint.off ? &hint.h : NULL;
  if (rc == TL_OK) rc = tl_forest_build(&a->trace, &a->anchors, &a->packets, &fc, &a->forest, e);
  free(unit), free(key), free(partition);
  tl_scope_hints_free(&hint);
  return rc;
}

/* Run ahead beside the events' copy (pub_events), or in turn. */
static int cost_and_recover(analysis *a, tl_err *e) {
  int rc = cost(a, e);
  return rc == TL_OK ? recover(a, e) : rc;
}
static int structure_here(const analysis *a) { return !a->structure_ahead.started; }
static int structure_beside(const analysis *a) { return a->structure_ahead.started; }
static int join_structure(analysis *a, tl_err *e) { return join_ahead(&a->structure_ahead, e); }

/* Repeats whose every iteration one host scope encloses exactly carry its name. */
static int name_repeats(analysis *a, tl_err *e) {
  return tl_scope_names(&a->scopes, &a->trace, &a->anchors, &a->forest, &a->node_names, e);
}

static int publish(analysis *a, tl_err *e) {
  /* The summary's buffer exists before the commit: nothing may fail after it. */
  enum { SUMMARY_MAX = 512 };
  if (!(a->summary = malloc(SUMMARY_MAX))) return tl_nomem(e);
  return publish_step(a, PUBLISH_REST, e);
}

typedef struct stage {
  const char *name;                     /* progress and timing label; NULL: silent */
  int (*run)(analysis *a, tl_err *e);
  int (*wanted)(const analysis *a);     /* NULL: always */
} stage;

static const stage stages[] = {
    {"inventory", take_inventory, NULL},
    {"hashing sources", hash_sources, hashing_here},
    {"reading events and calls, inventory, hashing", read_trace, hashing_beside},
    {"reading events and calls", read_trace, hashing_here},
    {"relating runtime calls to device work", relate, NULL},
    {"reconstructing graph replays", reconstruct_replays, NULL},
    {"reconciling duplicate observations", reconcile, NULL},
    {"linking scheduler context", link_context, with_context},
    {"linking host scopes", link_scopes, with_scopes},
    {"publishing runtime calls and relations", publish_calls, NULL},
    {"classifying evidence roles and symbols", classify, anchors_here},
    {"selecting anchors", select_anchors, anchors_here},
    {"finding host windows", find_host_windows, anchors_here},
    {"classifying, selecting anchors, host windows (helper thread)", join_anchors, anchors_beside},
    {"publishing events", publish_events, NULL},
    {"costing anchors", cost, structure_here},
    {"recovering structure", recover, structure_here},
    {"costing and recovering structure (helper thread)", join_structure, structure_beside},
    {"naming repeats", name_repeats, with_scopes},
    {"publishing", publish, NULL},
};

/* ------------------------------------------------------------------ before the stages */

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

/* Options, rules and context are checked before anything is read: a bad one refuses the
** analysis and changes nothing. */
static int prepare(analysis *a, const char *path, const char *options_json, tl_err *e) {
  char *canonical = NULL;
  int rc = tl_options_parse(options_json, &a->opt, &canonical, e);
  if (rc == TL_OK) rc = tl_rules_load(a->opt.rules_config, &a->rules, e);
  if (rc == TL_OK) {
    /* The canonical options gain the effective rule manifests and their digests. */
    tl_buf b = {0};
    tl_buf_append(&b, canonical, strlen(canonical) - 1); /* drop the closing brace */
    tl_buf_puts(&b, ",\"rules\":");
    tl_rules_options_json(a->rules, &b);
    tl_buf_puts(&b, "}");
    if (b.oom) {
      tl_buf_free(&b);
      rc = tl_nomem(e);
    } else {
      a->options_json = b.p;
    }
  }
  free(canonical);
  /* Step-constrained recovery needs the steps: never a silent downgrade. */
  if (rc == TL_OK && a->rules->macro.partition_by_scheduler_step && !a->opt.ncontext)
    rc = tl_fail(e, "protected replay has missing or conflicting step identity: the rules "
                    "config sets partition_by: scheduler_step but no scheduler context was "
                    "given (analyze option \"context\", CLI --context FILE)");
  if (rc == TL_OK && a->opt.ncontext) {
    const char *const *paths = (const char *const *)a->opt.context;
    rc = tl_context_refuse_output(paths, a->opt.ncontext, sqlite3_db_filename(a->db, "main"), e);
    if (rc == TL_OK) rc = tl_context_load(paths, a->opt.ncontext, &a->ctx, e);
  }
  if (rc == TL_OK) rc = tl_profile_discover(path, a->opt.source_kind, &a->profile, e);
  if (rc == TL_OK) rc = refuse_self(a->db, &a->profile, e);
  return rc;
}

static void write_summary(analysis *a) {
  size_t events = a->trace.ev.n;
  /* Without any runtime call (a CPU-only PyTorch trace, an export without the runtime table)
  ** every relation is a typed non-relation: "0 supported" alone read as a failure. */
  const char *why = a->trace.calls.n == 0 && a->relations.n ? "; the profile has no runtime calls" : "";
  snprintf(a->summary, 512,
           "traceloom: analysed %zu input(s) (%s): %zu events, %zu runtime calls, %zu "
           "runtime-device relations (%zu supported%s), %zu exact graph launch(es), %zu anchors "
           "in %zu tree(s) in %.2f s",
           a->profile.inputs.n, tl_family_source_kind(a->profile.inputs.v[0].family), events,
           a->trace.calls.n, a->relations.n, a->supported_relations, why,
           tl_replay_exact_launches(&a->replay), a->anchors.n, a->ntrees,
           tl_now_s() - a->pr.t0);
}

static void analysis_free(analysis *a) {
  /* stop a worker still running before what it reads is freed */
  join_ahead(&a->anchors_ahead, NULL);
  join_ahead(&a->structure_ahead, NULL);
  join_ahead(&a->loop_ahead, NULL);
  if (a->loop_threaded) pthread_join(a->loop_thread, NULL);
  tl_structure_loop_trees_free(&a->loop);
  tl_structure_summary_free(a->symbol_summary);
  tl_staging_close(a->runtime_staging);
  tl_staging_close(a->events_staging);
  tl_staging_close(a->staging);
  if (a->hashing) tl_hashing_join(a->hashing, TL_ERROR, &a->digests, NULL);
  tl_scope_names_free(a->node_names, a->forest.trees.n);
  tl_forest_free(&a->forest);
  tl_scopes_free(&a->scopes);
  tl_packets_free(&a->packets);
  free(a->semantic);
  free(a->event_call), free(a->anchor_call);
  tl_host_calls_free(a->host_calls);
  tl_host_windows_free(a->host_windows);
  tl_anchors_free(&a->anchors);
  tl_anchor_merges_free(&a->merges);
  tl_reconciliation_free(a->reconciliation);
  tl_event_classes_free(&a->classes);
  tl_classification_free(&a->cls);
  tl_replay_free(&a->replay);
  free(a->digests);
  TL_VEC_FREE(&a->relations);
  tl_inventory_free(&a->inventory);
  tl_trace_free(&a->trace);
  tl_profile_free(&a->profile);
  tl_context_free(a->ctx);
  tl_rules_free(a->rules);
  free(a->options_json);
  free(a->summary);
  tl_options_free(&a->opt);
}

int tl_analyze(sqlite3 *db, const char *path, const char *options_json, char **summary,
               tl_err *e) {
  return tl_analyze_ex(db, path, options_json, NULL, summary, e);
}

int tl_analyze_ex(sqlite3 *db, const char *path, const char *options_json, tl_analyze_extra *extra,
                  char **summary, tl_err *e) {
  *summary = NULL;
  analysis a;
  memset(&a, 0, sizeof a);
  a.db = db;
  a.extra = extra;
  if (extra) extra->loop_tree_md = extra->loop_tree_summary = NULL;
  tl_progress_init(&a.pr, db, 0); /* the clock of the summary starts now */
  int rc = prepare(&a, path, options_json, e);
  if (rc == TL_OK) {
    a.pr.on = a.opt.progress < 0 ? isatty(2) : a.opt.progress;
    for (size_t i = 0; rc == TL_OK && i < sizeof stages / sizeof stages[0]; i++) {
      const stage *s = &stages[i];
      if (s->wanted && !s->wanted(&a)) continue;
      if (s->name) rc = tl_progress_stage(&a.pr, s->name, e);
      if (rc == TL_OK) rc = s->run(&a, e);
    }
    loop_tree_finish(&a, rc);
    rc = tl_txn_end(&a.txn, rc, e);
    /* Whatever failed after an interrupt (the commit included) failed because of it. */
    if (rc != TL_OK && tl_progress_interrupted(&a.pr)) tl_err_set_code(e, TL_ERR_INTERRUPTED);
    /* after the transaction: DETACH is refused inside one */
    tl_staging_close(a.runtime_staging);
    tl_staging_close(a.events_staging);
    tl_staging_close(a.staging);
    a.runtime_staging = a.events_staging = a.staging = NULL;
  }
  tl_progress_end(&a.pr); /* also finalizes the interrupt probe */
  if (rc != TL_OK && extra) {
    free(extra->loop_tree_md), free(extra->loop_tree_summary);
    extra->loop_tree_md = extra->loop_tree_summary = NULL;
  }
  if (rc == TL_OK) {
    write_summary(&a);
    *summary = a.summary;
    a.summary = NULL;
  }
  analysis_free(&a);
  return rc;
}

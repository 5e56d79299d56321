/*
** main.c: the `traceloom` command.
**
**   traceloom PROFILE [--output analysis.db] [--threads N] [--options JSON]
**             [--context FILE.jsonl ...] [--rules-config FILE|NAME]
**             [--perfetto-out timeline.perfetto.json.gz]
**   traceloom export-perfetto ANALYSIS_DB [--output timeline.perfetto.json.gz] [--rank R=DB ...]
**             [--align first_event|provider | --clock-model FILE.jsonl]
**   traceloom compare BASE.db NEW.db [--output compare.db] [--markdown report.md|-]
**             [--options JSON]
**   traceloom --version | --help
**
** The CLI only drives SQLite: it opens a temporary sibling of the output database,
** registers the extension, runs `SELECT traceloom_analyze(PROFILE, OPTIONS)` and, only on
** success, renames the temporary file into place. A failed or interrupted run leaves the
** previous output untouched and removes its temporary file. It never overwrites an input.
**
** Exit codes: 0 success, 1 analysis error, 2 usage error, 130 interrupted.
*/
#include "sqlite-traceloom.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/timing.h"
#include "analyze/analyze.h"
#include "classify/classify.h"
#include "classify/rules.h"
#include "context/context.h" /* tl_context_refuse_output: the final output is no context input */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#define EXIT_ANALYSIS 1
#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130

/* The synopsis: printed alone after a usage error (the reason stays on screen), and first
** in --help. */
static const char synopsis[] =
    "usage: traceloom PROFILE [--output analysis.db] [--threads N] [--options JSON]\n"
    "                 [--context FILE.jsonl ...] [--rules-config FILE|NAME] [--perfetto-out PATH]\n"
    "                 [--extend-classification-rules FILE] [--extend-symbol-rules FILE]\n"
    "                 [--extend-event-reconciliation-rules FILE] [--compat-db-out PATH]\n"
    "                 [--loop-tree-view compact|expanded|both] [--structural-order device]\n"
    "       traceloom export-perfetto ANALYSIS_DB [--output PATH] [--format json|protobuf]\n"
    "                 [--rank R=DB ...] [--align first_event|provider | --clock-model FILE.jsonl]\n"
    "       traceloom compare BASE.db NEW.db [--output compare.db] [--markdown report.md|-]\n"
    "                 [--options JSON]\n"
    "       traceloom --version | --help\n";

static const char help[] =
    "\n"
    "Analyses a profile (an Ascend msprof / torch-npu SQLite DB, a split PROF_* directory,\n"
    "an Nsight Systems SQLite export, a Hygon hipprof DB, a PyTorch profiler (Kineto) trace\n"
    "*.json / *.json.gz, or a directory of them) and writes the analysis database, and its\n"
    "loop tree as Markdown beside it (<output stem>.loop_tree.md).\n"
    "Default output: <profile dir>/traceloom/analysis.db (folders are created as needed).\n"
    "\n"
    "  --output PATH    where to write the analysis database (replaced atomically)\n"
    "  --threads N      worker threads, default 2 (results are identical for any N)\n"
    "  --options JSON   analyze options as a JSON object, e.g. '{\"source_kind\":\"auto\"}'; keys:\n"
    "                   threads, source_kind, rules_config, context, graph_replay, embed_raw,\n"
    "                   text_id_indexes, evidence_role_structure, idle_evidence, step_markers,\n"
    "                   progress (README.md,\n"
    "                   \"Use it from the sqlite3 shell\", says what each does)\n"
    "  --context FILE   scheduler context JSONL (traceloom.scheduler.v1), repeatable\n"
    "  --rules-config FILE|NAME  analysis rules (e.g. scheduler-step: steps partition the\n"
    "                   structure; needs --context)\n"
    "  --perfetto-out PATH  after the analysis, write its Perfetto timeline (.gz: gzip)\n"
    "  --extend-classification-rules FILE, --extend-symbol-rules FILE,\n"
    "  --extend-event-reconciliation-rules FILE  add the rules of FILE (a YAML mapping with\n"
    "                   metadata and rules, as one stage of a rules config) to the built-in\n"
    "                   policy; the rules config they make is kept as <output stem>.rules.yaml\n"
    "  --compat-db-out PATH  also write a copy of the analysis database to PATH\n"
    "  --loop-tree-view V  the loop tree Markdown: compact (default: grammar, repeats, outline),\n"
    "                   expanded (every node) or both\n"
    "  --structural-order device  anchors in device order (the only order; the default)\n"
    "  --version        print the version\n"
    "  --help           print this help\n"
    "\n"
    "export-perfetto writes the Perfetto timeline of an analysis database, compare lines up\n"
    "two analyses node by node; their options: `traceloom export-perfetto --help`,\n"
    "`traceloom compare --help`. With the Python package (pip install ./python), `traceloom\n"
    "cluster RUN_DIR` analyses every rank of a run into one cluster database\n"
    "(`traceloom cluster --help`, docs/CLUSTER.md).\n"
    "\n"
    "Exit codes: 0 success, 1 analysis error, 2 usage error, 130 interrupted.\n";

static const char export_syn[] =
    "usage: traceloom export-perfetto ANALYSIS_DB [--output PATH] [--format json|protobuf]\n"
    "                 [--rank R=DB ...] [--align first_event|provider | --clock-model FILE.jsonl]\n";
static const char export_usage[] =
    "\n"
    "Writes the Perfetto timeline of an analysis database (docs/PERFETTO.md): its streams, the\n"
    "loop tree as nested slices, host calls with flows to their device work. Open it in\n"
    "https://ui.perfetto.dev.\n"
    "\n"
    "  --output PATH    the timeline, replaced atomically; default <analysis stem>.perfetto.json.gz\n"
    "                   beside the database. Perfetto protobuf for .perfetto-trace or .pftrace,\n"
    "                   Chrome JSON otherwise; .gz: gzip\n"
    "  --format F       json or protobuf, whatever the name of the output says\n"
    "  --rank R=DB      repeatable, rank 0 required: one track per rank's analysis\n"
    "  --align MODE     how the ranks' clocks are lined up: first_event (default) or provider\n"
    "  --clock-model FILE.jsonl  align the ranks by a traceloom.distributed-clock-model/v1\n"
    "                   receipt instead\n"
    "\n"
    "Exit codes: 0 success, 1 export error, 2 usage error.\n";

/* Levenshtein distance of a and b, NUL-terminated, b at most 63 bytes; 99 when longer. */
static int edit_distance(const char *a, const char *b) {
  size_t n = strlen(b);
  if (n > 63 || strlen(a) > 63) return 99;
  int row[64];
  for (size_t j = 0; j <= n; j++) row[j] = (int)j;
  for (size_t i = 1; a[i - 1]; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= n; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[n];
}

static const char *const analyze_flags[] = {
    "--output", "--threads", "--options", "--context", "--rules-config", "--perfetto-out",
    "--extend-classification-rules", "--extend-symbol-rules",
    "--extend-event-reconciliation-rules", "--compat-db-out", "--loop-tree-view",
    "--structural-order", "--version", "--help", NULL};
static const char *const export_flags[] = {"--output", "--format", "--rank", "--align",
                                           "--clock-model", "--help", NULL};
static const char *const compare_flags[] = {"--output", "--markdown", "--options", "--help", NULL};

/* A command of the CLI as its usage errors name it: its synopsis, where its whole help is,
** and its flags (for the flag meant by an unknown one). */
typedef struct cli_command {
  const char *synopsis;
  const char *help_cmd;
  const char *const *flags;
} cli_command;

static const cli_command analyze_cmd = {synopsis, "traceloom --help", analyze_flags};
static const cli_command export_cmd = {export_syn, "traceloom export-perfetto --help",
                                       export_flags};

/* A usage error: the reason (for an unknown flag, the known one within two typos of it),
** then the synopsis and where the whole help is, not the whole help: the reason stays on
** screen. Returns EXIT_USAGE. */
static int usage_error(const cli_command *cmd, const char *unknown, const char *fmt, ...) {
  fputs("traceloom: ", stderr);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  const char *meant = NULL;
  int best = 3;
  for (size_t k = 0; unknown && cmd->flags[k]; k++) {
    int d = edit_distance(unknown, cmd->flags[k]);
    if (d < best) best = d, meant = cmd->flags[k];
  }
  if (meant) fprintf(stderr, " (did you mean %s?)", meant);
  fprintf(stderr, "\n%sRun `%s` for every option.\n", cmd->synopsis, cmd->help_cmd);
  return EXIT_USAGE;
}

/* --output naming an existing folder, or ending in '/': refused before any work (the analysis once ran to the
** end and then failed to rename onto the folder), with the file name to pass instead. */
static int output_is_folder(const char *flag, const char *out, const char *name) {
  struct stat st;
  if (!out || !*out) return 0;
  size_t n = strlen(out);
  if (out[n - 1] != '/' && (stat(out, &st) != 0 || !S_ISDIR(st.st_mode))) return 0;
  while (n > 1 && out[n - 1] == '/') n--;
  fprintf(stderr, "traceloom: %s %s is a folder: name the file to write, e.g. %.*s/%s\n", flag,
          out, (int)n, out, name);
  return 1;
}

/* Why the temporary sibling `tmp` of the output `out` could not be made: SQLite says only
** "unable to open database file", so the reason comes from creating it directly. */
static void cannot_create(const char *what, const char *out, const char *tmp, const char *sqlite_msg) {
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  int err = errno;
  if (fd >= 0) {
    close(fd), unlink(tmp);
    fprintf(stderr, "traceloom: cannot write the %s %s: %s\n", what, out, sqlite_msg ? sqlite_msg : "?");
    return;
  }
  const char *slash = strrchr(out, '/');
  int dn = !slash ? 1 : slash == out ? 1 : (int)(slash - out);
  fprintf(stderr, "traceloom: cannot write the %s %s: cannot create a file in %.*s (%s)\n", what,
          out, dn, slash ? out : ".", strerror(err));
}

/* The connection being analysed, for the SIGINT handler (sqlite3_interrupt is safe to
** call asynchronously). This is the only process-wide state of the CLI. */
static sqlite3 *volatile interrupt_db;
static volatile sig_atomic_t interrupted;

static void on_signal(int sig) {
  (void)sig;
  interrupted = 1;
  if (interrupt_db) sqlite3_interrupt(interrupt_db);
}

/* Ctrl-C and SIGTERM interrupt the statement running on db (on_signal). */
static void catch_interrupts(sqlite3 *db) {
  interrupt_db = db;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static char *default_output(const char *profile) {
  struct stat st;
  if (stat(profile, &st) == 0 && S_ISDIR(st.st_mode))
    return tl_mprintf("%s/traceloom/analysis.db", profile);
  const char *slash = strrchr(profile, '/');
  if (!slash) return tl_strdup("traceloom/analysis.db");
  return tl_mprintf("%.*s/traceloom/analysis.db", (int)(slash - profile), profile);
}

/* mkdir -p of the folder that will hold `file`. *made (malloc'd) is the topmost folder this
** call created, NULL when none was missing, so that a failed run removes exactly what it made
** (remove_made_dirs). On error returns -1 with errno set and *failed (malloc'd) naming the
** folder that could not be created. */
static int make_parent_dirs(const char *file, char **made, char **failed) {
  *made = *failed = NULL;
  char *dir = tl_strdup(file);
  if (!dir) return errno = ENOMEM, -1;
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir) return free(dir), 0;
  *slash = 0;
  int rc = 0;
  /* Every prefix that ends before a '/', then the whole folder, outermost first. */
  for (char *p = dir + 1; rc == 0; p++) {
    if (*p != '/' && *p != 0) continue;
    char c = *p;
    *p = 0;
    struct stat st;
    if (stat(dir, &st) == 0) {
      if (!S_ISDIR(st.st_mode)) errno = ENOTDIR, rc = -1;
    } else if (errno != ENOENT || (mkdir(dir, 0777) != 0 && errno != EEXIST)) {
      rc = -1;
    } else if (!*made && !(*made = tl_strdup(dir))) {
      errno = ENOMEM, rc = -1;
    }
    if (rc != 0) {
      int saved = errno;
      *failed = tl_strdup(dir);
      errno = saved;
    }
    *p = c;
    if (!c) break;
  }
  free(dir);
  return rc;
}

/* Removes the folders make_parent_dirs created for `file`, deepest first, each only while
** empty (rmdir refuses otherwise): a failed run leaves no folder behind it made. */
static void remove_made_dirs(const char *file, const char *made) {
  if (!made) return;
  char *dir = tl_strdup(file);
  size_t top = strlen(made);
  for (char *slash; dir && (slash = strrchr(dir, '/')) != NULL && (size_t)(slash - dir) >= top;) {
    *slash = 0;
    if (rmdir(dir) != 0) break;
  }
  free(dir);
}

/* The missing folders of an output other than the analysis (the timeline, the copy, the
** comparison, its report), made as for --output. *made: the topmost folder made, for
** remove_made_dirs when what goes there fails. 0, or -1 after saying which folder could not
** be made. */
static int make_output_dirs(const char *what, const char *path, char **made) {
  char *failed = NULL;
  int rc = strcmp(path, "-") == 0 ? (*made = NULL, 0) : make_parent_dirs(path, made, &failed);
  if (rc != 0) {
    fprintf(stderr, "traceloom: cannot create the folder %s for the %s %s: %s\n",
            failed ? failed : "?", what, path, strerror(errno));
    remove_made_dirs(path, *made);
    free(*made), *made = NULL;
  }
  free(failed);
  return rc;
}

/* 1 when the output path is one of the files the analysis read (same inode). */
static int output_is_input(sqlite3 *db, const char *output) {
  struct stat so;
  if (stat(output, &so) != 0) return 0;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, "SELECT source_path FROM traceloom_raw_source_database", -1, &st,
                         NULL) != SQLITE_OK)
    return 0;
  int found = 0;
  while (!found && sqlite3_step(st) == SQLITE_ROW) {
    struct stat si;
    const char *p = (const char *)sqlite3_column_text(st, 0);
    if (p && stat(p, &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) found = 1;
  }
  sqlite3_finalize(st);
  return found;
}

static void remove_temp(const char *tmp) {
  unlink(tmp);
  char *j = tl_mprintf("%s-journal", tmp);
  if (j) unlink(j);
  free(j);
}

/* Temporary files of earlier runs for this output whose process is gone (killed mid-
** analysis: `<output>.tmp-<pid>`, its journal and its staging file `.stage-XXXXXX`, from
** ext/analyze/staging.c). A live pid's file is another run's and stays; so does anything not
** named exactly like ours. */
static void remove_stale_temps(const char *out) {
  const char *slash = strrchr(out, '/');
  char *dir = slash ? tl_mprintf("%.*s", (int)(slash - out), out) : tl_strdup(".");
  const char *base = slash ? slash + 1 : out;
  size_t bn = strlen(base);
  DIR *d = dir ? opendir(*dir ? dir : "/") : NULL;
  struct dirent *ent;
  while (d && (ent = readdir(d)) != NULL) {
    const char *n = ent->d_name;
    if (strncmp(n, base, bn) != 0 || strncmp(n + bn, ".tmp-", 5) != 0) continue;
    const char *p = n + bn + 5;
    char *end;
    long pid = strtol(p, &end, 10);
    int stage = strncmp(end, ".stage-", 7) == 0 && strlen(end + 7) == 6;
    if (end == p || pid <= 0 || (*end && strcmp(end, "-journal") != 0 && !stage)) continue;
    if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    char *path = tl_mprintf("%s/%s", dir, n);
    if (path) unlink(path);
    free(path);
  }
  if (d) closedir(d);
  free(dir);
}

/* `path` without the extension of its last component, plus `suffix`: the names of what the
** CLI writes beside an analysis database (analysis.db -> analysis.loop_tree.md,
** analysis.perfetto.json.gz), so that two analyses in one folder keep their own files. */
static char *beside(const char *path, const char *suffix) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  const char *dot = strrchr(base, '.');
  int stem = dot && dot != base ? (int)(dot - path) : (int)strlen(path);
  return tl_mprintf("%.*s%s", stem, path, suffix);
}

/* traceloom_loop_tree's options for --loop-tree-view and --threads (NULL: its defaults):
** --threads 1 reads on one connection only; the default (2) lets a large tree be read in
** two halves. The bytes are the same. */
static char *loop_tree_options(const char *view, long threads) {
  return view && threads == 1 ? tl_mprintf("{\"view\":\"%s\",\"threads\":1}", view)
         : view               ? tl_mprintf("{\"view\":\"%s\"}", view)
         : threads == 1       ? tl_strdup("{\"threads\":1}")
                              : NULL;
}

/* The loop tree Markdown of the analysis at `out` into <stem>.loop_tree.md: md when the
** analysis rendered it from its trees in memory (tl_analyze_ex), else read back on its own
** read-only connection (an analysis that could not render it), while a thread writes the
** short version on another: the two read the same committed file, and neither waits for the
** other. */
typedef struct loop_tree_job {
  const char *out, *view;
  long threads;  /* --threads (0: not given) */
  const char *md; /* rendered by the analysis; NULL: read it back */
  char *md_path; /* <stem>.loop_tree.md once written; NULL when it could not be */
} loop_tree_job;

static void render_loop_tree(loop_tree_job *job) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  char *opts = job->md ? NULL : loop_tree_options(job->view, job->threads);
  const char *md = job->md;
  int len = md ? (int)strlen(md) : 0;
  if (!md && sqlite3_open_v2(job->out, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK &&
      sqlite3_traceloom_init(db, NULL, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT traceloom_loop_tree(?1)", -1, &st, NULL) == SQLITE_OK &&
      (opts ? sqlite3_bind_text(st, 1, opts, -1, SQLITE_STATIC) : sqlite3_bind_null(st, 1)) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    md = (const char *)sqlite3_column_text(st, 0);
    len = sqlite3_column_bytes(st, 0);
  }
  if (md) {
    char *md_path = beside(job->out, ".loop_tree.md");
    FILE *f = md_path ? fopen(md_path, "w") : NULL;
    if (f) {
      fwrite(md, 1, (size_t)len, f);
      if (fclose(f) == 0) job->md_path = md_path, md_path = NULL;
    }
    free(md_path);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  free(opts);
}

/* The short version of the loop tree, leading with what matters: per tree, the outermost
** repeats by the time they cover (a decode loop before the small loops around it), each with
** the largest repeats directly inside it (the layers); its lines appended to `lines`. The
** figures are traceloom_v_tree_node's (total_us, avg_total_us ROUND()ed, the share of the
** root's total), read from traceloom_v_node_stats by node_n for the Repeat nodes only: the
** node rows are scanned for kind and loop depth (node_kind 3 is exactly the shapes of kind
** 'repeat': one publisher writes both), not derived whole for every node of a wide tree.
** The root of a tree is its first node (traceloom_tree_core.first_node_n, preorder). */
static void loop_tree_summary(const char *out, tl_buf *lines_out) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  if (sqlite3_open_v2(out, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
      sqlite3_traceloom_init(db, NULL, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(
          db,
          "WITH r AS (SELECT n.db_idx, n.device_id, n.node_n, n.local_node_id, s.label, "
          "                  n.loop_depth, COALESCE(n.path, (SELECT p.path FROM traceloom_node_core p "
          "                    WHERE p.node_n = n.parent_n) || '/' || n.local_node_id) AS path, "
          "                  n.occurrence_count, (n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0 AS total_us, "
          "                  ROUND((n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0 / n.denom, 3) AS avg_total_us "
          "           FROM traceloom_node_core c "
          "           JOIN traceloom_node_shape s ON s.shape_id = c.shape_id "
          "           CROSS JOIN traceloom_v_node_stats n ON n.node_n = c.node_n "
          "           WHERE c.node_kind = 3 AND c.loop_depth <= 2 AND s.kind = 'repeat'), "
          "root AS (SELECT n.db_idx, n.device_id, (n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0 AS total_us "
          "         FROM traceloom_tree_core t JOIN traceloom_v_node_stats n ON n.node_n = t.first_node_n "
          "         WHERE n.parent_n IS NULL), "
          "top AS (SELECT r.*, row_number() OVER (PARTITION BY db_idx, device_id "
          "                                       ORDER BY total_us DESC, node_n) AS rk "
          "        FROM r WHERE loop_depth = 1), "
          "lines AS (SELECT t.db_idx, t.device_id, t.rk, 0 AS sub, t.node_n, t.local_node_id, "
          "                 t.label, t.occurrence_count, t.total_us, t.avg_total_us "
          "          FROM top t WHERE t.rk <= 3 "
          "          UNION ALL "
          "          SELECT t.db_idx, t.device_id, t.rk, row_number() OVER (PARTITION BY t.node_n "
          "                 ORDER BY i.total_us DESC, i.node_n), i.node_n, i.local_node_id, i.label, "
          "                 i.occurrence_count, i.total_us, i.avg_total_us "
          "          FROM top t JOIN r i ON i.db_idx = t.db_idx AND i.device_id = t.device_id "
          "           AND i.loop_depth = 2 AND substr(i.path, 1, length(t.path) + 1) = t.path || '/' "
          "          WHERE t.rk <= 3 "
          "          UNION ALL "  /* a tree without a repeat: one line that says so */
          "          SELECT t.db_idx, t.device_id, 0, -1, NULL, NULL, NULL, t.anchor_count, NULL, NULL "
          "          FROM traceloom_tree_core t WHERE NOT EXISTS (SELECT 1 FROM top p "
          "            WHERE p.db_idx = t.db_idx AND p.device_id = t.device_id)) "
          "SELECT l.device_id, l.sub, l.local_node_id, l.label, l.occurrence_count, "
          "       printf('%.3f', l.total_us), printf('%.3f', l.avg_total_us), "
          "       printf('%.1f', CASE WHEN ro.total_us > 0 THEN 100.0 * l.total_us / ro.total_us END), "
          "       l.db_idx, (SELECT min(db_idx) < max(db_idx) FROM traceloom_tree_core) "
          "FROM lines l LEFT JOIN root ro ON ro.db_idx = l.db_idx AND ro.device_id = l.device_id "
          "WHERE l.sub <= 2 ORDER BY l.db_idx, l.device_id, l.rk, l.sub",
          -1, &st, NULL) != SQLITE_OK) {
    sqlite3_close(db);
    return;
  }
  int lines = 0, more = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    if (lines >= 24) {
      more++;
      continue;
    }
    lines++;
    /* An outermost repeat with its share of the device's time; the repeats inside it
    ** indented under it. */
    const char *share = (const char *)sqlite3_column_text(st, 7);
    int several = sqlite3_column_int(st, 9);
    if (sqlite3_column_int(st, 1) < 0)
      tl_buf_printf(lines_out, "  %s%s%sdevice %s: no repeat among its %s anchors\n",
                    several ? "db " : "", several ? (const char *)sqlite3_column_text(st, 8) : "",
                    several ? " " : "", sqlite3_column_text(st, 0), sqlite3_column_text(st, 4));
    else if (sqlite3_column_int(st, 1) > 0)
      tl_buf_printf(lines_out, "    %s %s: %s occurrence(s), total %s us, %s us per iteration\n",
                    sqlite3_column_text(st, 2), sqlite3_column_text(st, 3),
                    sqlite3_column_text(st, 4), sqlite3_column_text(st, 5),
                    sqlite3_column_text(st, 6));
    else
      tl_buf_printf(lines_out,
                    "  %s%s%sdevice %s %s %s: %s occurrence(s), total %s us%s%s%s, %s us per iteration\n",
                    /* several inputs: "db N device M", as tl_loop_tree_summary */
                    several ? "db " : "", several ? (const char *)sqlite3_column_text(st, 8) : "",
                    several ? " " : "",
                    sqlite3_column_text(st, 0), sqlite3_column_text(st, 2),
                    sqlite3_column_text(st, 3), sqlite3_column_text(st, 4),
                    sqlite3_column_text(st, 5), share ? " (" : "", share ? share : "",
                    share ? "% of the device's time)" : "", sqlite3_column_text(st, 6));
  }
  if (more) tl_buf_printf(lines_out, "  ... %d more repeat(s) in the loop tree\n", more);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

/* The short version and the release of the replaced output, on a thread beside the loop
** tree. */
typedef struct summary_job {
  const char *out;
  int old_fd;  /* the output this analysis replaced, -1: none */
  tl_buf lines;
  int given;   /* lines came with the analysis (tl_analyze_extra): not read back */
  double cpu;  /* the thread's CPU seconds (TRACELOOM_TIMING) */
} summary_job;

static void *summary_main(void *arg) {
  summary_job *job = arg;
  double cpu0 = tl_thread_cpu_s();
  if (!job->given) loop_tree_summary(job->out, &job->lines);
  /* the file system frees the replaced file's blocks on this last close: a tenth of a second
  ** of waiting for a 200 MB analysis, here beside the loop tree rather than in the rename */
  if (job->old_fd >= 0) close(job->old_fd);
  job->cpu = tl_thread_cpu_s() - cpu0;
  return NULL;
}

/* <stem>.loop_tree.md beside the analysis database, and its top-level Repeat lines on stdout.
** The short version is read on a thread (none with --threads 1), which then closes old_fd,
** while this thread renders the Markdown: the large allocations (the tree's nodes, the
** Markdown) stay in this thread's heap, where the analysis freed far more, so the tail does
** not raise the peak of memory. What is printed, and in which order, does not depend on
** which finishes first. */
static void write_loop_tree(const char *out, const char *view, long threads, const char *md,
                            const char *summary, int old_fd, tl_timer *tail) {
  summary_job sj = {out, old_fd, {0}, 0, 0};
  if (md && summary) tl_buf_puts(&sj.lines, summary), sj.given = 1;
  pthread_t th;
  int threaded = threads != 1 && pthread_create(&th, NULL, summary_main, &sj) == 0;
  loop_tree_job job = {out, view, threads, md, NULL};
  render_loop_tree(&job);
  tl_timer_mark(tail, "loop tree");
  if (!threaded) summary_main(&sj);
  else pthread_join(th, NULL);
  tl_timer_threads(tail, "loop tree summary and release (thread)", &sj.cpu, 1);
  tl_timer_mark(tail, "loop tree summary (waited for)");
  if (job.md_path) printf("loop tree: %s\n", job.md_path);
  if (sj.lines.p && !sj.lines.oom) fputs(sj.lines.p, stdout);
  tl_buf_free(&sj.lines);
  free(job.md_path);
}

/* What the profile could not give, read back from traceloom_profile_inventory: discovery's
** warnings (the split-layout fallback) on stderr, and on stdout each capability that was not
** usable with its reason (a missing STRING_IDS or COMPUTE_TASK_INFO, an ambiguous capture
** companion): the analysis succeeds without them, with fewer graph launches or anchors, and
** without this a newcomer saw nothing that said so. Distinct (capability, reason) pairs, the
** first 8, in inventory order. */
static void print_inventory_notes(const char *out) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  if (sqlite3_open_v2(out, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT detail FROM traceloom_profile_inventory WHERE item = 'warning' "
                             "AND detail IS NOT NULL ORDER BY rowid", -1, &st, NULL) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      const char *w = (const char *)sqlite3_column_text(st, 0);
      fprintf(stderr, "traceloom: %s%s\n", strncmp(w, "warning: ", 9) == 0 ? "" : "warning: ", w);
    }
  }
  sqlite3_finalize(st);
  st = NULL;
  if (db && sqlite3_prepare_v2(
                db,
                "SELECT capability, COALESCE(detail, 'no reason recorded'), count(DISTINCT db_idx), "
                "       (SELECT count(*) FROM traceloom_profile_inventory WHERE item = 'input') "
                "FROM traceloom_profile_inventory WHERE item = 'capability' AND usable = 0 "
                "GROUP BY capability, detail ORDER BY min(rowid)",
                -1, &st, NULL) == SQLITE_OK) {
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      if (n++ == 0)
        printf("not usable in this profile (SELECT db_idx, capability, detail FROM "
               "traceloom_profile_inventory WHERE usable = 0):\n");
      if (n > 8) continue;
      int in = sqlite3_column_int(st, 2), inputs = sqlite3_column_int(st, 3);
      if (inputs > 1)
        printf("  %s (%d of %d inputs): %s\n", sqlite3_column_text(st, 0), in, inputs,
               sqlite3_column_text(st, 1));
      else
        printf("  %s: %s\n", sqlite3_column_text(st, 0), sqlite3_column_text(st, 1));
    }
    if (n > 8) printf("  ... %d more\n", n - 8);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
}

/* A descriptor of the file at path when it is a regular file (the output about to be
** replaced), -1 otherwise: held across the rename so that its blocks are freed by a later
** close rather than by the rename itself. */
static int hold_replaced(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) close(fd), fd = -1;
  return fd;
}

/* SELECT traceloom_export_perfetto(output, options) on the analysis opened read-only. */
static int export_perfetto_into(const char *analysis, const char *output, const char *options) {
  sqlite3 *db = NULL;
  char *err = NULL;
  int status = EXIT_ANALYSIS;
  /* One thread uses the connection: no per-call mutex (the export reads millions of rows). */
  if (sqlite3_open_v2(analysis, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
      SQLITE_OK) {
    fprintf(stderr, "traceloom: cannot open the analysis database %s: %s\n", analysis,
            db ? sqlite3_errmsg(db) : "?");
    sqlite3_close(db);
    return status;
  }
  /* Opening is lazy: the first read says whether the file is a database at all. */
  if (sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) != SQLITE_OK) {
    fprintf(stderr,
            "traceloom: %s is not an analysis database (%s): expected the SQLite file that "
            "`traceloom PROFILE --output FILE` writes\n",
            analysis, sqlite3_errmsg(db));
    sqlite3_close(db);
    return status;
  }
  if (sqlite3_traceloom_init(db, &err, NULL) != SQLITE_OK) {
    fprintf(stderr, "traceloom: cannot register the extension: %s\n", err ? err : "?");
    sqlite3_free(err);
    sqlite3_close(db);
    return status;
  }
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT traceloom_export_perfetto(?1, ?2)", -1, &st, NULL) ==
      SQLITE_OK) {
    sqlite3_bind_text(st, 1, output, -1, SQLITE_STATIC);
    if (options) sqlite3_bind_text(st, 2, options, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
      printf("perfetto timeline: %s (%lld trace events)\n", output,
             (long long)sqlite3_column_int64(st, 0));
      status = 0;
    }
  }
  if (status != 0) fprintf(stderr, "traceloom: %s\n", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return status;
}

/* export_perfetto_into, with the missing folders of `output` made first (and removed again
** when the export fails). */
static int export_perfetto(const char *analysis, const char *output, const char *options) {
  char *made = NULL;
  if (make_output_dirs("timeline", output, &made) != 0) return EXIT_ANALYSIS;
  int status = export_perfetto_into(analysis, output, options);
  if (status != 0) remove_made_dirs(output, made);
  free(made);
  return status;
}

/* traceloom export-perfetto ANALYSIS_DB [--output PATH] [--rank R=DB ...] [--align MODE]
**                           [--clock-model FILE.jsonl] */
static int export_perfetto_main(int argc, char **argv) {
  const char *analysis = NULL, *output = NULL, *align = NULL, *clock = NULL, *format = NULL;
  tl_buf ranks = {0};
  int status = EXIT_USAGE;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(export_syn, stdout), fputs(export_usage, stdout);
      tl_buf_free(&ranks);
      return 0;
    } else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0) {
      if (++i >= argc) {
        usage_error(&export_cmd, NULL, "--output needs a path");
        goto done;
      }
      output = argv[i];
    } else if (strcmp(a, "--align") == 0) {
      if (++i >= argc) {
        fprintf(stderr, "traceloom: --align needs first_event or provider\n");
        goto done;
      }
      align = argv[i];
    } else if (strcmp(a, "--format") == 0) {
      if (++i >= argc) {
        fprintf(stderr, "traceloom: --format needs json or protobuf\n");
        goto done;
      }
      format = argv[i];
    } else if (strcmp(a, "--clock-model") == 0) {
      if (++i >= argc) {
        fprintf(stderr, "traceloom: --clock-model needs a JSONL file\n");
        goto done;
      }
      clock = argv[i];
    } else if (strcmp(a, "--rank") == 0) {
      char *end;
      const char *spec = ++i < argc ? argv[i] : NULL;
      long rank = spec ? strtol(spec, &end, 10) : -1;
      if (!spec || rank < 0 || end == spec || *end != '=' || !end[1]) {
        fprintf(stderr, "traceloom: --rank needs R=DB (a non-negative rank and its analysis "
                        "database)\n");
        goto done;
      }
      tl_buf_printf(&ranks, "%s{\"rank\":%ld,\"db\":", ranks.n ? "," : "", rank);
      tl_buf_json_string(&ranks, end + 1, strlen(end + 1));
      tl_buf_puts(&ranks, "}");
    } else if (a[0] == '-' && a[1]) {
      usage_error(&export_cmd, a, "unknown export-perfetto option %s", a);
      goto done;
    } else if (!analysis) {
      analysis = a;
    } else {
      usage_error(&export_cmd, NULL, "one analysis database expected, got also %s", a);
      goto done;
    }
  }
  if (!analysis) {
    usage_error(&export_cmd, NULL, "export-perfetto needs the analysis database");
    goto done;
  }
  if (output_is_folder("--output", output, "timeline.perfetto.json.gz")) goto done;
  tl_buf opt = {0};
  if (ranks.n || align || clock || format) {
    tl_buf_puts(&opt, "{");
    if (ranks.n) tl_buf_printf(&opt, "\"ranks\":[%s]", ranks.p);
    if (align) {
      tl_buf_puts(&opt, ranks.n ? ",\"align\":" : "\"align\":");
      tl_buf_json_string(&opt, align, strlen(align));
    }
    if (clock) {
      tl_buf_puts(&opt, ranks.n || align ? ",\"clock_model\":" : "\"clock_model\":");
      tl_buf_json_string(&opt, clock, strlen(clock));
    }
    if (format) {
      tl_buf_puts(&opt, ranks.n || align || clock ? ",\"format\":" : "\"format\":");
      tl_buf_json_string(&opt, format, strlen(format));
    }
    tl_buf_puts(&opt, "}");
  }
  char *out = NULL;
  if (!output) {
    out = beside(analysis, ".perfetto.json.gz");
  }
  if (ranks.oom || opt.oom || (!output && !out)) {
    fprintf(stderr, "traceloom: out of memory\n");
    status = EXIT_ANALYSIS;
  } else {
    status = export_perfetto(analysis, output ? output : out, opt.n ? opt.p : NULL);
  }
  free(out);
  tl_buf_free(&opt);
done:
  tl_buf_free(&ranks);
  return status;
}

/* 1 (after printing why) when the analyze options are a usage error: not valid options
** (tl_options_parse: unknown keys, wrong types), or a rules config that partitions by
** scheduler step without any --context. A rules file that cannot be loaded is left to the
** analysis, which names the file and line (exit 1). */
static int options_usage_error(const char *options_json, size_t ncontext) {
  tl_options o;
  char *canonical = NULL;
  tl_err e = {0};
  int bad = 0;
  if (tl_options_parse(options_json, &o, &canonical, &e) != TL_OK) {
    fprintf(stderr, "traceloom: %s\n", e.msg ? e.msg : "invalid analyze options");
    tl_err_clear(&e);
    return 1;
  }
  tl_rules *rules = NULL;
  if (o.rules_config && tl_rules_load(o.rules_config, &rules, &e) == TL_OK &&
      rules->macro.partition_by_scheduler_step && !ncontext && !o.ncontext) {
    fprintf(stderr,
            "traceloom: the rules config %s partitions the structure by scheduler step "
            "(partition_by: scheduler_step) and needs the scheduler context: add --context "
            "FILE.jsonl (docs/CONTEXT.md), or leave out --rules-config\n",
            o.rules_config);
    bad = 1;
  }
  tl_rules_free(rules);
  tl_err_clear(&e);
  free(canonical);
  tl_options_free(&o);
  return bad;
}

/* ------------------------------------------------------------------ compare */

static const char compare_synopsis[] =
    "usage: traceloom compare BASE.db NEW.db [--output compare.db] [--markdown report.md|-]\n"
    "                         [--options JSON]\n";
static const char compare_help[] =
    "\n"
    "Compares two analysis databases by structure (docs/COMPARE.md): aligns their loop trees,\n"
    "splits the end-to-end delta into per-iteration changes, iteration counts, added and\n"
    "removed work, and ranks the nodes that explain it. Both inputs are opened read-only.\n"
    "\n"
    "  --output PATH    the comparison database (traceloom_compare_* relations), replaced\n"
    "                   atomically; default <NEW without .db>.compare.db\n"
    "  --markdown PATH  also write the Markdown report there ('-': standard output)\n"
    "  --options JSON   traceloom_compare options, e.g. '{\"top\": 30, \"noise_z\": 3}'\n"
    "\n"
    "Exit codes: 0 success, 1 comparison error, 2 usage error, 130 interrupted.\n";
static const cli_command compare_cmd = {compare_synopsis, "traceloom compare --help",
                                        compare_flags};

/* 1 when the two paths name the same existing file. */
static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Writes text to path through a temporary sibling renamed into place; '-' is stdout. */
static int write_text_atomic(const char *path, const char *text) {
  if (strcmp(path, "-") == 0) return fputs(text, stdout) < 0 ? -1 : 0;
  char *tmp = tl_mprintf("%s.tmp-%ld", path, (long)getpid());
  FILE *f = tmp ? fopen(tmp, "w") : NULL;
  int rc = f && fputs(text, f) >= 0 ? 0 : -1;
  if (f && fclose(f) != 0) rc = -1;
  if (rc == 0 && rename(tmp, path) != 0) rc = -1;
  if (rc != 0 && tmp) unlink(tmp);
  free(tmp);
  return rc;
}

/* The options for traceloom_compare: {"new": NEW} and the user's keys. */
static char *compare_options(const char *fresh, const char *user) {
  tl_buf b = {0};
  tl_buf_puts(&b, "{\"new\":");
  tl_buf_json_string(&b, fresh, strlen(fresh));
  if (user) {
    const char *p = user;
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (*p != '{') {
      tl_buf_free(&b);
      return NULL;
    }
    p++;
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    tl_buf_puts(&b, *p == '}' ? "" : ",");
    tl_buf_puts(&b, p);
  } else {
    tl_buf_puts(&b, "}");
  }
  if (b.oom) tl_buf_free(&b);
  return b.p;
}

/* traceloom compare BASE.db NEW.db [--output PATH] [--markdown PATH|-] [--options JSON] */
static int compare_main(int argc, char **argv) {
  const char *base = NULL, *fresh = NULL, *output = NULL, *markdown = NULL, *options = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char **slot = strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0 ? &output
                        : strcmp(a, "--markdown") == 0                     ? &markdown
                        : strcmp(a, "--options") == 0                      ? &options
                                                                           : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(compare_synopsis, stdout), fputs(compare_help, stdout);
      return 0;
    } else if (slot) {
      if (++i >= argc || !*argv[i])
        return usage_error(&compare_cmd, NULL, "%s needs a value", a);
      *slot = argv[i];
    } else if (a[0] == '-' && a[1]) {
      return usage_error(&compare_cmd, a, "unknown compare option %s", a);
    } else if (!base) {
      base = a;
    } else if (!fresh) {
      fresh = a;
    } else {
      return usage_error(&compare_cmd, NULL, "compare takes two analysis databases, got also %s",
                         a);
    }
  }
  if (!base || !fresh)
    return usage_error(&compare_cmd, NULL, "compare needs BASE.db and NEW.db");
  if (output_is_folder("--output", output, "compare.db")) return EXIT_USAGE;
  for (const char *in = base; in; in = in == base ? fresh : NULL) {
    struct stat st;
    if (stat(in, &st) != 0 || !S_ISREG(st.st_mode))
      return fprintf(stderr, "traceloom: %s is not an analysis database file\n", in), EXIT_USAGE;
  }
  char *out = NULL;
  if (output) {
    out = tl_strdup(output);
  } else {
    size_t n = strlen(fresh);
    int db = n > 3 && strcmp(fresh + n - 3, ".db") == 0;
    out = tl_mprintf("%.*s.compare.db", (int)(db ? n - 3 : n), fresh);
  }
  /* Both inputs by absolute path: the comparison records where they were. */
  char *base_abs = realpath(base, NULL), *fresh_abs = realpath(fresh, NULL);
  if (base_abs) base = base_abs;
  if (fresh_abs) fresh = fresh_abs;
  char *opt = compare_options(fresh, options);
  char *tmp = out ? tl_mprintf("%s.tmp-%ld", out, (long)getpid()) : NULL;
  int status = EXIT_ANALYSIS;
  sqlite3 *db = NULL;
  char *summary = NULL, *report = NULL, *made_out = NULL, *made_md = NULL;
  if (!opt && out && tmp) {
    fprintf(stderr, "traceloom: --options must be a JSON object\n");
    status = EXIT_USAGE;
    goto done;
  }
  if (!out || !tmp || !opt) {
    fprintf(stderr, "traceloom: out of memory\n");
    goto done;
  }
  if (same_file(out, base) || same_file(out, fresh) || strcmp(out, base) == 0 ||
      strcmp(out, fresh) == 0) {
    fprintf(stderr, "traceloom: refusing to overwrite %s: it is an input of the comparison\n", out);
    status = EXIT_USAGE;
    goto done;
  }
  if (make_output_dirs("comparison database", out, &made_out) != 0 ||
      (markdown && make_output_dirs("report", markdown, &made_md) != 0))
    goto done;
  remove_stale_temps(out);
  remove_temp(tmp);
  char *err = NULL;
  if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK ||
      sqlite3_traceloom_init(db, &err, NULL) != SQLITE_OK) {
    cannot_create("comparison database", out, tmp, err ? err : db ? sqlite3_errmsg(db) : NULL);
    sqlite3_free(err);
    goto done;
  }
  sqlite3_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;", NULL, NULL, NULL);
  catch_interrupts(db);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT traceloom_compare(?1, ?2)", -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, base, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, opt, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) summary = tl_strdup((const char *)sqlite3_column_text(st, 0));
  }
  if (!summary) {
    if (interrupted)
      fprintf(stderr, "traceloom: interrupted; %s was not changed\n", out), status = EXIT_INTERRUPTED;
    else
      fprintf(stderr, "traceloom: %s\n", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    goto done;
  }
  sqlite3_finalize(st);
  if (sqlite3_prepare_v2(db, "SELECT traceloom_compare_report()", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    report = tl_strdup((const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  if (!report) {
    fprintf(stderr, "traceloom: %s\n", sqlite3_errmsg(db));
    goto done;
  }
  interrupt_db = NULL;
  int closed = sqlite3_close(db) == SQLITE_OK;
  db = NULL;
  if (interrupted) {
    fprintf(stderr, "traceloom: interrupted; %s was not changed\n", out);
    status = EXIT_INTERRUPTED;
  } else if (!closed || rename(tmp, out) != 0) {
    fprintf(stderr, "traceloom: cannot move the comparison into place at %s: %s\n", out,
            strerror(errno));
  } else if (markdown && write_text_atomic(markdown, report) != 0) {
    fprintf(stderr, "traceloom: cannot write the report %s: %s\n", markdown, strerror(errno));
  } else {
    if (!markdown || strcmp(markdown, "-") != 0)
      printf("%s\ncomparison database: %s\n", summary, out);
    if (markdown && strcmp(markdown, "-") != 0) printf("report: %s\n", markdown);
    status = 0;
  }
done:
  interrupt_db = NULL;
  if (db) sqlite3_close(db);
  if (status != 0 && tmp) remove_temp(tmp);
  if (status != 0 && markdown) remove_made_dirs(markdown, made_md);
  if (status != 0 && out) remove_made_dirs(out, made_out);
  free(made_out), free(made_md);
  free(summary), free(report), free(opt), free(tmp), free(out);
  free(base_abs), free(fresh_abs);
  return status;
}

/* The stages --extend-<stage>-rules adds to, in rules-config order. */
static const char *const EXTEND_FLAGS[3] = {"--extend-classification-rules",
                                            "--extend-symbol-rules",
                                            "--extend-event-reconciliation-rules"};
static const char *const EXTEND_STAGES[3] = {"classification", "symbol_normalization",
                                             "event_reconciliation"};

/* A rules config (traceloom-analysis-rules-v1) that extends each stage with the rules of its
** file: every file's lines, indented under `<stage>:` after `mode: extend`. NULL (after
** printing why) when a file cannot be read. */
static char *extend_rules_config(const char *const files[3]) {
  tl_buf b = {0};
  tl_buf_puts(&b, "# Written by traceloom from its --extend-*-rules flags: the rules config of the\n"
                  "# analysis beside it.\nschema: traceloom-analysis-rules-v1\n");
  for (int k = 0; k < 3; k++) {
    if (!files[k]) continue;
    FILE *f = fopen(files[k], "r");
    if (!f) {
      fprintf(stderr, "traceloom: cannot read %s %s: %s\n", EXTEND_FLAGS[k], files[k], strerror(errno));
      tl_buf_free(&b);
      return NULL;
    }
    tl_buf_printf(&b, "# %s\n%s:\n  mode: extend\n", files[k], EXTEND_STAGES[k]);
    char line[4096];
    int at_start = 1;
    while (fgets(line, sizeof line, f)) {
      /* a manifest's own schema line names the file, not this stage */
      if (at_start && strncmp(line, "schema:", 7) == 0) continue;
      if (at_start) tl_buf_puts(&b, "  ");
      tl_buf_puts(&b, line);
      at_start = strchr(line, '\n') != NULL;
    }
    if (!at_start) tl_buf_puts(&b, "\n");
    fclose(f);
  }
  if (b.oom) {
    tl_buf_free(&b);
    fprintf(stderr, "traceloom: out of memory\n");
    return NULL;
  }
  return b.p;
}

/* VACUUM INTO a temporary sibling of path, renamed into place. */
static int copy_analysis(const char *analysis, const char *path) {
  char *made = NULL;
  if (make_output_dirs("copy", path, &made) != 0) return EXIT_ANALYSIS;
  char *tmp = tl_mprintf("%s.tmp-%ld", path, (long)getpid());
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int ok = tmp && sqlite3_open_v2(analysis, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
           sqlite3_prepare_v2(db, "VACUUM INTO ?1", -1, &st, NULL) == SQLITE_OK &&
           sqlite3_bind_text(st, 1, tmp, -1, SQLITE_STATIC) == SQLITE_OK &&
           sqlite3_step(st) == SQLITE_DONE;
  if (!ok) fprintf(stderr, "traceloom: cannot write --compat-db-out %s: %s\n", path, db ? sqlite3_errmsg(db) : "?");
  sqlite3_finalize(st);
  sqlite3_close(db);
  if (ok && rename(tmp, path) != 0) {
    fprintf(stderr, "traceloom: cannot move the copy into place at %s: %s\n", path, strerror(errno));
    ok = 0;
  }
  if (!ok && tmp) remove(tmp);
  if (ok) printf("compat database: %s\n", path);
  else remove_made_dirs(path, made);
  free(made);
  free(tmp);
  return ok ? 0 : EXIT_ANALYSIS;
}

/* The --context paths of the argument loop, freed at exit: the loop's many usage-error
** returns would each have to free them otherwise. */
static const char **cli_contexts;

static void free_cli_contexts(void) {
  free(cli_contexts);
  cli_contexts = NULL;
}

int main(int argc, char **argv) {
  const char *profile = NULL, *output = NULL, *options = NULL;
  const char *extend[3] = {NULL, NULL, NULL}, *compat_out = NULL, *loop_view = NULL;
  const char *perfetto_out = NULL, *rules_config = NULL;
  long threads = 0;
  /* No global allocation statistics: they take a process-wide mutex on every SQLite
  ** allocation, millions of times per analysis, and the CLI never reads them. */
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
#ifdef __GLIBC__
  /* The analysis's big arrays (event and call columns, occurrences: tens to hundreds of MB
  ** at 10M rows) grow by realloc, some on the reading thread. glibc's default threshold for
  ** serving a block with its own mmap rises as large blocks are freed, after which such
  ** arrays land in the malloc arenas, where a freed one stays resident beside the next stage's
  ** (the second reading thread's arena kept about 12 MB more at recovery's peak). A fixed
  ** 8 MiB threshold keeps every large array in a mapping of its own, returned to the system
  ** when it is freed: 10M peak 981,980 -> 946,176 KiB, 1M 192 -> 125 MB, time the same or
  ** less (bench/RESULTS.md 15:32). The CLI's own process only: the extension never changes
  ** its host's allocator. */
  mallopt(M_MMAP_THRESHOLD, 8 << 20);
#endif
  if (argc > 1 && strcmp(argv[1], "export-perfetto") == 0) return export_perfetto_main(argc, argv);
  if (argc > 1 && strcmp(argv[1], "compare") == 0) return compare_main(argc, argv);
  const char **contexts = cli_contexts = calloc((size_t)argc, sizeof *contexts);
  size_t ncontext = 0;
  if (!contexts) return fprintf(stderr, "traceloom: out of memory\n"), EXIT_ANALYSIS;
  atexit(free_cli_contexts);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(synopsis, stdout), fputs(help, stdout);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("traceloom %s (SQLite %s)\n", TRACELOOM_VERSION, sqlite3_libversion());
      return 0;
    } else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0) {
      if (++i >= argc) return usage_error(&analyze_cmd, NULL, "--output needs a path");
      output = argv[i];
    } else if (strcmp(a, "--threads") == 0) {
      char *end;
      if (++i >= argc || (threads = strtol(argv[i], &end, 10)) < 1 || threads > 256 || *end)
        return fprintf(stderr, "traceloom: --threads needs an integer from 1 to 256\n"), EXIT_USAGE;
    } else if (strcmp(a, "--options") == 0) {
      if (++i >= argc) return fprintf(stderr, "traceloom: --options needs a JSON object\n"), EXIT_USAGE;
      options = argv[i];
    } else if (strcmp(a, "--perfetto-out") == 0) {
      if (++i >= argc) return fprintf(stderr, "traceloom: --perfetto-out needs a path\n"), EXIT_USAGE;
      perfetto_out = argv[i];
    } else if (strcmp(a, "--context") == 0) {
      if (++i >= argc || !*argv[i])
        return fprintf(stderr, "traceloom: --context needs a JSONL file\n"), EXIT_USAGE;
      contexts[ncontext++] = argv[i];
    } else if (strcmp(a, "--rules-config") == 0) {
      if (++i >= argc || !*argv[i])
        return fprintf(stderr, "traceloom: --rules-config needs a file or a bundled name\n"), EXIT_USAGE;
      rules_config = argv[i];
    } else if (strcmp(a, EXTEND_FLAGS[0]) == 0 || strcmp(a, EXTEND_FLAGS[1]) == 0 ||
               strcmp(a, EXTEND_FLAGS[2]) == 0) {
      int k = strcmp(a, EXTEND_FLAGS[0]) == 0 ? 0 : strcmp(a, EXTEND_FLAGS[1]) == 0 ? 1 : 2;
      if (++i >= argc || !*argv[i])
        return fprintf(stderr, "traceloom: %s needs a rules file\n", a), EXIT_USAGE;
      if (extend[k])
        return fprintf(stderr, "traceloom: %s given twice (put the rules in one file)\n", a), EXIT_USAGE;
      extend[k] = argv[i];
    } else if (strcmp(a, "--compat-db-out") == 0) {
      if (++i >= argc || !*argv[i])
        return fprintf(stderr, "traceloom: --compat-db-out needs a path\n"), EXIT_USAGE;
      compat_out = argv[i];
    } else if (strcmp(a, "--loop-tree-view") == 0) {
      if (++i >= argc || (strcmp(argv[i], "compact") != 0 && strcmp(argv[i], "expanded") != 0 &&
                          strcmp(argv[i], "both") != 0))
        return fprintf(stderr, "traceloom: --loop-tree-view needs compact, expanded or both\n"), EXIT_USAGE;
      loop_view = argv[i];
    } else if (strcmp(a, "--structural-order") == 0) {
      if (++i >= argc || (strcmp(argv[i], "device") != 0 && strcmp(argv[i], "host-launch") != 0))
        return fprintf(stderr, "traceloom: --structural-order needs device or host-launch\n"), EXIT_USAGE;
      if (strcmp(argv[i], "host-launch") == 0)
        return fprintf(stderr, "traceloom: --structural-order host-launch is not available: anchors are "
                               "ordered on the device (start, end, stream); each launch's host call "
                               "is in traceloom_runtime_device_relation (docs/PARITY.md, Options)\n"),
               EXIT_USAGE;
    } else if (strcmp(a, "--classification-rule-override") == 0) {
      return fprintf(stderr, "traceloom: --classification-rule-override is not available: override a "
                             "rule with a rules config (--rules-config FILE with classification: "
                             "mode: override and the whole rule; docs/PARITY.md, Options)\n"),
             EXIT_USAGE;
    } else if (a[0] == '-' && a[1]) {
      return usage_error(&analyze_cmd, a, "unknown option %s", a);
    } else if (!profile) {
      profile = a;
    } else {
      return usage_error(&analyze_cmd, NULL, "one profile path expected, got also %s", a);
    }
  }
  if (!profile) {
    return usage_error(&analyze_cmd, NULL,
                       "input path is required: pass an Ascend profiler SQLite DB, Hygon hipprof "
                       "DB, CUDA/Nsight SQLite export, PyTorch profiler (Kineto) JSON trace, or "
                       "profile directory");
  }
  /* --extend-*-rules make a rules config, written beside the output once its folder exists
  ** and named as the rules config of the analysis. */
  char *rules_made = NULL;
  if (extend[0] || extend[1] || extend[2]) {
    if (rules_config)
      return fprintf(stderr, "traceloom: --extend-*-rules cannot be combined with --rules-config "
                             "(put the extension into that config)\n"), EXIT_USAGE;
    char *o = output ? tl_strdup(output) : default_output(profile);
    rules_made = o ? beside(o, ".rules.yaml") : NULL;
    free(o);
    if (!rules_made) return fprintf(stderr, "traceloom: out of memory\n"), EXIT_ANALYSIS;
    rules_config = rules_made;
  }
  /* Options: --threads, --context and --rules-config are folded into the JSON object. */
  tl_buf opt = {0};
  int nkeys = 0;
  tl_buf_puts(&opt, "{");
  if (threads) tl_buf_printf(&opt, "\"threads\":%ld", threads), nkeys++;
  if (ncontext) {
    tl_buf_puts(&opt, nkeys++ ? ",\"context\":[" : "\"context\":[");
    for (size_t k = 0; k < ncontext; k++) {
      if (k) tl_buf_puts(&opt, ",");
      tl_buf_json_string(&opt, contexts[k], strlen(contexts[k]));
    }
    tl_buf_puts(&opt, "]");
  }
  if (rules_config) {
    tl_buf_puts(&opt, nkeys++ ? ",\"rules_config\":" : "\"rules_config\":");
    tl_buf_json_string(&opt, rules_config, strlen(rules_config));
  }
  if (options) {
    const char *p = options;
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (*p != '{') {
      fprintf(stderr, "traceloom: --options must be a JSON object\n");
      free(rules_made);
      return EXIT_USAGE;
    }
    p++;
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (*p != '}' && nkeys) tl_buf_puts(&opt, ",");
    tl_buf_puts(&opt, p);
  } else {
    tl_buf_puts(&opt, "}");
  }

  /* Usage errors in the options (unknown keys, wrong types, a rules config that needs the
  ** --context it was not given) exit 2 before anything is created. */
  if (options_usage_error(opt.oom ? NULL : opt.p, ncontext)) {
    free_cli_contexts();
    tl_buf_free(&opt);
    free(rules_made);
    return EXIT_USAGE;
  }
  {
    struct stat st;
    if (stat(profile, &st) != 0) {
      fprintf(stderr, "traceloom: cannot read the profile %s: %s\n", profile, strerror(errno));
      free_cli_contexts();
      tl_buf_free(&opt);
      free(rules_made);
      return EXIT_ANALYSIS;
    }
  }
  char *out = output ? tl_strdup(output) : default_output(profile);
  char *tmp = out ? tl_mprintf("%s.tmp-%ld", out, (long)getpid()) : NULL;
  if (!out || !tmp || opt.oom) {
    fprintf(stderr, "traceloom: out of memory\n");
    free(rules_made);
    return EXIT_ANALYSIS;
  }
  {
    /* A context file is an input: the output must never replace it. */
    tl_err ce = {0};
    int refused = ncontext && tl_context_refuse_output(contexts, ncontext, out, &ce);
    free_cli_contexts();
    if (refused) {
      fprintf(stderr, "traceloom: %s\n", ce.msg ? ce.msg : "context file equals the output");
      tl_err_clear(&ce);
      free(rules_made);
      return EXIT_USAGE;
    }
  }
  if (output_is_folder("--output", output, "analysis.db") ||
      output_is_folder("--perfetto-out", perfetto_out, "timeline.perfetto.json.gz") ||
      output_is_folder("--compat-db-out", compat_out, "compat.db")) {
    free(tmp), free(out);
    tl_buf_free(&opt);
    free(rules_made);
    return EXIT_USAGE;
  }
  char *made_dir = NULL, *failed_dir = NULL;
  if (make_parent_dirs(out, &made_dir, &failed_dir) != 0) {
    fprintf(stderr, "traceloom: cannot create the folder %s for the output %s: %s\n",
            failed_dir ? failed_dir : "?", out, strerror(errno));
    remove_made_dirs(out, made_dir);
    free(made_dir), free(failed_dir), free(tmp), free(out);
    tl_buf_free(&opt);
    free(rules_made);
    return EXIT_ANALYSIS;
  }
  remove_stale_temps(out);
  remove_temp(tmp);
  if (rules_made) {
    char *text = extend_rules_config(extend);
    FILE *f = text ? fopen(rules_made, "w") : NULL;
    int written = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) written = 0;
    if (!written && text) fprintf(stderr, "traceloom: cannot write %s: %s\n", rules_made, strerror(errno));
    free(text);
    if (!written) {
      remove(rules_made);
      remove_made_dirs(out, made_dir);
      free(made_dir), free(tmp), free(out), free(rules_made);
      tl_buf_free(&opt);
      return EXIT_USAGE;
    }
  }

  int status = EXIT_ANALYSIS, renamed = 0;
  sqlite3 *db = NULL;
  tl_analyze_extra loop_md = {NULL, NULL, NULL};
  if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    cannot_create("analysis database", out, tmp, db ? sqlite3_errmsg(db) : NULL);
    goto done;
  }
  char *err = NULL;
  if (sqlite3_traceloom_init(db, &err, NULL) != SQLITE_OK) {
    fprintf(stderr, "traceloom: cannot register the extension: %s\n", err ? err : "?");
    sqlite3_free(err);
    goto done;
  }
  /* The temporary file is private until renamed: no journal, no fsync per commit. It is new,
  ** so its page size can still be chosen: with 16 KiB pages SQLite appends the millions of
  ** core rows with fewer pages to allocate and balance (copying the 1M analysis's tables:
  ** 11% less CPU than with 4 KiB pages; the whole analysis about 4%), the views' key lookups
  ** cost the same, and the file is 0.1% larger (bench/RESULTS.md). */
  sqlite3_exec(db,
               "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; "
               "PRAGMA cache_size=-16384;",
               NULL, NULL, NULL);
  catch_interrupts(db);

  /* traceloom_analyze() as a C call, so that the loop tree Markdown comes back with it:
  ** rendered from the trees in memory while the rest is published (tl_analyze_ex). */
  char *summary = NULL;
  tl_err aerr = {0};
  char *loop_opts = loop_tree_options(loop_view, threads);
  loop_md.loop_tree_options = loop_opts;
  /* The analysis runs inside an active statement, as under SELECT traceloom_analyze(): SQLite
  ** clears a pending sqlite3_interrupt() (Ctrl-C) whenever a statement starts while none is
  ** active, so without one the analysis's own statements would drop it. */
  sqlite3_stmt *guard = NULL;
  if (sqlite3_prepare_v2(db, "SELECT 1", -1, &guard, NULL) != SQLITE_OK ||
      sqlite3_step(guard) != SQLITE_ROW) {
    fprintf(stderr, "traceloom: %s\n", sqlite3_errmsg(db));
    sqlite3_finalize(guard);
    free(loop_opts);
    goto done;
  }
  int arc = tl_analyze_ex(db, profile, opt.n ? opt.p : NULL, &loop_md, &summary, &aerr);
  sqlite3_finalize(guard);
  if (arc != TL_OK) {
    if (interrupted) {
      fprintf(stderr, "traceloom: interrupted; %s was not changed\n", out);
      status = EXIT_INTERRUPTED;
    } else {
      fprintf(stderr, "traceloom: %s\n", aerr.msg ? aerr.msg : "traceloom_analyze failed");
    }
    tl_err_clear(&aerr);
    free(loop_opts);
    goto done;
  }
  free(loop_opts);
  /* TRACELOOM_TIMING=1: the CLI's tail after the analysis returned, step by step. */
  tl_timer tail;
  tl_timer_start(&tail, "cli");
  if (output_is_input(db, out)) {
    fprintf(stderr, "traceloom: refusing to overwrite %s: it is an input of the analysis\n", out);
    free(summary);
    goto done;
  }
  interrupt_db = NULL;
  if (sqlite3_close(db) != SQLITE_OK) {
    fprintf(stderr, "traceloom: cannot close %s\n", tmp);
    free(summary);
    db = NULL;
    goto done;
  }
  db = NULL;
  tl_timer_mark(&tail, "close");
  if (interrupted) {
    fprintf(stderr, "traceloom: interrupted; %s was not changed\n", out);
    free(summary);
    status = EXIT_INTERRUPTED;
    goto done;
  }
  int replaced = hold_replaced(out);
  if (rename(tmp, out) != 0) {
    fprintf(stderr, "traceloom: cannot move the analysis into place at %s: %s\n", out,
            strerror(errno));
    if (replaced >= 0) close(replaced);
    free(summary);
    goto done;
  }
  renamed = 1;
  tl_timer_mark(&tail, "rename");
  printf("%s\nanalysis database: %s\n", summary ? summary : "", out);
  free(summary);
  status = 0;
  write_loop_tree(out, loop_view, threads, loop_md.loop_tree_md, loop_md.loop_tree_summary, replaced,
                  &tail);
  print_inventory_notes(out);
  if (rules_made) printf("rules config: %s\n", rules_made);
  if (compat_out) status = copy_analysis(out, compat_out);
  if (status == 0 && perfetto_out) status = export_perfetto(out, perfetto_out, NULL);
done:
  interrupt_db = NULL;
  if (db) sqlite3_close(db);
  if (status != 0) remove_temp(tmp);
  if (rules_made && !renamed) remove(rules_made);
  free(rules_made);
  if (status != 0 && !renamed) remove_made_dirs(out, made_dir);
  free(made_dir);
  free(tmp);
  free(out);
  tl_buf_free(&opt);
  free(loop_md.loop_tree_md), free(loop_md.loop_tree_summary);
  return status;
}

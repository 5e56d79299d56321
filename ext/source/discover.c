/*
** discover.c: from a path to the list of inputs (inputs.md section 1).
**
** A file is detected by family, in the order of the registry (families.c): the first
** family whose detect_sqlite (a SQLite file) or detect_file (a file with one of its name
** suffixes) claims it. A directory is walked in sorted order:
**   - a torch-npu rank capture directory (holding ASCEND_PROFILER_OUTPUT) contributes its
**     ascend_pytorch_profiler_<rank>.db files; its sibling PROF_* containers are companions,
**     never inputs of their own (that would count the device timeline twice);
**   - a PROF_* container contributes its usable monolithic msprof_*.db files, or else its
**     split layout (with a warning);
**   - any other directory is walked further; loose *.db / *.sqlite files are detected, and
**     so are files with a suffix some family reads (*.json / *.json.gz: Kineto traces, one
**     input per file, e.g. per-rank traces).
** Inputs are numbered (db_idx) in that deterministic order.
*/
#include "source/source.h"
#include "source/sqlsrc.h"
#include "util/buf.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 8

/* ------------------------------------------------------------------ profile helpers */

int tl_profile_add_file(tl_profile *p, const char *path, int db_idx, tl_file_role role,
                        int device_id) {
  tl_source_file f = {tl_strdup(path), db_idx, role, device_id};
  if (!f.path || TL_VEC_PUSH(&p->files, f)) {
    free(f.path);
    return -1;
  }
  return (int)p->files.n - 1;
}

void tl_profile_free(tl_profile *p) {
  if (!p) return;
  free(p->path);
  for (size_t i = 0; i < p->inputs.n; i++) {
    free(p->inputs.v[i].path);
    free(p->inputs.v[i].stream_info_path);
    free(p->inputs.v[i].stream_info_detail);
  }
  TL_VEC_FREE(&p->inputs);
  for (size_t i = 0; i < p->files.n; i++) free(p->files.v[i].path);
  TL_VEC_FREE(&p->files);
  for (size_t i = 0; i < p->warnings.n; i++) free(p->warnings.v[i]);
  TL_VEC_FREE(&p->warnings);
  memset(p, 0, sizeof *p);
}

static int add_warning(tl_profile *p, tl_err *e, char *msg) {
  if (!msg || TL_VEC_PUSH(&p->warnings, msg)) {
    free(msg);
    return tl_nomem(e);
  }
  return TL_OK;
}

static char *path_join(const char *a, const char *b) { return tl_mprintf("%s/%s", a, b); }

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static int starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entry names of a directory (without . and ..). */
static int list_dir(const char *dir, tl_names *out, tl_err *e) {
  memset(out, 0, sizeof *out);
  DIR *d = opendir(dir);
  if (!d) return tl_fail(e, "cannot read profile directory '%s': %s", dir, strerror(errno));
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    char *name = tl_strdup(de->d_name);
    if (!name || TL_VEC_PUSH(out, name)) {
      free(name);
      closedir(d);
      tl_names_free(out);
      return tl_nomem(e);
    }
  }
  closedir(d);
  if (out->n) qsort(out->v, out->n, sizeof *out->v, cmp_str);
  return TL_OK;
}

/* ------------------------------------------------------------------ detection */

/* Detects the family of one SQLite file: *family is the first family of the registry that
** claims it, NULL when none (then *found, if given, describes what the file holds). Fails
** on a hard error: unreadable, not SQLite, a family's table with an incompatible schema. */
/* An Nsight Systems report (what nsys writes: .nsys-rep, formerly .qdrep) is not SQLite: the
** open error gets the command that makes the export this reader reads. */
static void nsys_report_hint(const char *path, tl_err *e) {
  size_t n = strlen(path);
  size_t ext = n > 9 && strcmp(path + n - 9, ".nsys-rep") == 0 ? 9
               : n > 6 && strcmp(path + n - 6, ".qdrep") == 0  ? 6
                                                               : 0;
  if (!ext || !e || !e->msg || e->code != TL_ERR_FAILED) return;
  char *open_error = e->msg;
  e->msg = NULL, e->code = TL_ERR_NONE;
  tl_fail(e, "%s; an Nsight Systems report is read through its SQLite export: nsys export "
             "--type sqlite --output %.*s.sqlite %s, then pass the .sqlite file",
          open_error, (int)(n - ext), path, path);
  free(open_error);
}

static int detect_sqlite(const char *path, const tl_family_def **family, char **found,
                         tl_err *e) {
  *family = NULL;
  sqlite3 *db;
  if (tl_sql_open_ro(path, &db, e)) return TL_ERROR;
  tl_names tables;
  if (tl_sql_tables(db, path, &tables, e)) {
    tl_sql_close(db);
    return TL_ERROR;
  }
  tl_sql_probe probe = {db, path, &tables};
  int rc = TL_OK;
  /* An analysis database (possibly with embedded raw tables) is never a profile. */
  int analysis = tl_sql_probe_has(&probe, "traceloom_metadata");
  for (const tl_family_def *const *f = tl_families; !analysis && !*family && *f; f++) {
    int hit = (*f)->detect_sqlite ? (*f)->detect_sqlite(&probe, e) : 0;
    if (hit < 0) {
      rc = TL_ERROR;
      break;
    }
    if (hit) *family = *f;
  }
  if (rc == TL_OK && !*family && found) {
    tl_buf b = {0};
    if (analysis) tl_buf_puts(&b, "a TraceLoom analysis database (traceloom_metadata)");
    else if (tables.n == 0) tl_buf_puts(&b, "no tables");
    for (size_t i = 0; !analysis && i < tables.n && i < 20; i++) {
      if (i) tl_buf_puts(&b, ", ");
      tl_buf_puts(&b, tables.v[i]);
    }
    if (!analysis && tables.n > 20) tl_buf_printf(&b, ", ... (%zu tables)", tables.n);
    *found = b.oom ? NULL : b.p;
    if (b.oom) tl_buf_free(&b);
  }
  tl_names_free(&tables);
  tl_sql_close(db);
  return rc;
}

/* The family that reads files named like path (a detect_file family's suffix), or NULL. */
static const tl_family_def *file_family(const char *path);

/* ------------------------------------------------------------------ inputs */

static int add_input(tl_profile *p, const tl_family_def *family, const char *path, tl_err *e) {
  tl_input in;
  memset(&in, 0, sizeof in);
  in.family = family;
  in.path = tl_strdup(path);
  in.primary_file = -1;
  in.stream_info_status = "stream_info_missing";
  if (!in.path || TL_VEC_PUSH(&p->inputs, in)) {
    free(in.path);
    return tl_nomem(e);
  }
  int db_idx = (int)p->inputs.n - 1;
  if (family != &tl_msprof_split_family) { /* a split input reads many files (add_split_files) */
    int id = tl_profile_add_file(p, path, db_idx, TL_FILE_PRIMARY, -1);
    if (id < 0) return tl_nomem(e);
    p->inputs.v[db_idx].primary_file = id;
  }
  return TL_OK;
}

/* A companion that exists must be a readable SQLite database; one without the capture
** columns is recorded as incompatible (exact replay is then disabled, explicitly). */
static const char *check_stream_info(const char *path, char **detail, tl_err *e) {
  static const char *const base[] = {"device_id", "model_id", NULL};
  sqlite3 *db;
  tl_err inner = {0};
  if (tl_sql_open_ro(path, &db, &inner)) {
    tl_fail(e, "unreadable capture-stream companion database: %s", inner.msg);
    tl_err_clear(&inner);
    return NULL;
  }
  tl_columns c;
  if (tl_sql_columns(db, path, "CaptureStreamInfo", &c, e)) {
    tl_sql_close(db);
    return NULL;
  }
  char *missing = NULL;
  int ok = c.exists && tl_columns_have(&c, base, 0, &missing) &&
           (tl_columns_find(&c, "stream_id", 0) >= 0 || tl_columns_find(&c, "model_stream_id", 0) >= 0);
  if (!ok)
    *detail = tl_mprintf("%s: table CaptureStreamInfo %s (expected device_id, model_id and "
                         "stream_id or model_stream_id)",
                         path, !c.exists ? "is absent" : missing ? missing : "has neither stream_id nor model_stream_id");
  free(missing);
  tl_columns_free(&c);
  tl_sql_close(db);
  return ok ? "" : "stream_info_incompatible_schema";
}

static int set_stream_info(tl_profile *p, const char *path, const char *status, char *detail,
                           tl_err *e) {
  tl_input *in = &p->inputs.v[p->inputs.n - 1];
  if (path) {
    char *why = NULL;
    const char *bad = check_stream_info(path, &why, e);
    if (!bad) {
      free(detail);
      return TL_ERROR;
    }
    if (*bad) {
      in->stream_info_status = bad;
      in->stream_info_detail = why;
      free(detail);
      return TL_OK;
    }
  }
  in->stream_info_status = status;
  in->stream_info_detail = detail;
  if (path) {
    in->stream_info_path = tl_strdup(path);
    if (!in->stream_info_path) return tl_nomem(e);
    if (tl_profile_add_file(p, path, (int)p->inputs.n - 1, TL_FILE_COMPANION, -1) < 0)
      return tl_nomem(e);
  }
  return TL_OK;
}

/* Companion of a monolithic DB inside a PROF_* container: <dir of db>/host/sqlite/stream_info.db. */
static int adjacent_stream_info(tl_profile *p, const char *db_path, tl_err *e) {
  char *dir = tl_strdup(db_path);
  if (!dir) return tl_nomem(e);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  char *si = tl_mprintf("%s/host/sqlite/stream_info.db", dir);
  free(dir);
  if (!si) return tl_nomem(e);
  int rc;
  if (is_file(si))
    rc = set_stream_info(p, si, "stream_info_adjacent", NULL, e);
  else
    rc = set_stream_info(p, NULL, "stream_info_missing",
                         tl_mprintf("no capture-stream companion at %s; generate it with "
                                    "msprof --parse=on --output=/absolute/path/to/PROF_container",
                                    si),
                         e);
  free(si);
  return rc;
}

/* Companion of a torch-npu DB: exactly one sibling PROF_* of ASCEND_PROFILER_OUTPUT. */
static int torchnpu_stream_info(tl_profile *p, const char *capture_dir, tl_err *e) {
  tl_names names;
  if (list_dir(capture_dir, &names, e)) return TL_ERROR;
  tl_buf cands = {0};
  int ncand = 0;
  char *only = NULL;
  for (size_t i = 0; i < names.n; i++) {
    if (!starts_with(names.v[i], "PROF_")) continue;
    char *d = path_join(capture_dir, names.v[i]);
    if (!d) continue;
    if (is_dir(d)) {
      if (ncand++) tl_buf_puts(&cands, ", ");
      tl_buf_puts(&cands, d);
      free(only);
      only = d;
    } else {
      free(d);
    }
  }
  tl_names_free(&names);
  int rc;
  if (ncand > 1) {
    rc = set_stream_info(p, NULL, "stream_info_ambiguous_containers",
                         tl_mprintf("%d sibling PROF_* containers (%s): refusing to choose one; "
                                    "exact graph replay is disabled",
                                    ncand, cands.p ? cands.p : ""),
                         e);
  } else if (ncand == 0) {
    rc = set_stream_info(p, NULL, "stream_info_missing",
                         tl_mprintf("no sibling PROF_* container in %s; generate the host SQLite "
                                    "with msprof --parse=on --output=/absolute/path/to/PROF_container",
                                    capture_dir),
                         e);
  } else {
    char *si = tl_mprintf("%s/host/sqlite/stream_info.db", only);
    if (!si)
      rc = tl_nomem(e);
    else if (is_file(si))
      rc = set_stream_info(p, si, "stream_info_sibling_container", NULL, e);
    else
      rc = set_stream_info(p, NULL, "stream_info_missing",
                           tl_mprintf("the sibling container %s has no host/sqlite/stream_info.db; "
                                      "generate it with msprof --parse=on "
                                      "--output=/absolute/path/to/PROF_container",
                                      only),
                           e);
    free(si);
  }
  free(only);
  tl_buf_free(&cands);
  return rc;
}

/* Adds every `*.db` whose parent directory is `sqlite` under dir (recursively, sorted). */
static int add_split_files(tl_profile *p, const char *dir, int db_idx, int device_id, int depth,
                           tl_err *e) {
  if (depth > MAX_DEPTH) return TL_OK;
  tl_names names;
  if (list_dir(dir, &names, e)) return TL_ERROR;
  int rc = TL_OK;
  int in_sqlite = strcmp(base_name(dir), "sqlite") == 0;
  for (size_t i = 0; i < names.n && rc == TL_OK; i++) {
    char *child = path_join(dir, names.v[i]);
    if (!child) {
      rc = tl_nomem(e);
      break;
    }
    if (is_dir(child)) {
      int dev = device_id;
      if (depth == 0 && starts_with(names.v[i], "device_")) dev = atoi(names.v[i] + 7);
      rc = add_split_files(p, child, db_idx, dev, depth + 1, e);
    } else if (in_sqlite && ends_with(names.v[i], ".db") && is_file(child)) {
      if (tl_profile_add_file(p, child, db_idx, TL_FILE_SPLIT_PART, device_id) < 0)
        rc = tl_nomem(e);
    }
    free(child);
  }
  tl_names_free(&names);
  return rc;
}

/* 1 when a PROF_* directory holds a split layout: some device_* has a non-empty AscendTask. */
static int has_split_layout(const char *prof_dir) {
  tl_names names;
  tl_err e = {0};
  if (list_dir(prof_dir, &names, &e)) {
    tl_err_clear(&e);
    return 0;
  }
  int found = 0;
  for (size_t i = 0; i < names.n && !found; i++) {
    if (!starts_with(names.v[i], "device_")) continue;
    char *db_path = tl_mprintf("%s/%s/sqlite/ascend_task.db", prof_dir, names.v[i]);
    sqlite3 *db;
    if (db_path && is_file(db_path) && tl_sql_open_ro(db_path, &db, &e) == TL_OK) {
      found = tl_sql_nonempty(db, "AscendTask") != 0; /* a read error: the reader says it */
      tl_sql_close(db);
    }
    tl_err_clear(&e);
    free(db_path);
  }
  tl_names_free(&names);
  return found;
}

static int add_split_input(tl_profile *p, const char *prof_dir, tl_err *e) {
  if (add_input(p, &tl_msprof_split_family, prof_dir, e)) return TL_ERROR;
  int db_idx = (int)p->inputs.n - 1;
  if (add_split_files(p, prof_dir, db_idx, -1, 0, e)) return TL_ERROR;
  char *si = tl_mprintf("%s/host/sqlite/stream_info.db", prof_dir);
  if (!si) return tl_nomem(e);
  tl_input *in = &p->inputs.v[db_idx];
  if (is_file(si)) {
    in->stream_info_status = "stream_info_adjacent";
    in->stream_info_path = si;
  } else {
    in->stream_info_detail =
        tl_mprintf("no capture-stream companion at %s; generate it with msprof --parse=on "
                   "--output=/absolute/path/to/PROF_container",
                   si);
    free(si);
  }
  return TL_OK;
}

/* Optional split tables whose absence the fallback warning names. */
static char *split_missing_optional(const char *prof_dir) {
  static const char *const opt[][2] = {{"host/sqlite/api_event.db", "ApiData"},
                                       {"host/sqlite/runtime.db", "HostTask"},
                                       {"host/sqlite/ge_info.db", "TaskInfo"}};
  tl_buf b = {0};
  for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
    char *path = tl_mprintf("%s/%s", prof_dir, opt[i][0]);
    int present = 0;
    sqlite3 *db;
    tl_err e = {0};
    if (path && is_file(path) && tl_sql_open_ro(path, &db, &e) == TL_OK) {
      tl_columns c;
      if (tl_sql_columns(db, path, opt[i][1], &c, &e) == TL_OK) present = c.exists;
      tl_columns_free(&c);
      tl_sql_close(db);
    }
    tl_err_clear(&e);
    free(path);
    if (!present) {
      if (b.n) tl_buf_puts(&b, " ");
      tl_buf_puts(&b, opt[i][1]);
    }
  }
  if (!b.n) tl_buf_puts(&b, "none");
  return b.oom ? NULL : b.p;
}

/* A PROF_* container: usable monolithic DBs win; otherwise the split layout. */
static int scan_prof_container(tl_profile *p, const char *dir, tl_err *e) {
  tl_names names;
  if (list_dir(dir, &names, e)) return TL_ERROR;
  int rc = TL_OK, added = 0;
  for (size_t i = 0; i < names.n && rc == TL_OK; i++) {
    if (!starts_with(names.v[i], "msprof") || !ends_with(names.v[i], ".db")) continue;
    char *path = path_join(dir, names.v[i]);
    if (!path) {
      rc = tl_nomem(e);
      break;
    }
    if (is_file(path)) {
      const tl_family_def *fam;
      if (detect_sqlite(path, &fam, NULL, e))
        rc = TL_ERROR;
      else if (fam == &tl_msprof_family) {
        rc = add_input(p, fam, path, e);
        if (rc == TL_OK) rc = adjacent_stream_info(p, path, e);
        added++;
      }
    }
    free(path);
  }
  tl_names_free(&names);
  if (rc || added) return rc;
  if (!has_split_layout(dir)) {
    char *host = tl_mprintf("%s/host/sqlite", dir);
    int looks_split = host && is_dir(host);
    free(host);
    if (looks_split)
      return tl_fail(e,
                     "split SQLite profile is missing required device_*/sqlite/ascend_task.db:"
                     "AscendTask table: %s (and it has no usable msprof_*.db with a TASK table)",
                     dir);
  }
  if (has_split_layout(dir)) {
    char *missing = split_missing_optional(dir);
    rc = add_warning(p, e,
                     missing && strcmp(missing, "none") != 0
                         ? tl_mprintf("warning: using Ascend split SQLite fallback: %s (missing "
                                      "optional tables: %s)",
                                      dir, missing)
                         : tl_mprintf("warning: using Ascend split SQLite fallback: %s", dir));
    free(missing);
    if (rc == TL_OK) rc = add_split_input(p, dir, e);
  }
  return rc;
}

static int scan_dir(tl_profile *p, const char *dir, int depth, tl_err *e);

/* A torch-npu rank capture directory: ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_*.db. */
static int scan_torchnpu(tl_profile *p, const char *capture_dir, tl_err *e) {
  char *out_dir = path_join(capture_dir, "ASCEND_PROFILER_OUTPUT");
  if (!out_dir) return tl_nomem(e);
  tl_names names;
  int rc = list_dir(out_dir, &names, e);
  for (size_t i = 0; rc == TL_OK && i < names.n; i++) {
    if (!starts_with(names.v[i], "ascend_pytorch_profiler") || !ends_with(names.v[i], ".db"))
      continue;
    char *path = path_join(out_dir, names.v[i]);
    if (!path) {
      rc = tl_nomem(e);
      break;
    }
    const tl_family_def *fam;
    if (detect_sqlite(path, &fam, NULL, e))
      rc = TL_ERROR;
    else if (fam == &tl_msprof_family) {
      rc = add_input(p, fam, path, e);
      if (rc == TL_OK) rc = torchnpu_stream_info(p, capture_dir, e);
    }
    free(path);
  }
  tl_names_free(&names);
  free(out_dir);
  return rc;
}

static int is_sqlite_name(const char *name) {
  return ends_with(name, ".db") || ends_with(name, ".sqlite") || ends_with(name, ".sqlite3");
}

static const tl_family_def *file_family(const char *path) {
  for (const tl_family_def *const *f = tl_families; *f; f++)
    for (const char *const *x = (*f)->file_suffixes; x && *x; x++)
      if (ends_with(path, *x)) return *f;
  return NULL;
}

/* Timelines TraceLoom exported (*.perfetto.json[.gz]) look like traces: never input. */
static int is_own_export(const char *name) {
  return ends_with(name, ".perfetto.json") || ends_with(name, ".perfetto.json.gz");
}

static int scan_dir(tl_profile *p, const char *dir, int depth, tl_err *e) {
  if (depth > MAX_DEPTH) return TL_OK;
  char *apo = path_join(dir, "ASCEND_PROFILER_OUTPUT");
  if (!apo) return tl_nomem(e);
  int torchnpu = is_dir(apo);
  free(apo);
  if (torchnpu) return scan_torchnpu(p, dir, e);
  if (starts_with(base_name(dir), "PROF_")) return scan_prof_container(p, dir, e);

  tl_names names;
  if (list_dir(dir, &names, e)) return TL_ERROR;
  int rc = TL_OK;
  for (size_t i = 0; i < names.n && rc == TL_OK; i++) {
    if (names.v[i][0] == '.') continue;
    char *child = path_join(dir, names.v[i]);
    if (!child) {
      rc = tl_nomem(e);
      break;
    }
    if (is_dir(child)) {
      /* The CLI's default output folder is never input. */
      if (strcmp(names.v[i], "traceloom") != 0) rc = scan_dir(p, child, depth + 1, e);
    } else if (is_sqlite_name(names.v[i]) && is_file(child)) {
      tl_err ignore = {0};
      const tl_family_def *fam = NULL;
      detect_sqlite(child, &fam, NULL, &ignore);
      /* Loose files that are not profiles (or not SQLite) are skipped in directory scans;
      ** an explicitly named file reports its error instead (tl_profile_discover). */
      tl_err_clear(&ignore);
      if (fam) {
        rc = add_input(p, fam, child, e);
        if (rc == TL_OK && fam == &tl_msprof_family) rc = adjacent_stream_info(p, child, e);
      }
    } else if (file_family(names.v[i]) && !is_own_export(names.v[i]) && is_file(child)) {
      const tl_family_def *fam = file_family(names.v[i]);
      tl_err ignore = {0};
      if (fam->detect_file(child, &ignore)) rc = add_input(p, fam, child, e);
      tl_err_clear(&ignore);
    }
    free(child);
  }
  tl_names_free(&names);
  return rc;
}

/* ------------------------------------------------------------------ entry point */

/* The messages of a path that holds no profile list what every family looks for. */
static int nothing_found(const char *path, tl_err *e) {
  tl_buf b = {0};
  for (const tl_family_def *const *f = tl_families; *f; f++)
    if ((*f)->layout_hint) tl_buf_printf(&b, "%s%s", b.n ? ", " : "", (*f)->layout_hint);
  int rc = b.oom ? tl_nomem(e)
                 : tl_fail(e, "no supported profile found under input path: %s (looked for %s)",
                           path, b.p);
  tl_buf_free(&b);
  return rc;
}

static int no_profile_tables(const char *path, const char *found, tl_err *e) {
  tl_buf b = {0};
  for (const tl_family_def *const *f = tl_families; *f; f++)
    if ((*f)->detect_hint) tl_buf_printf(&b, "%s%s", b.n ? ", " : "", (*f)->detect_hint);
  int rc = b.oom ? tl_nomem(e)
                 : tl_fail(e,
                           "no supported profile tables in %s: looked for %s, each with at "
                           "least one row; found: %s",
                           path, b.p, found ? found : "?");
  tl_buf_free(&b);
  return rc;
}

static char *absolute_path(const char *path) {
  char *r = realpath(path, NULL);
  if (r) return r;
  return tl_strdup(path);
}

int tl_profile_discover(const char *path, const char *source_kind, tl_profile *p, tl_err *e) {
  memset(p, 0, sizeof *p);
  if (!path || !*path)
    return tl_fail(e, "input path is required: pass an Ascend profiler SQLite DB, Hygon hipprof "
                      "DB, CUDA/Nsight SQLite export, or profile directory");
  const tl_family_def *want = NULL;
  if (source_kind && *source_kind && strcmp(source_kind, "auto") != 0) {
    want = tl_family_by_source_kind(source_kind);
    if (!want) {
      tl_buf b = {0};
      tl_buf_puts(&b, "auto, ");
      tl_family_kinds_list(&b, ", ");
      int rc = b.oom ? tl_nomem(e)
                     : tl_fail(e, "unknown source_kind '%s': expected %s", source_kind, b.p);
      tl_buf_free(&b);
      return rc;
    }
  }
  struct stat st;
  if (stat(path, &st) != 0)
    return tl_fail(e, "profile path does not exist: %s", path);
  p->path = absolute_path(path);
  if (!p->path) return tl_nomem(e);
  int rc = TL_OK;
  if (S_ISDIR(st.st_mode)) {
    if (want == &tl_msprof_split_family) {
      if (!has_split_layout(p->path))
        rc = tl_fail(e,
                     "split SQLite profile is missing required device_*/sqlite/ascend_task.db:"
                     "AscendTask table: %s",
                     p->path);
      else
        rc = add_split_input(p, p->path, e);
    } else {
      rc = scan_dir(p, p->path, 0, e);
    }
    if (rc == TL_OK && p->inputs.n == 0) rc = nothing_found(p->path, e);
  } else if (S_ISREG(st.st_mode) &&
             (file_family(p->path) || (want && want->detect_file))) {
    const tl_family_def *fam = want && want->detect_file ? want : file_family(p->path);
    if (want && want != fam)
      rc = tl_fail(e, "%s is a %s file, not the requested source_kind %s", p->path, fam->name,
                   source_kind);
    else if (!fam->detect_file(p->path, e))
      rc = TL_ERROR;
    else
      rc = add_input(p, fam, p->path, e);
  } else if (S_ISREG(st.st_mode)) {
    char *found = NULL;
    const tl_family_def *fam;
    if (detect_sqlite(p->path, &fam, &found, e)) {
      rc = TL_ERROR;
      nsys_report_hint(p->path, e);
    } else if (!fam) {
      rc = no_profile_tables(p->path, found, e);
    } else if (want && fam != want) {
      rc = tl_fail(e, "%s is a profile of source_kind %s, not the requested source_kind %s", p->path,
                   fam->source_kind, source_kind);
    } else {
      rc = add_input(p, fam, p->path, e);
      if (rc == TL_OK && fam == &tl_msprof_family) {
        /* A torch-npu DB takes its companion from the capture directory's sibling PROF_*. */
        char *dir = tl_strdup(p->path);
        if (!dir) {
          rc = tl_nomem(e);
        } else {
          char *s = strrchr(dir, '/');
          if (s) *s = 0;
          if (strcmp(base_name(dir), "ASCEND_PROFILER_OUTPUT") == 0) {
            s = strrchr(dir, '/');
            if (s) *s = 0;
            rc = torchnpu_stream_info(p, dir, e);
          } else {
            rc = adjacent_stream_info(p, p->path, e);
          }
          free(dir);
        }
      }
    }
    free(found);
  } else {
    rc = tl_fail(e, "profile path is neither a file nor a directory: %s", path);
  }
  if (rc == TL_OK && want) {
    for (size_t i = 0; i < p->inputs.n; i++)
      if (p->inputs.v[i].family != want) {
        rc = tl_fail(e, "%s is a profile of source_kind %s, not the requested source_kind %s",
                     p->inputs.v[i].path, tl_family_source_kind(p->inputs.v[i].family),
                     source_kind);
        break;
      }
  }
  if (rc != TL_OK) tl_profile_free(p);
  return rc;
}

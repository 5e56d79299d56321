/*
** clock_markers.c: reads a clock-marker TSV (clock_markers.h) for the idle-evidence clock fit.
** The file is an input like a profile: opened read-only, never modified, and rejected whole
** when one line is malformed.
*/
#include "source/clock_markers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const HEADER[] = {"marker_id", "host_before_ns", "host_after_ns",
                                     "device_timestamp_ns", "host_pid", "host_tid", "device_id",
                                     "stream_id", "connection_id", "call_site", "return_status"};
#define NFIELDS 11

void tl_marker_rows_free(tl_marker_row *rows, size_t n) {
  for (size_t i = 0; rows && i < n; i++) free(rows[i].marker_id), free(rows[i].call_site);
  free(rows);
}

/* Splits line at tabs into at most NFIELDS fields (in place); returns the count. */
static int split(char *line, char **f) {
  int n = 0;
  for (char *p = line;; p++) {
    if (n < NFIELDS + 1) f[n] = p;
    n++;
    char *tab = strchr(p, '\t');
    if (!tab) break;
    *tab = 0;
    p = tab;
  }
  return n;
}

static int parse_i64(const char *s, int64_t *v, int empty_ok) {
  if (!*s) {
    *v = -1;
    return empty_ok ? 0 : -1;
  }
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno || *end) return -1;
  *v = x;
  return 0;
}

int tl_marker_rows_read(const char *path, tl_marker_row **rows, size_t *n, tl_err *e) {
  *rows = NULL, *n = 0;
  FILE *f = fopen(path, "r");
  if (!f) return tl_fail(e, "cannot open clock markers %s: %s", path, strerror(errno));
  char *line = NULL;
  size_t cap = 0, have = 0;
  ssize_t len;
  int lineno = 0, rc = TL_OK;
  while (rc == TL_OK && (len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    char *fld[NFIELDS + 1];
    int nf = split(line, fld);
    if (lineno == 1) {
      int ok = nf == NFIELDS;
      for (int k = 0; ok && k < NFIELDS; k++) ok = strcmp(fld[k], HEADER[k]) == 0;
      if (!ok)
        rc = tl_fail(e, "clock markers %s, line 1: expected the header marker_id, host_before_ns, "
                        "host_after_ns, device_timestamp_ns, host_pid, host_tid, device_id, "
                        "stream_id, connection_id, call_site, return_status (tab-separated)", path);
      continue;
    }
    if (len == 0) continue;
    if (nf != NFIELDS) {
      rc = tl_fail(e, "clock markers %s, line %d: expected %d tab-separated fields, found %d", path,
                   lineno, NFIELDS, nf);
      break;
    }
    if (*n == have) {
      size_t ncap = have ? 2 * have : 64;
      tl_marker_row *p = realloc(*rows, ncap * sizeof *p);
      if (!p) {
        rc = tl_nomem(e);
        break;
      }
      *rows = p, have = ncap;
    }
    tl_marker_row *r = &(*rows)[*n];
    memset(r, 0, sizeof *r);
    r->line = lineno;
    int64_t *num[] = {NULL, &r->host_before, &r->host_after, &r->device_ts, &r->host_pid,
                      &r->host_tid, &r->device_id, &r->stream_id, &r->connection_id, NULL,
                      &r->return_status};
    for (int k = 1; rc == TL_OK && k < NFIELDS; k++)
      if (num[k] && parse_i64(fld[k], num[k], k == 7 || k == 8))
        rc = tl_fail(e, "clock markers %s, line %d, field %s: expected an integer, found \"%s\"",
                     path, lineno, HEADER[k], fld[k]);
    r->marker_id = strdup(fld[0]);
    r->call_site = strdup(fld[9]);
    (*n)++;
    if (rc == TL_OK && (!r->marker_id || !r->call_site)) rc = tl_nomem(e);
  }
  if (rc == TL_OK && ferror(f)) rc = tl_fail(e, "reading clock markers %s: %s", path, strerror(errno));
  if (rc == TL_OK && lineno == 0) rc = tl_fail(e, "clock markers %s is empty: expected a header line", path);
  free(line);
  fclose(f);
  if (rc) tl_marker_rows_free(*rows, *n), *rows = NULL, *n = 0;
  return rc;
}

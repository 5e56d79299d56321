/*
** analyze.h: the analysis driver behind traceloom_analyze() and the CLI.
**
**   read profile -> normalize (trace) -> relate -> ... -> publish
**
** Options arrive as a JSON object (unknown keys are an error) and are recorded in
** canonical form in traceloom_metadata.analysis_options.
*/
#ifndef TL_ANALYZE_H
#define TL_ANALYZE_H

#include "sqlite_api.h"
#include "err.h"

#include <stddef.h>

typedef struct tl_options {
  int threads;          /* worker threads (results never depend on it) */
  char *source_kind;    /* "auto" or a source kind */
  int progress;         /* -1 = auto (stderr is a TTY), 0 = off, 1 = on */
  char *rules_config;   /* rules config file or bundled name; NULL = built-in rules */
  int embed_raw;        /* copy the raw source tables into the analysis database */
  char **context;       /* scheduler context JSONL paths (option "context") */
  size_t ncontext;
  int no_graph_replay;  /* {"graph_replay": false}: skip exact graph replay reconstruction */
  char *idle_evidence;  /* option "idle_evidence" as compact JSON, NULL when absent (ext/idle) */
} tl_options;

/* Parses options_json (NULL or "" = defaults). *canonical (malloc'd) is the effective
** options as canonical JSON, threads excluded (they never change results). */
int tl_options_parse(const char *options_json, tl_options *o, char **canonical, tl_err *e);
void tl_options_free(tl_options *o);

/* Analyses the profile at path and publishes into db's main database. On success
** *summary (malloc'd) is a one-line summary. On error nothing changed in db. */
int tl_analyze(sqlite3 *db, const char *path, const char *options_json, char **summary,
               tl_err *e);

#endif

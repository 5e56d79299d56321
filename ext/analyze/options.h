/*
** options.h: the options of one analysis, parsed from the JSON object of
** traceloom_analyze(path, options) and the CLI's --options.
**
**   tl_options o;
**   char *canonical;
**   if (tl_options_parse("{\"threads\": 4, \"graph_replay\": false}", &o, &canonical, e))
**     return TL_ERROR;                    (unknown keys and wrong types are errors)
**   ... o.threads, o.no_graph_replay ...
**   free(canonical);                      ({"source_kind":"auto","graph_replay":false})
**   tl_options_free(&o);
**
** The canonical form is what traceloom_metadata.analysis_options records: every option that
** can change a result, threads and progress excluded.
*/
#ifndef TL_OPTIONS_H
#define TL_OPTIONS_H

#include "util/err.h"

#include <stddef.h>

typedef struct tl_options {
  int threads;          /* worker threads (results never depend on it) */
  char *source_kind;    /* "auto" or a source kind */
  int progress;         /* -1 = auto (stderr is a TTY), 0 = off, 1 = on */
  char *rules_config;   /* rules config file or bundled name; NULL = built-in rules */
  int embed_raw;        /* copy the raw source tables into the analysis database */
  int text_id_indexes;  /* index the event and anchor text ids (option "text_id_indexes") */
  int evidence_role_structure; /* store the evidence roles' structure rows (option
                                  "evidence_role_structure") */
  char **context;       /* scheduler context JSONL paths (option "context") */
  size_t ncontext;
  int no_graph_replay;  /* {"graph_replay": false}: skip exact graph replay reconstruction */
  char *idle_evidence;  /* option "idle_evidence" as compact JSON, NULL when absent (ext/idle) */
  char *step_markers;   /* host annotations that partition the structure (fnmatch pattern);
                           NULL = ProfilerStep#*, "" = none (option "step_markers") */
} tl_options;

/* Parses options_json (NULL or "" = defaults). *canonical (malloc'd) is the effective
** options as canonical JSON. On error o is empty (nothing to free) and *canonical NULL. */
int tl_options_parse(const char *options_json, tl_options *o, char **canonical, tl_err *e);
void tl_options_free(tl_options *o);

#endif

/*
** analyze.h: the analysis driver behind traceloom_analyze() and the CLI.
**
**   discover -> read (trace) -> relate -> replay -> context -> classify -> anchors
**     -> cost -> recover -> publish        (the stage table of analyze.c)
**
** Options arrive as a JSON object (options.h: unknown keys are an error) and are recorded
** in canonical form in traceloom_metadata.analysis_options.
*/
#ifndef TL_ANALYZE_H
#define TL_ANALYZE_H

#include "util/sqlite_api.h"
#include "util/err.h"
#include "analyze/options.h"

#include <stddef.h>

/* Analyses the profile at path and publishes into db's main database. On success
** *summary (malloc'd) is a one-line summary. On error nothing changed in db. */
int tl_analyze(sqlite3 *db, const char *path, const char *options_json, char **summary,
               tl_err *e);

/* What the CLI asks of an analysis besides publishing it: the loop tree Markdown
** (traceloom_loop_tree with loop_tree_options, the same bytes), rendered from the trees in
** memory on a thread while the rest of the analysis is published (in line with the option
** threads 1), instead of read back from the published tables afterwards. */
typedef struct tl_analyze_extra {
  const char *loop_tree_options; /* traceloom_loop_tree's options JSON; NULL: its defaults */
  char *loop_tree_md;            /* out, malloc'd; NULL when the analysis failed, the
                                    Markdown could not be rendered, or the trees' rows would
                                    not fit their budget of memory (analyze.c: read it back
                                    then) */
  char *loop_tree_summary;       /* out, malloc'd: the CLI's short version of the same trees
                                    (tl_loop_tree_summary); NULL with loop_tree_md */
} tl_analyze_extra;

/* tl_analyze, with extra (NULL: none). */
int tl_analyze_ex(sqlite3 *db, const char *path, const char *options_json, tl_analyze_extra *extra,
                  char **summary, tl_err *e);

#endif

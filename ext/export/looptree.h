/*
** looptree.h: the loop-tree Markdown report over a published analysis.
*/
#ifndef TL_LOOPTREE_H
#define TL_LOOPTREE_H

#include "util/sqlite_api.h"
#include "util/err.h"

/* Renders the loop tree of the analysis in db's main database; *out is malloc'd. */
int tl_loop_tree(sqlite3 *db, const char *options_json, char **out, tl_err *e);

#endif

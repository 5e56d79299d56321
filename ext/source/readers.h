/*
** readers.h: what the files of ext/source share among themselves (not for other stages:
** they use source.h). The evidence-beyond-rows readers of a family live in their own file
** and are wired into its tl_family_def through these declarations.
*/
#ifndef TL_READERS_H
#define TL_READERS_H

#include "source/source.h"

/* nsys_graph.c: tl_family_def.cuda_graph_facts of Nsight exports. */
int tl_nsys_cuda_graph_facts(const tl_profile *p, int db_idx, int want_graph_trace,
                             tl_cuda_graph_facts *out, tl_err *e);

/* msprof_marks.c: tl_family_def.host_marks of the Ascend families (PYTORCH_API). */
int tl_msprof_host_marks(const tl_profile *p, size_t file, const char *marker_prefix,
                         tl_host_marks *out, tl_err *e);

#endif

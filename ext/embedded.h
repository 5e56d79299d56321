/*
** embedded.h: text files compiled into the extension (tools/embed.sh).
**
** The SQL files of sql/schema and sql/views (the published schema) and the YAML files of
** rules and configs (default rule manifests), so a bare `.load` needs no file on disk.
** Names are the repository-relative paths; the table ends with a NULL name.
*/
#ifndef TL_EMBEDDED_H
#define TL_EMBEDDED_H

#include <stddef.h>

typedef struct tl_embedded_file {
  const char *name;
  const char *text;
  size_t len;
} tl_embedded_file;

extern const tl_embedded_file tl_embedded_files[];

/* The embedded file with that repository-relative name, or NULL. */
const tl_embedded_file *tl_embedded_find(const char *name);

#endif

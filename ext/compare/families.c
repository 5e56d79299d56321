/*
** families.c: the semantic families of structural symbols (rules/compare_families.yaml).
**
**   schema: traceloom-compare-families-v1
**   families:
**     - family: matmul
**       contains: [matmul, gemm, linear]      # substrings, ASCII case-insensitive
**       equals: [aten::mm, aten::addmm]       # whole symbols, ASCII case-insensitive
**
** A symbol's family is the first entry that matches; none: no family (-1). The comparison
** (compare.c) falls back to families when two runs name one operation differently, so an
** Ascend run and a CUDA run of the same model line up. The table is data, not code: the
** built-in manifest is compiled in (tools/embed.sh), the option "families" replaces it.
*/
#include "compare/compare_int.h"
#include "embedded.h"
#include "classify/yamldoc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FAMILIES_SCHEMA "traceloom-compare-families-v1"
#define FAMILIES_BUILTIN "rules/compare_families.yaml"
#define FAMILIES_MAX_BYTES (1 << 20)

typedef struct family_pattern {
  char *text;
  int whole; /* 1: equals, 0: contains */
} family_pattern;

struct tl_cmp_families {
  TL_VEC(char *) names;
  TL_VEC(family_pattern) patterns;
  TL_VEC(int) pattern_family; /* parallel to patterns */
  char *source;               /* the manifest's name, for messages and the run table */
};

void tl_cmp_families_free(tl_cmp_families *f) {
  if (!f) return;
  for (size_t i = 0; i < f->names.n; i++) free(f->names.v[i]);
  for (size_t i = 0; i < f->patterns.n; i++) free(f->patterns.v[i].text);
  TL_VEC_FREE(&f->names);
  TL_VEC_FREE(&f->patterns);
  TL_VEC_FREE(&f->pattern_family);
  free(f->source);
  free(f);
}

/* ASCII case-insensitive substring search. */
static int contains_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  if (n == 0) return 0;
  for (const char *p = hay; *p; p++)
    if (strncasecmp(p, needle, n) == 0) return 1;
  return 0;
}

int tl_cmp_family_of(const tl_cmp_families *f, const char *symbol) {
  if (!f || !symbol || !*symbol) return -1;
  for (size_t i = 0; i < f->patterns.n; i++) {
    const family_pattern *p = &f->patterns.v[i];
    if (p->whole ? strcasecmp(symbol, p->text) == 0 : contains_ci(symbol, p->text))
      return f->pattern_family.v[i];
  }
  return -1;
}

const char *tl_cmp_family_name(const tl_cmp_families *f, int id) {
  return f && id >= 0 && (size_t)id < f->names.n ? f->names.v[id] : NULL;
}

size_t tl_cmp_family_count(const tl_cmp_families *f) { return f ? f->names.n : 0; }

const char *tl_cmp_families_source(const tl_cmp_families *f) { return f ? f->source : NULL; }

/* One `contains` / `equals` list of a family entry. */
static int add_patterns(tl_cmp_families *f, const char *src, const tl_ynode *list, int whole,
                        int family, tl_err *e) {
  if (!list) return TL_OK;
  if (list->type != TL_Y_SEQ)
    return tl_fail(e, "%s:%d: \"%s\" must be a sequence of strings, not a %s", src, list->line,
                   whole ? "equals" : "contains", tl_ytype_name(list->type));
  for (size_t i = 0; i < list->n; i++) {
    const tl_ynode *item = list->items[i];
    if (item->type != TL_Y_SCALAR || !item->text[0])
      return tl_fail(e, "%s:%d: each pattern must be a non-empty string", src, item->line);
    family_pattern p = {tl_strdup(item->text), whole};
    if (!p.text || TL_VEC_PUSH(&f->patterns, p)) return free(p.text), tl_nomem(e);
    if (TL_VEC_PUSH(&f->pattern_family, family)) return tl_nomem(e);
  }
  return TL_OK;
}

static int parse_manifest(tl_cmp_families *f, const char *src, const char *text, size_t len,
                          tl_err *e) {
  tl_ynode *root;
  if (tl_yaml_parse(src, text, len, &root, e)) return TL_ERROR;
  int rc = TL_OK;
  const tl_ynode *schema = tl_ymap_get(root, "schema");
  const tl_ynode *list = tl_ymap_get(root, "families");
  if (root->type != TL_Y_MAP)
    rc = tl_fail(e, "%s:%d: a families manifest is a mapping with schema and families", src,
                 root->line);
  else if (!schema || schema->type != TL_Y_SCALAR || strcmp(schema->text, FAMILIES_SCHEMA) != 0)
    rc = tl_fail(e, "%s:%d: schema must be %s", src, schema ? schema->line : root->line,
                 FAMILIES_SCHEMA);
  else if (!list || list->type != TL_Y_SEQ)
    rc = tl_fail(e, "%s:%d: families must be a sequence of {family, contains, equals}", src,
                 list ? list->line : root->line);
  for (size_t k = 0; rc == TL_OK && k < root->n; k++)
    if (strcmp(root->keys[k], "schema") != 0 && strcmp(root->keys[k], "families") != 0)
      rc = tl_fail(e, "%s:%d: unknown key \"%s\" (expected schema, families)", src,
                   root->key_lines[k], root->keys[k]);
  for (size_t i = 0; rc == TL_OK && i < list->n; i++) {
    const tl_ynode *ent = list->items[i];
    const tl_ynode *name = tl_ymap_get(ent, "family");
    if (ent->type != TL_Y_MAP || !name || name->type != TL_Y_SCALAR || !name->text[0]) {
      rc = tl_fail(e, "%s:%d: each family needs a \"family\" name", src, ent->line);
      break;
    }
    for (size_t k = 0; rc == TL_OK && k < ent->n; k++)
      if (strcmp(ent->keys[k], "family") && strcmp(ent->keys[k], "contains") &&
          strcmp(ent->keys[k], "equals"))
        rc = tl_fail(e, "%s:%d: unknown key \"%s\" (expected family, contains, equals)", src,
                     ent->key_lines[k], ent->keys[k]);
    for (size_t j = 0; rc == TL_OK && j < f->names.n; j++)
      if (strcmp(f->names.v[j], name->text) == 0)
        rc = tl_fail(e, "%s:%d: family \"%s\" is listed twice", src, name->line, name->text);
    if (rc) break;
    char *copy = tl_strdup(name->text);
    if (!copy || TL_VEC_PUSH(&f->names, copy)) {
      free(copy);
      rc = tl_nomem(e);
      break;
    }
    int id = (int)f->names.n - 1;
    rc = add_patterns(f, src, tl_ymap_get(ent, "equals"), 1, id, e);
    if (rc == TL_OK) rc = add_patterns(f, src, tl_ymap_get(ent, "contains"), 0, id, e);
  }
  tl_ynode_free(root);
  return rc;
}

static int read_text(const char *path, char **out, size_t *len, tl_err *e) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return tl_fail(e, "cannot open families manifest %s: %s", path, strerror(errno));
  char *buf = malloc(FAMILIES_MAX_BYTES + 1);
  size_t n = buf ? fread(buf, 1, FAMILIES_MAX_BYTES + 1, fp) : 0;
  int bad = buf && ferror(fp);
  fclose(fp);
  if (!buf) return tl_nomem(e);
  if (bad || n > FAMILIES_MAX_BYTES) {
    free(buf);
    return tl_fail(e, bad ? "cannot read families manifest %s"
                          : "families manifest %s is larger than 1 MiB", path);
  }
  buf[n] = 0;
  *out = buf, *len = n;
  return TL_OK;
}

int tl_cmp_families_load(const char *path, tl_cmp_families **out, tl_err *e) {
  *out = NULL;
  tl_cmp_families *f = calloc(1, sizeof *f);
  if (!f) return tl_nomem(e);
  int rc;
  if (path) {
    char *text = NULL;
    size_t len = 0;
    f->source = tl_strdup(path);
    rc = f->source ? read_text(path, &text, &len, e) : tl_nomem(e);
    if (rc == TL_OK) rc = parse_manifest(f, path, text, len, e);
    free(text);
  } else {
    const tl_embedded_file *b = tl_embedded_find(FAMILIES_BUILTIN);
    f->source = tl_strdup(FAMILIES_BUILTIN);
    rc = !f->source ? tl_nomem(e)
         : b        ? parse_manifest(f, FAMILIES_BUILTIN, b->text, b->len, e)
                    : tl_fail(e, "the built-in %s is missing from this build", FAMILIES_BUILTIN);
  }
  if (rc != TL_OK) {
    tl_cmp_families_free(f);
    return rc;
  }
  *out = f;
  return TL_OK;
}

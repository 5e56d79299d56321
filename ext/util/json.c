/*
** json.c: strict RFC 8259 JSON parser and canonical writer, see json.h.
**
** Recursive descent with an explicit nesting limit, so hostile input cannot exhaust the C stack.
** All nodes, strings and number tokens of one document live in an arena freed at once by
** tl_json_free. Container members are first collected on parser-owned scratch stacks and copied
** into the arena as one contiguous array when the container closes, so each array or object
** costs a single arena allocation and members stay in document order.
**
** Numbers keep their token text: integers are converted exactly from the digits (timestamps are
** int64 nanoseconds and must not round through double), and the writer reproduces them as written.
*/
#include "util/json.h"

#include <locale.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/vec.h"

#define TL_JSON_MAX_DEPTH 256

typedef struct json_key {
  const char *s; /* NUL-terminated; may also contain NUL, len is authoritative */
  size_t len;
} json_key;

struct tl_json {
  tl_json_type type;
  int boolean;
  size_t n;            /* string length, number token length, or member count */
  const char *text;    /* decoded string or number token, NUL-terminated */
  const tl_json *items; /* array elements or object values, n of them */
  const json_key *keys; /* object keys, parallel to items */
};

typedef struct arena_block {
  struct arena_block *next;
  size_t used, cap;
  max_align_t data[]; /* cap bytes */
} arena_block;

/* The root node is the first member, so the pointer handed out is also the document's. */
typedef struct json_doc {
  tl_json root;
  arena_block *arena;
} json_doc;

typedef struct parser {
  const char *s;
  size_t len, pos;
  size_t start; /* after a byte order mark: column 1 of line 1 */
  arena_block *arena;
  TL_VEC(tl_json) vals; /* members of the containers being parsed */
  TL_VEC(json_key) keys;
  TL_VEC(char) str; /* the string being decoded */
  tl_err *e;
} parser;

/* ---- arena ---- */

static void *arena_alloc(parser *p, size_t size) {
  const size_t align = alignof(max_align_t);
  size = (size + align - 1) & ~(align - 1);
  arena_block *b = p->arena;
  if (!b || b->cap - b->used < size) {
    size_t cap = b ? b->cap * 2 : 1024;
    if (cap > ((size_t)1 << 20)) cap = (size_t)1 << 20;
    if (cap < size) cap = size;
    b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->cap = cap;
    b->used = 0;
    b->next = p->arena;
    p->arena = b;
  }
  void *mem = (char *)b->data + b->used;
  b->used += size;
  return mem;
}

static void arena_free(arena_block *b) {
  while (b) {
    arena_block *next = b->next;
    free(b);
    b = next;
  }
}

static const char *arena_strndup(parser *p, const char *s, size_t n) {
  char *d = arena_alloc(p, n + 1);
  if (!d) return NULL;
  if (n) memcpy(d, s, n);
  d[n] = 0;
  return d;
}

/* ---- errors ---- */

static int fail_at(parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Line and column are only computed here, so the happy path never counts newlines. */
static int fail_at(parser *p, size_t at, const char *fmt, ...) {
  size_t line = 1, line_start = p->start;
  for (size_t i = p->start; i < at; i++) {
    if (p->s[i] == '\n') line++, line_start = i + 1;
  }
  size_t column = 1;
  for (size_t i = line_start; i < at; i++) {
    if (((unsigned char)p->s[i] & 0xC0) != 0x80) column++; /* count code points, not bytes */
  }
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return tl_fail(p->e, "invalid JSON at line %zu, column %zu: %s", line, column, what);
}

static int nomem(parser *p) { return tl_nomem(p->e); }

/* ---- lexing helpers ---- */

static void skip_ws(parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
    p->pos++;
  }
}

/* Length of the well-formed UTF-8 sequence at s[0..avail) whose lead byte is >= 0x80, or 0.
** Rejects overlong forms, UTF-16 surrogates and code points above U+10FFFF (Unicode table 3-7). */
static size_t utf8_len(const unsigned char *s, size_t avail) {
  unsigned char c = s[0];
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else return 0;
  if (avail < n || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
  }
  return n;
}

static int hex4(const char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return -1;
  }
  *out = v;
  return 0;
}

static int put_utf8(parser *p, unsigned cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) u[0] = (char)cp, n = 1;
  else if (cp < 0x800) {
    u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
  } else if (cp < 0x10000) {
    u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
  } else {
    u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
  }
  if (TL_VEC_RESERVE(&p->str, p->str.n + n)) return nomem(p);
  memcpy(p->str.v + p->str.n, u, n);
  p->str.n += n;
  return TL_OK;
}

static int append_str(parser *p, const char *s, size_t n) {
  if (!n) return TL_OK;
  if (TL_VEC_RESERVE(&p->str, p->str.n + n)) return nomem(p);
  memcpy(p->str.v + p->str.n, s, n);
  p->str.n += n;
  return TL_OK;
}

/* Decodes the string literal at p->pos (the opening quote) into an arena copy. */
static int parse_string(parser *p, const char **out, size_t *out_len) {
  const size_t open = p->pos;
  const unsigned char *s = (const unsigned char *)p->s;
  size_t i = open + 1, run = i; /* run: start of bytes not yet copied */
  p->str.n = 0;
  for (;;) {
    if (i >= p->len) return fail_at(p, open, "unterminated string");
    unsigned char c = s[i];
    if (c == '"') break;
    if (c < 0x20) return fail_at(p, i, "control character U+%04X in string must be escaped", c);
    if (c < 0x80 && c != '\\') {
      i++;
      continue;
    }
    if (c >= 0x80) {
      size_t n = utf8_len(s + i, p->len - i);
      if (!n) return fail_at(p, i, "invalid UTF-8");
      i += n;
      continue;
    }
    /* backslash escape */
    if (append_str(p, p->s + run, i - run)) return TL_ERROR;
    const size_t esc = i;
    if (i + 1 >= p->len) return fail_at(p, open, "unterminated string");
    char x = p->s[i + 1];
    const char *simple = NULL;
    switch (x) {
      case '"': simple = "\""; break;
      case '\\': simple = "\\"; break;
      case '/': simple = "/"; break;
      case 'b': simple = "\b"; break;
      case 'f': simple = "\f"; break;
      case 'n': simple = "\n"; break;
      case 'r': simple = "\r"; break;
      case 't': simple = "\t"; break;
      case 'u': break;
      default:
        if (x > 0x20 && x < 0x7F) return fail_at(p, esc, "invalid escape '\\%c'", x);
        return fail_at(p, esc, "invalid escape sequence");
    }
    if (simple) {
      if (append_str(p, simple, 1)) return TL_ERROR;
      i += 2;
    } else {
      unsigned cp;
      if (p->len - i < 6 || hex4(p->s + i + 2, &cp)) return fail_at(p, esc, "invalid \\u escape");
      i += 6;
      if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return fail_at(p, esc, "invalid \\u escape: unpaired low surrogate \\u%04x", cp);
      }
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        unsigned lo;
        if (p->len - i < 6 || p->s[i] != '\\' || p->s[i + 1] != 'u' || hex4(p->s + i + 2, &lo) ||
            lo < 0xDC00 || lo > 0xDFFF) {
          return fail_at(p, esc, "invalid \\u escape: unpaired high surrogate \\u%04x", cp);
        }
        i += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      }
      if (put_utf8(p, cp)) return TL_ERROR;
    }
    run = i;
  }
  const char *text;
  size_t n;
  if (p->str.n == 0) { /* no escapes: copy straight from the input */
    text = p->s + open + 1, n = i - open - 1;
  } else {
    if (append_str(p, p->s + run, i - run)) return TL_ERROR;
    text = p->str.v, n = p->str.n;
  }
  const char *copy = arena_strndup(p, text, n);
  if (!copy) return nomem(p);
  *out = copy;
  *out_len = n;
  p->pos = i + 1;
  return TL_OK;
}

static int is_digit(parser *p, size_t i) { return i < p->len && p->s[i] >= '0' && p->s[i] <= '9'; }

static int parse_number(parser *p, tl_json *out) {
  const size_t begin = p->pos;
  size_t i = begin;
  if (p->s[i] == '-') {
    i++;
    if (i < p->len && p->s[i] == 'I') return fail_at(p, begin, "NaN and Infinity are not valid JSON");
    if (!is_digit(p, i)) return fail_at(p, i, "expected a digit after '-'");
  }
  if (p->s[i] == '0') {
    i++;
    if (is_digit(p, i)) return fail_at(p, begin, "leading zeros are not allowed in numbers");
  } else {
    while (is_digit(p, i)) i++;
  }
  if (i < p->len && p->s[i] == '.') {
    i++;
    if (!is_digit(p, i)) return fail_at(p, i, "expected a digit after '.'");
    while (is_digit(p, i)) i++;
  }
  if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
    i++;
    if (i < p->len && (p->s[i] == '+' || p->s[i] == '-')) i++;
    if (!is_digit(p, i)) return fail_at(p, i, "expected a digit in the exponent");
    while (is_digit(p, i)) i++;
  }
  out->type = TL_JSON_NUMBER;
  out->n = i - begin;
  out->text = arena_strndup(p, p->s + begin, out->n);
  if (!out->text) return nomem(p);
  p->pos = i;
  return TL_OK;
}

static int match_word(parser *p, const char *w) {
  size_t n = strlen(w);
  return p->len - p->pos >= n && memcmp(p->s + p->pos, w, n) == 0;
}

/* ---- duplicate keys ---- */

/* Open-addressing set of key indices (relative to the object's first key), used only once an
** object is large enough that comparing each new key with all earlier ones would be quadratic. */
typedef struct keyset {
  size_t *slot; /* index + 1; 0 = empty */
  size_t cap;   /* power of two */
  size_t count;
} keyset;

#define KEYSET_FROM 16 /* below this many keys a linear scan is cheaper */

static uint64_t key_hash(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3u;
  return h;
}

static int key_eq(const json_key *a, const json_key *b) {
  return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
}

/* Returns 1 when keys[idx] equals an earlier key of the object, 0 when added, -1 on OOM. */
static int keyset_add(keyset *ks, const json_key *keys, size_t idx) {
  if ((ks->count + 1) * 2 > ks->cap) {
    size_t ncap = ks->cap ? ks->cap * 2 : 64;
    size_t *ns = calloc(ncap, sizeof *ns);
    if (!ns) return -1;
    for (size_t i = 0; i < ks->cap; i++) {
      if (!ks->slot[i]) continue;
      const json_key *k = &keys[ks->slot[i] - 1];
      size_t h = (size_t)key_hash(k->s, k->len) & (ncap - 1);
      while (ns[h]) h = (h + 1) & (ncap - 1);
      ns[h] = ks->slot[i];
    }
    free(ks->slot);
    ks->slot = ns, ks->cap = ncap;
  }
  size_t h = (size_t)key_hash(keys[idx].s, keys[idx].len) & (ks->cap - 1);
  while (ks->slot[h]) {
    if (key_eq(&keys[ks->slot[h] - 1], &keys[idx])) return 1;
    h = (h + 1) & (ks->cap - 1);
  }
  ks->slot[h] = idx + 1;
  ks->count++;
  return 0;
}

/* Checks the newest key of the object whose keys start at p->keys.v[kbase]. */
static int check_duplicate(parser *p, size_t kbase, keyset *ks, size_t key_pos) {
  const json_key *keys = p->keys.v + kbase;
  size_t idx = p->keys.n - kbase - 1;
  int dup = 0;
  if (idx < KEYSET_FROM) {
    for (size_t i = 0; i < idx && !dup; i++) dup = key_eq(&keys[i], &keys[idx]);
  } else {
    if (ks->count == 0) { /* switching from linear scans: index the earlier keys */
      for (size_t i = 0; i < idx; i++) {
        if (keyset_add(ks, keys, i) < 0) return nomem(p);
      }
    }
    dup = keyset_add(ks, keys, idx);
    if (dup < 0) return nomem(p);
  }
  if (!dup) return TL_OK;
  tl_buf quoted = {0};
  size_t show = keys[idx].len > 64 ? 64 : keys[idx].len;
  tl_buf_json_string(&quoted, keys[idx].s, show);
  int rc = fail_at(p, key_pos, "duplicate key %s%s", quoted.oom ? "" : quoted.p,
                   show < keys[idx].len ? " (truncated)" : "");
  tl_buf_free(&quoted);
  return rc;
}

/* ---- values ---- */

static int parse_value(parser *p, int depth, tl_json *out);

/* Moves the members pushed since vbase/kbase into one arena array and pops them. */
static int close_container(parser *p, tl_json *out, size_t vbase, size_t kbase, int with_keys) {
  size_t n = p->vals.n - vbase;
  out->n = n;
  if (n) {
    tl_json *items = arena_alloc(p, n * sizeof *items);
    if (!items) return nomem(p);
    memcpy(items, p->vals.v + vbase, n * sizeof *items);
    out->items = items;
    if (with_keys) {
      json_key *keys = arena_alloc(p, n * sizeof *keys);
      if (!keys) return nomem(p);
      memcpy(keys, p->keys.v + kbase, n * sizeof *keys);
      out->keys = keys;
    }
  }
  p->vals.n = vbase;
  p->keys.n = kbase;
  return TL_OK;
}

static int parse_array(parser *p, int depth, tl_json *out) {
  const size_t vbase = p->vals.n;
  out->type = TL_JSON_ARRAY;
  p->pos++; /* '[' */
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == ']') {
    p->pos++;
    return TL_OK;
  }
  for (;;) {
    tl_json item;
    if (parse_value(p, depth, &item)) return TL_ERROR;
    if (TL_VEC_PUSH(&p->vals, item)) return nomem(p);
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == ']') {
      p->pos++;
      return close_container(p, out, vbase, p->keys.n, 0);
    }
    return fail_at(p, p->pos, "expected ',' or ']'");
  }
}

static int parse_object_members(parser *p, int depth, tl_json *out, keyset *ks) {
  const size_t vbase = p->vals.n, kbase = p->keys.n;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == '}') {
    p->pos++;
    return TL_OK;
  }
  for (int first = 1;; first = 0) {
    if (p->pos >= p->len || p->s[p->pos] != '"') {
      return fail_at(p, p->pos, first ? "expected a string key or '}'" : "expected a string key");
    }
    const size_t key_pos = p->pos;
    json_key key;
    if (parse_string(p, &key.s, &key.len)) return TL_ERROR;
    if (TL_VEC_PUSH(&p->keys, key)) return nomem(p);
    if (check_duplicate(p, kbase, ks, key_pos)) return TL_ERROR;
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != ':') return fail_at(p, p->pos, "expected ':'");
    p->pos++;
    tl_json value;
    if (parse_value(p, depth, &value)) return TL_ERROR;
    if (TL_VEC_PUSH(&p->vals, value)) return nomem(p);
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      p->pos++;
      skip_ws(p);
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == '}') {
      p->pos++;
      return close_container(p, out, vbase, kbase, 1);
    }
    return fail_at(p, p->pos, "expected ',' or '}'");
  }
}

static int parse_object(parser *p, int depth, tl_json *out) {
  out->type = TL_JSON_OBJECT;
  p->pos++; /* '{' */
  keyset ks = {0};
  int rc = parse_object_members(p, depth, out, &ks);
  free(ks.slot);
  return rc;
}

/* depth: containers already open around this value. */
static int parse_value(parser *p, int depth, tl_json *out) {
  memset(out, 0, sizeof *out);
  skip_ws(p);
  if (p->pos >= p->len) return fail_at(p, p->pos, "expected a value");
  char c = p->s[p->pos];
  switch (c) {
    case '{':
    case '[':
      if (depth >= TL_JSON_MAX_DEPTH) {
        return fail_at(p, p->pos, "nesting deeper than %d", TL_JSON_MAX_DEPTH);
      }
      return c == '{' ? parse_object(p, depth + 1, out) : parse_array(p, depth + 1, out);
    case '"':
      out->type = TL_JSON_STRING;
      return parse_string(p, &out->text, &out->n);
    case 't':
    case 'f':
    case 'n': {
      const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
      if (!match_word(p, word)) return fail_at(p, p->pos, "expected a value");
      out->type = c == 'n' ? TL_JSON_NULL : TL_JSON_BOOL;
      out->boolean = c == 't';
      p->pos += strlen(word);
      return TL_OK;
    }
    default:
      if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p, out);
      if (match_word(p, "NaN") || match_word(p, "Infinity")) {
        return fail_at(p, p->pos, "NaN and Infinity are not valid JSON");
      }
      return fail_at(p, p->pos, "expected a value");
  }
}

int tl_json_parse(const char *text, size_t len, tl_json **out, tl_err *e) {
  *out = NULL;
  parser p = {.s = text, .len = len, .e = e};
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p.start = p.pos = 3;
  tl_json root;
  int rc = parse_value(&p, 0, &root);
  if (rc == TL_OK) {
    skip_ws(&p);
    if (p.pos < p.len) rc = fail_at(&p, p.pos, "trailing characters after the value");
  }
  json_doc *doc = NULL;
  if (rc == TL_OK) {
    doc = malloc(sizeof *doc);
    if (!doc) rc = tl_nomem(e);
  }
  TL_VEC_FREE(&p.vals);
  TL_VEC_FREE(&p.keys);
  TL_VEC_FREE(&p.str);
  if (rc != TL_OK) {
    arena_free(p.arena);
    return TL_ERROR;
  }
  doc->root = root;
  doc->arena = p.arena;
  *out = &doc->root;
  return TL_OK;
}

void tl_json_free(tl_json *j) {
  if (!j) return;
  json_doc *doc = (json_doc *)j;
  arena_free(doc->arena);
  free(doc);
}

/* ---- access ---- */

tl_json_type tl_json_type_of(const tl_json *j) { return j ? j->type : TL_JSON_NULL; }

size_t tl_json_len(const tl_json *j) {
  return j && (j->type == TL_JSON_ARRAY || j->type == TL_JSON_OBJECT) ? j->n : 0;
}

const tl_json *tl_json_at(const tl_json *j, size_t i) {
  return j && j->type == TL_JSON_ARRAY && i < j->n ? &j->items[i] : NULL;
}

const char *tl_json_key_at(const tl_json *j, size_t i) {
  return j && j->type == TL_JSON_OBJECT && i < j->n ? j->keys[i].s : NULL;
}

const tl_json *tl_json_value_at(const tl_json *j, size_t i) {
  return j && j->type == TL_JSON_OBJECT && i < j->n ? &j->items[i] : NULL;
}

const tl_json *tl_json_get(const tl_json *obj, const char *key) {
  if (!obj || obj->type != TL_JSON_OBJECT || !key) return NULL;
  size_t n = strlen(key);
  for (size_t i = 0; i < obj->n; i++) {
    if (obj->keys[i].len == n && memcmp(obj->keys[i].s, key, n) == 0) return &obj->items[i];
  }
  return NULL;
}

const char *tl_json_str(const tl_json *j, size_t *len) {
  if (!j || j->type != TL_JSON_STRING) return NULL;
  if (len) *len = j->n;
  return j->text;
}

int tl_json_bool(const tl_json *j) { return j && j->type == TL_JSON_BOOL ? j->boolean : -1; }

const char *tl_json_number_text(const tl_json *j) {
  return j && j->type == TL_JSON_NUMBER ? j->text : NULL;
}

int tl_json_i64(const tl_json *j, int64_t *out) {
  if (!j || j->type != TL_JSON_NUMBER) return -1;
  const char *s = j->text;
  int neg = *s == '-';
  if (neg) s++;
  /* The parser guarantees digits up to '.', 'e', 'E' or the end. */
  const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1; /* fraction or exponent */
    unsigned d = (unsigned)(*s - '0');
    if (v > (limit - d) / 10) return -1;
    v = v * 10 + d;
  }
  if (!neg) *out = (int64_t)v;
  else *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
  return 0;
}

int tl_json_double(const tl_json *j, double *out) {
  if (!j || j->type != TL_JSON_NUMBER) return -1;
  /* strtod honours the current locale's radix character; JSON always uses '.'. */
  const char *radix = localeconv()->decimal_point;
  if (!radix || strcmp(radix, ".") == 0 || !strchr(j->text, '.')) {
    *out = strtod(j->text, NULL);
    return 0;
  }
  tl_buf local = {0};
  const char *dot = strchr(j->text, '.');
  tl_buf_append(&local, j->text, (size_t)(dot - j->text));
  tl_buf_puts(&local, radix);
  tl_buf_puts(&local, dot + 1);
  if (local.oom) {
    tl_buf_free(&local);
    return -1;
  }
  *out = strtod(local.p, NULL);
  tl_buf_free(&local);
  return 0;
}

/* ---- writer ---- */

void tl_json_write(const tl_json *j, tl_buf *b) {
  if (!j) {
    tl_buf_puts(b, "null");
    return;
  }
  switch (j->type) {
    case TL_JSON_NULL: tl_buf_puts(b, "null"); break;
    case TL_JSON_BOOL: tl_buf_puts(b, j->boolean ? "true" : "false"); break;
    case TL_JSON_NUMBER: tl_buf_append(b, j->text, j->n); break;
    case TL_JSON_STRING: tl_buf_json_string(b, j->text, j->n); break;
    case TL_JSON_ARRAY:
      tl_buf_append(b, "[", 1);
      for (size_t i = 0; i < j->n; i++) {
        if (i) tl_buf_append(b, ",", 1);
        tl_json_write(&j->items[i], b);
      }
      tl_buf_append(b, "]", 1);
      break;
    case TL_JSON_OBJECT:
      tl_buf_append(b, "{", 1);
      for (size_t i = 0; i < j->n; i++) {
        if (i) tl_buf_append(b, ",", 1);
        tl_buf_json_string(b, j->keys[i].s, j->keys[i].len);
        tl_buf_append(b, ":", 1);
        tl_json_write(&j->items[i], b);
      }
      tl_buf_append(b, "}", 1);
      break;
  }
}

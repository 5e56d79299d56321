/*
** jsonl.c: reading and validating traceloom.scheduler.v1 context files
** (context-observer.md sections 2 and 3).
**
** Each file is read whole (at most 256 MiB), split into '\n'-terminated lines of at most
** 1 MiB, and every line is parsed with the strict JSON parser (ext/util/json.h) and
** checked against its record type. Import is all-or-nothing: the first violation fails the
** whole analysis with the reference text of section 3, followed by the file, the line and
** the field, so a producer bug is found from the message alone. What the spec retains as
** an explicit state instead (an execution without its step, a file without summary, a
** summary with dropped records) is kept for the views to show.
**
** Nothing here touches a profile: tl_context_load runs before any profile is read.
*/
#include "context/context.h"
#include "util/json.h"
#include "util/buf.h"
#include "util/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCHEMA "traceloom.scheduler.v1"
#define MARKER_PREFIX "traceloom.execution."

/* Reference error texts (section 3). */
#define E_FILE "context must be a regular JSONL file of at most 256 MiB"
#define E_OPEN "cannot open context input"
#define E_NEWLINE "context record lacks terminating newline"
#define E_LINE "context record exceeds 1 MiB"
#define E_TOTAL "context exceeds 256 MiB"
#define E_JSON "invalid context JSON, schema version, or identity type"
#define E_IDENT "invalid context identity"
#define E_BEGIN "context must begin with a session"
#define E_CHANGE "context producer identity changes within file"
#define E_TYPE "unknown context record type"
#define E_DUP "duplicate or invalid context record identity"
#define E_EMPTY "empty or unreadable context file"
#define E_AFTER "context contains records after summary"
#define E_SUMMARY "context summary counts do not match records"
#define E_META "invalid session metadata"
#define E_CACHE "invalid cache counter"
#define E_STEP "invalid scheduler step or unsupported cache observation phase"
#define E_EXEC "invalid context execution or marker identity"
#define E_REQUEST "invalid scheduled request"
#define E_TOKENS "scheduled token total does not equal request sum"
#define E_DUPPATH "duplicate context input"

const char *tl_ctx_str(const tl_context *c, uint32_t id) { return tl_strpool_str(c->pool, id); }

/* ------------------------------------------------------------------ loading state */

typedef struct loader {
  tl_context *c;
  tl_err *e;
  tl_strpool *keys;      /* composite uniqueness keys ("k\x1f..."), interned once each */
  const char *path;      /* current file */
  size_t line_no;
} loader;

/* Fails with the reference text, the file, the line and (when given) the field. */
static int bad(loader *L, const char *text, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad(loader *L, const char *text, const char *field, const char *fmt, ...) {
  char detail[512] = "";
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
  }
  if (L->line_no == 0)
    return tl_fail(L->e, "%s (context file %s%s%s)", text, L->path, *detail ? ": " : "", detail);
  if (!field)
    return tl_fail(L->e, "%s (context file %s, line %zu%s%s)", text, L->path, L->line_no,
                   *detail ? ": " : "", detail);
  return tl_fail(L->e, "%s (context file %s, line %zu, field %s%s%s)", text, L->path, L->line_no,
                 field, *detail ? ": " : "", detail);
}

/* 1 when the composite key was seen before (and records it otherwise); -1 out of memory. */
static int seen(loader *L, const char *key, size_t n) {
  uint32_t before = tl_strpool_count(L->keys);
  uint32_t id = tl_strpool_intern(L->keys, key, n);
  if (id == TL_STR_NOMEM) return -1;
  return tl_strpool_count(L->keys) == before;
}

static int seen_key(loader *L, const char *tag, uint32_t a, uint32_t b, int64_t c3) {
  char k[96];
  int n = snprintf(k, sizeof k, "%s\x1f%u\x1f%u\x1f%lld", tag, a, b, (long long)c3);
  return seen(L, k, (size_t)n);
}

static uint32_t intern(loader *L, const char *s, size_t n) {
  uint32_t id = tl_strpool_intern(L->c->pool, s, n);
  if (id == TL_STR_NOMEM) tl_nomem(L->e);
  return id;
}

/* ------------------------------------------------------------------ field checks */

/* [A-Za-z0-9_.-]{1,128} */
static int valid_identity(const char *s, size_t n) {
  if (n < 1 || n > 128) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
          ch == '_' || ch == '.' || ch == '-'))
      return 0;
  }
  return 1;
}

/* A JSON string of 1..128 characters (code points, as the producer's len() counts). */
static const char *text_1_128(const tl_json *v, size_t *len) {
  size_t n;
  const char *s = tl_json_str(v, &n);
  if (!s) return NULL;
  size_t chars = 0;
  for (size_t i = 0; i < n; i++) chars += ((unsigned char)s[i] & 0xC0) != 0x80;
  if (chars < 1 || chars > 128) return NULL;
  *len = n;
  return s;
}

/* Integer fields: 0 ok (*out set), -1 not an integer token, -2 below min. */
static int int_at_least(const tl_json *v, int64_t min, int64_t *out) {
  if (!v || tl_json_i64(v, out)) return -1;
  return *out < min ? -2 : 0;
}

/* null or an integer >= min: 1 = integer (*out set), 0 = null or absent, -1 invalid. */
static int nullable_int(const tl_json *v, int64_t min, int64_t *out) {
  if (!v || tl_json_type_of(v) == TL_JSON_NULL) return 0;
  if (tl_json_i64(v, out) || *out < min) return -1;
  return 1;
}

static int is_null(const tl_json *v) { return !v || tl_json_type_of(v) == TL_JSON_NULL; }

/* A list of request pseudonyms (strings of 1..128 chars, sorted, as the observer writes
** them); null allowed when nullable. Returns 0 or the failing element index + 1. */
static int check_id_list(const tl_json *v, int nullable, size_t *bad_at) {
  *bad_at = 0;
  if (is_null(v)) return nullable ? 0 : -1;
  if (tl_json_type_of(v) != TL_JSON_ARRAY) return -1;
  const char *prev = NULL;
  size_t prev_n = 0;
  for (size_t i = 0; i < tl_json_len(v); i++) {
    size_t n;
    const char *s = text_1_128(tl_json_at(v, i), &n);
    if (!s) return *bad_at = i, -2;
    if (prev) {
      size_t m = n < prev_n ? n : prev_n;
      int cmp = memcmp(prev, s, m);
      if (cmp > 0 || (cmp == 0 && prev_n > n)) return *bad_at = i, -3;
    }
    prev = s, prev_n = n;
  }
  return 0;
}

static void compact(const tl_json *v, tl_buf *b) {
  tl_buf_reset(b);
  tl_json_write(v, b);
}

/* ------------------------------------------------------------------ records */

static int check_request(loader *L, const tl_ctx_step *st, size_t k, const tl_json *r,
                         int64_t *tokens, tl_buf *b) {
  char f[64];
#define RQ(name) (snprintf(f, sizeof f, "requests[%zu].%s", k, name), f)
  if (tl_json_type_of(r) != TL_JSON_OBJECT)
    return bad(L, E_REQUEST, (snprintf(f, sizeof f, "requests[%zu]", k), f), "expected an object");
  size_t idn;
  const char *id = text_1_128(tl_json_get(r, "request_id"), &idn);
  if (!id) return bad(L, E_REQUEST, RQ("request_id"), "expected a string of 1 to 128 characters");
  if (int_at_least(tl_json_get(r, "scheduled_tokens"), 0, tokens))
    return bad(L, E_REQUEST, RQ("scheduled_tokens"), "expected an integer >= 0");
  int64_t x;
  if (nullable_int(tl_json_get(r, "scheduled_token_start"), INT64_MIN, &x) < 0)
    return bad(L, E_REQUEST, RQ("scheduled_token_start"), "expected an integer or null");
  const tl_json *basis = tl_json_get(r, "scheduled_token_start_basis");
  const char *bs = tl_json_str(basis, NULL);
  if (!is_null(basis) && (!bs || strcmp(bs, "scheduler_output_num_computed_tokens") != 0))
    return bad(L, E_REQUEST, RQ("scheduled_token_start_basis"),
               "expected \"scheduler_output_num_computed_tokens\" or null");
  const char *kind = tl_json_str(tl_json_get(r, "payload_kind"), NULL);
  if (!kind || (strcmp(kind, "new") != 0 && strcmp(kind, "cached") != 0))
    return bad(L, E_REQUEST, RQ("payload_kind"), "expected \"new\" or \"cached\"");
  if (nullable_int(tl_json_get(r, "computed_tokens_after_schedule"), INT64_MIN, &x) < 0)
    return bad(L, E_REQUEST, RQ("computed_tokens_after_schedule"), "expected an integer or null");
  if (nullable_int(tl_json_get(r, "prompt_tokens"), INT64_MIN, &x) < 0)
    return bad(L, E_REQUEST, RQ("prompt_tokens"), "expected an integer or null");
#undef RQ
  tl_ctx_request rq = {st->run_id, st->step_id, 0, 0, *tokens, st->source, st->line_no};
  if ((rq.request_id = intern(L, id, idn)) == TL_STR_NOMEM) return TL_ERROR;
  int dup = seen_key(L, "request", st->run_id, st->step_id, (int64_t)rq.request_id);
  if (dup < 0) return tl_nomem(L->e);
  if (dup)
    return bad(L, E_REQUEST, (snprintf(f, sizeof f, "requests[%zu].request_id", k), f),
               "UNIQUE constraint failed: traceloom_scheduler_request.run_id, step_id, "
               "request_id (request \"%s\" is scheduled twice in step \"%s\")",
               id, tl_ctx_str(L->c, st->step_id));
  compact(r, b);
  if (b->oom) return tl_nomem(L->e);
  if ((rq.request_json = intern(L, b->p, b->n)) == TL_STR_NOMEM) return TL_ERROR;
  if (TL_VEC_PUSH(&L->c->requests, rq)) return tl_nomem(L->e);
  return TL_OK;
}

static int parse_step(loader *L, const tl_json *j, uint32_t run, uint32_t producer,
                      uint32_t source, tl_buf *b) {
  tl_ctx_step st = {0};
  st.run_id = run, st.scheduler_id = producer, st.source = source, st.line_no = (uint32_t)L->line_no;
  size_t n;
  const char *sid = text_1_128(tl_json_get(j, "step_id"), &n);
  if (!sid) return bad(L, E_STEP, "step_id", "expected a string of 1 to 128 characters");
  if ((st.step_id = intern(L, sid, n)) == TL_STR_NOMEM) return TL_ERROR;
  if (int_at_least(tl_json_get(j, "ordinal"), 0, &st.ordinal))
    return bad(L, E_STEP, "ordinal", "expected an integer >= 0");
  int64_t mono;
  if (int_at_least(tl_json_get(j, "observed_monotonic_ns"), 0, &mono))
    return bad(L, E_STEP, "observed_monotonic_ns", "expected an integer >= 0");
  if (int_at_least(tl_json_get(j, "total_scheduled_tokens"), 0, &st.total_tokens))
    return bad(L, E_STEP, "total_scheduled_tokens", "expected an integer >= 0");
  const tl_json *reqs = tl_json_get(j, "requests");
  if (!reqs || tl_json_type_of(reqs) != TL_JSON_ARRAY)
    return bad(L, E_STEP, "requests", "expected an array of request objects");
  if (tl_json_len(reqs) > TL_CTX_MAX_REQUESTS)
    return bad(L, E_STEP, "requests", "%zu requests, at most %d are allowed", tl_json_len(reqs),
               TL_CTX_MAX_REQUESTS);
  const tl_json *cache = tl_json_get(j, "cache");
  if (!cache || tl_json_type_of(cache) != TL_JSON_OBJECT)
    return bad(L, E_STEP, "cache", "expected an object");
  const char *phase = tl_json_str(tl_json_get(cache, "observation_phase"), NULL);
  if (!phase || strcmp(phase, "after_schedule") != 0)
    return bad(L, E_STEP, "cache.observation_phase", "expected \"after_schedule\"");
  int r1 = nullable_int(tl_json_get(cache, "free_blocks"), 0, &st.free_blocks);
  if (r1 < 0 || !tl_json_get(cache, "free_blocks"))
    return bad(L, E_CACHE, "cache.free_blocks", "expected an integer >= 0 or null");
  int r2 = nullable_int(tl_json_get(cache, "pool_blocks"), 0, &st.pool_blocks);
  if (r2 < 0 || !tl_json_get(cache, "pool_blocks"))
    return bad(L, E_CACHE, "cache.pool_blocks", "expected an integer >= 0 or null");
  st.has = (uint8_t)((r1 ? TL_CTX_HAS_FREE : 0) | (r2 ? TL_CTX_HAS_POOL : 0));
  static const struct { const char *name; int nullable; } lists[] = {
      {"resumed_request_ids", 1}, {"finished_request_ids", 0}, {"preempted_request_ids", 1}};
  for (size_t i = 0; i < 3; i++) {
    size_t at;
    int rc = check_id_list(tl_json_get(j, lists[i].name), lists[i].nullable, &at);
    if (rc == -1)
      return bad(L, E_STEP, lists[i].name, lists[i].nullable ? "expected a list or null"
                                                             : "expected a list");
    if (rc == -2)
      return bad(L, E_STEP, lists[i].name, "element %zu is not a string of 1 to 128 characters",
                 at);
    if (rc == -3) return bad(L, E_STEP, lists[i].name, "element %zu is out of sorted order", at);
  }
  int dup = seen_key(L, "step", run, st.step_id, 0);
  if (dup < 0) return tl_nomem(L->e);
  if (dup)
    return bad(L, E_DUP, "step_id", "step \"%s\" of run \"%s\" appears twice", sid,
               tl_ctx_str(L->c, run));
  dup = seen_key(L, "ordinal", run, producer, st.ordinal);
  if (dup < 0) return tl_nomem(L->e);
  if (dup)
    return bad(L, E_STEP, "ordinal",
               "UNIQUE constraint failed: traceloom_scheduler_step.run_id, scheduler_id, ordinal "
               "(ordinal %lld of scheduler \"%s\" appears twice)",
               (long long)st.ordinal, tl_ctx_str(L->c, producer));
  st.nrequests = (int64_t)tl_json_len(reqs);
  int64_t sum = 0;
  for (size_t k = 0; k < tl_json_len(reqs); k++) {
    int64_t tokens;
    if (check_request(L, &st, k, tl_json_at(reqs, k), &tokens, b)) return TL_ERROR;
    if (tokens > INT64_MAX - sum)
      return bad(L, E_TOKENS, "requests", "the request sum overflows 64 bits");
    sum += tokens;
  }
  if (sum != st.total_tokens)
    return bad(L, E_TOKENS, "total_scheduled_tokens", "total %lld, request sum %lld",
               (long long)st.total_tokens, (long long)sum);
  compact(cache, b);
  if (b->oom) return tl_nomem(L->e);
  if ((st.cache_json = intern(L, b->p, b->n)) == TL_STR_NOMEM) return TL_ERROR;
  if (TL_VEC_PUSH(&L->c->steps, st)) return tl_nomem(L->e);
  return TL_OK;
}

static int parse_execution(loader *L, const tl_json *j, uint32_t run, uint32_t source) {
  tl_ctx_exec x = {0};
  x.run_id = run, x.source = source, x.line_no = (uint32_t)L->line_no, x.step = TL_CTX_NONE;
  size_t idn, sn, mn;
  const char *id = text_1_128(tl_json_get(j, "execution_id"), &idn);
  if (!id) return bad(L, E_EXEC, "execution_id", "expected a string of 1 to 128 characters");
  const char *sid = text_1_128(tl_json_get(j, "step_id"), &sn);
  if (!sid) return bad(L, E_EXEC, "step_id", "expected a string of 1 to 128 characters");
  const char *marker = tl_json_str(tl_json_get(j, "marker"), &mn);
  size_t pn = strlen(MARKER_PREFIX);
  if (!marker || mn != pn + idn || memcmp(marker, MARKER_PREFIX, pn) != 0 ||
      memcmp(marker + pn, id, idn) != 0)
    return bad(L, E_EXEC, "marker", "expected \"" MARKER_PREFIX "%s\"", id);
  const tl_json *ph = tl_json_get(j, "phase");
  const char *phase = tl_json_str(ph, NULL);
  if (!ph)
    x.phase = TL_PHASE_EXECUTE_MODEL;
  else if (phase && strcmp(phase, "execute_model") == 0)
    x.phase = TL_PHASE_EXECUTE_MODEL;
  else if (phase && strcmp(phase, "sample_tokens") == 0)
    x.phase = TL_PHASE_SAMPLE_TOKENS;
  else
    return bad(L, E_EXEC, "phase", "expected \"execute_model\" or \"sample_tokens\"");
  int r = nullable_int(tl_json_get(j, "worker_rank"), INT64_MIN, &x.worker_rank);
  if (r < 0) return bad(L, E_EXEC, "worker_rank", "expected an integer or null");
  x.has = r ? TL_CTX_HAS_RANK : 0;
  if (!tl_json_get(j, "process_id") || tl_json_i64(tl_json_get(j, "process_id"), &x.process_id))
    return bad(L, E_EXEC, "process_id", "expected an integer");
  const char *status = tl_json_str(tl_json_get(j, "status"), NULL);
  if (!status || (strcmp(status, "returned") != 0 && strcmp(status, "raised") != 0))
    return bad(L, E_EXEC, "status", "expected \"returned\" or \"raised\"");
  x.raised = strcmp(status, "raised") == 0;
  const char *ms = tl_json_str(tl_json_get(j, "marker_state"), NULL);
  if (!ms || (strcmp(ms, "emitted") != 0 && strcmp(ms, "unavailable") != 0))
    return bad(L, E_EXEC, "marker_state", "expected \"emitted\" or \"unavailable\"");
  x.marker_emitted = strcmp(ms, "emitted") == 0;
  if ((x.execution_id = intern(L, id, idn)) == TL_STR_NOMEM ||
      (x.step_id = intern(L, sid, sn)) == TL_STR_NOMEM ||
      (x.marker = intern(L, marker, mn)) == TL_STR_NOMEM)
    return TL_ERROR;
  int dup = seen_key(L, "execution", x.execution_id, 0, 0);
  if (dup < 0) return tl_nomem(L->e);
  if (dup) return bad(L, E_DUP, "execution_id", "execution \"%s\" appears twice", id);
  if (TL_VEC_PUSH(&L->c->execs, x)) return tl_nomem(L->e);
  return TL_OK;
}

/* ------------------------------------------------------------------ files */

/* Reads the whole file: regular, non-empty, at most 256 MiB (also while reading). */
static int read_file(loader *L, const char *path, char **text, size_t *len) {
  *text = NULL, *len = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return bad(L, E_OPEN, NULL, "%s", strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return bad(L, E_OPEN, NULL, "%s", strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return bad(L, E_FILE, NULL, "not a regular file");
  }
  if (st.st_size > TL_CTX_MAX_FILE) {
    close(fd);
    return bad(L, E_FILE, NULL, "%lld bytes", (long long)st.st_size);
  }
  size_t cap = (size_t)st.st_size + 1, n = 0;
  char *buf = malloc(cap + 1);
  if (!buf) {
    close(fd);
    return tl_nomem(L->e);
  }
  for (;;) {
    if (n == cap) {
      /* The file grew while being read. */
      if ((int64_t)n > TL_CTX_MAX_FILE) {
        free(buf), close(fd);
        return bad(L, E_TOTAL, NULL, "the file grew beyond the limit while being read");
      }
      size_t ncap = cap * 2 > (size_t)TL_CTX_MAX_FILE + 1 ? (size_t)TL_CTX_MAX_FILE + 1 : cap * 2;
      char *nb = realloc(buf, ncap + 1);
      if (!nb) {
        free(buf), close(fd);
        return tl_nomem(L->e);
      }
      buf = nb, cap = ncap;
    }
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      free(buf), close(fd);
      return bad(L, E_EMPTY, NULL, "%s", strerror(err));
    }
    if (got == 0) break;
    n += (size_t)got;
  }
  close(fd);
  if ((int64_t)n > TL_CTX_MAX_FILE) {
    free(buf);
    return bad(L, E_TOTAL, NULL, "more than %lld bytes", (long long)TL_CTX_MAX_FILE);
  }
  if (n == 0) {
    free(buf);
    return bad(L, E_EMPTY, NULL, NULL);
  }
  buf[n] = 0;
  *text = buf, *len = n;
  return TL_OK;
}

static int load_file(loader *L, uint32_t source) {
  tl_context *c = L->c;
  tl_ctx_source *src = &c->sources.v[source];
  L->path = src->path;
  L->line_no = 0;
  size_t len;
  if (read_file(L, src->path, &src->text, &len)) return TL_ERROR;
  src->size = (int64_t)len;
  tl_buf b = {0};
  uint32_t run = 0, producer = 0;
  int summary = 0;
  int64_t written = 0, dropped = 0, counted = 0;
  int rc = TL_OK;
  size_t pos = 0;
  while (rc == TL_OK && pos < len) {
    L->line_no++;
    const char *line = src->text + pos;
    const char *nl = memchr(line, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - line) : len - pos;
    if ((int64_t)n > TL_CTX_MAX_LINE) {
      rc = bad(L, E_LINE, NULL, "%zu bytes", n);
      break;
    }
    if (!nl) {
      rc = bad(L, E_NEWLINE, NULL, "the file ends inside this record (torn write?)");
      break;
    }
    size_t off = pos;
    pos += n + 1;
    tl_json *j = NULL;
    tl_err pe = {0};
    if (tl_json_parse(line, n, &j, &pe)) {
      rc = bad(L, E_JSON, NULL, "%s", pe.msg ? pe.msg : "invalid JSON");
      tl_err_clear(&pe);
      break;
    }
    size_t rn = 0, pn = 0;
    const char *schema = tl_json_str(tl_json_get(j, "schema"), NULL);
    const char *rid = tl_json_str(tl_json_get(j, "run_id"), &rn);
    const char *pid = tl_json_str(tl_json_get(j, "producer_id"), &pn);
    const char *type = tl_json_str(tl_json_get(j, "type"), NULL);
    if (tl_json_type_of(j) != TL_JSON_OBJECT)
      rc = bad(L, E_JSON, NULL, "the record is not a JSON object");
    else if (!schema || strcmp(schema, SCHEMA) != 0)
      rc = bad(L, E_JSON, "schema", "expected \"" SCHEMA "\"");
    else if (!rid)
      rc = bad(L, E_JSON, "run_id", "expected a string");
    else if (!pid)
      rc = bad(L, E_JSON, "producer_id", "expected a string");
    else if (!valid_identity(rid, rn))
      rc = bad(L, E_IDENT, "run_id", "expected [A-Za-z0-9_.-]{1,128}");
    else if (!valid_identity(pid, pn))
      rc = bad(L, E_IDENT, "producer_id", "expected [A-Za-z0-9_.-]{1,128}");
    if (rc) {
      tl_json_free(j);
      break;
    }
    uint32_t r = intern(L, rid, rn), p = intern(L, pid, pn);
    if (r == TL_STR_NOMEM || p == TL_STR_NOMEM) {
      tl_json_free(j);
      rc = TL_ERROR;
      break;
    }
    int is_session = type && strcmp(type, "session") == 0;
    tl_ctx_rtype rt = TL_REC_SESSION;
    if (L->line_no == 1) {
      if (!is_session) rc = bad(L, E_BEGIN, "type", "line 1 must be the session record");
      run = r, producer = p;
    } else if (r != run || p != producer) {
      rc = bad(L, E_CHANGE, r != run ? "run_id" : "producer_id", "the session declared \"%s\"",
               tl_ctx_str(c, r != run ? run : producer));
    } else if (is_session) {
      rc = bad(L, E_CHANGE, "type", "a second session record");
    } else if (summary) {
      rc = bad(L, E_AFTER, NULL, NULL);
    }
    if (rc == TL_OK) {
      if (is_session) {
        rt = TL_REC_SESSION;
        const tl_json *m = tl_json_get(j, "metadata");
        if (!m || tl_json_type_of(m) != TL_JSON_OBJECT) {
          rc = bad(L, E_META, "metadata", "expected an object");
        } else {
          int dup = seen_key(L, "session", run, producer, 0);
          if (dup < 0)
            rc = tl_nomem(L->e);
          else if (dup)
            rc = bad(L, E_DUP, "producer_id",
                     "producer \"%s\" of run \"%s\" already has a session in another file", pid,
                     rid);
        }
      } else if (type && strcmp(type, "step") == 0) {
        rt = TL_REC_STEP;
        counted++;
        rc = parse_step(L, j, run, producer, source, &b);
      } else if (type && strcmp(type, "execution") == 0) {
        rt = TL_REC_EXECUTION;
        counted++;
        rc = parse_execution(L, j, run, source);
      } else if (type && strcmp(type, "summary") == 0) {
        rt = TL_REC_SUMMARY;
        summary = 1;
        if (int_at_least(tl_json_get(j, "written_records"), 0, &written))
          rc = bad(L, E_SUMMARY, "written_records", "expected an integer >= 0");
        else if (int_at_least(tl_json_get(j, "dropped_records"), 0, &dropped))
          rc = bad(L, E_SUMMARY, "dropped_records", "expected an integer >= 0");
        else if (written != counted)
          rc = bad(L, E_SUMMARY, "written_records",
                   "%lld written, but the file holds %lld step and execution records",
                   (long long)written, (long long)counted);
      } else {
        rc = bad(L, E_TYPE, "type", "\"%s\"", type ? type : "(not a string)");
      }
    }
    tl_json_free(j);
    if (rc == TL_OK) {
      tl_ctx_record rec = {source, (uint32_t)L->line_no, r, p, off, n, (uint8_t)rt};
      if (TL_VEC_PUSH(&c->records, rec)) rc = tl_nomem(L->e);
    }
  }
  tl_buf_free(&b);
  if (rc) return rc;
  L->line_no = 0;
  src->capture = !summary ? TL_CAPTURE_UNCLOSED : dropped > 0 ? TL_CAPTURE_DROPPED
                                                              : TL_CAPTURE_CLOSED;
  tl_sha256 h;
  uint8_t d[32];
  tl_sha256_init(&h);
  tl_sha256_update(&h, src->text, len);
  tl_sha256_final(&h, d);
  tl_sha256_hex(d, src->sha256);
  return TL_OK;
}

/* ------------------------------------------------------------------ entry */

void tl_context_free(tl_context *c) {
  if (!c) return;
  for (size_t i = 0; i < c->sources.n; i++) free(c->sources.v[i].path), free(c->sources.v[i].text);
  for (size_t i = 0; i < c->file_paths.n; i++) free(c->file_paths.v[i]);
  TL_VEC_FREE(&c->sources), TL_VEC_FREE(&c->records), TL_VEC_FREE(&c->steps);
  TL_VEC_FREE(&c->requests), TL_VEC_FREE(&c->execs), TL_VEC_FREE(&c->file_paths);
  TL_VEC_FREE(&c->markers), TL_VEC_FREE(&c->queue), TL_VEC_FREE(&c->pairs);
  TL_VEC_FREE(&c->claims);
  free(c->marker_count), free(c->event_step), free(c->event_nsteps), free(c->event_partition);
  tl_strpool_free(c->pool);
  free(c);
}

int tl_context_load(const char *const *paths, size_t n, tl_context **out, tl_err *e) {
  *out = NULL;
  tl_context *c = calloc(1, sizeof *c);
  loader L = {c, e, NULL, NULL, 0};
  if (!c || !(c->pool = tl_strpool_new()) || !(L.keys = tl_strpool_new())) {
    tl_context_free(c);
    return tl_nomem(e);
  }
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < n; i++) {
    L.path = paths[i];
    L.line_no = 0;
    if (!paths[i] || !*paths[i]) {
      L.path = "(empty path)";
      rc = bad(&L, E_OPEN, NULL, "empty path");
      break;
    }
    char *canon = realpath(paths[i], NULL);
    if (!canon) {
      rc = bad(&L, E_OPEN, NULL, "%s", strerror(errno));
      break;
    }
    for (size_t k = 0; k < c->sources.n; k++)
      if (strcmp(c->sources.v[k].path, canon) == 0) {
        rc = tl_fail(e, "%s: %s (given as %s)", E_DUPPATH, canon, paths[i]);
        break;
      }
    tl_ctx_source s = {canon, NULL, 0, "", TL_CAPTURE_UNCLOSED};
    if (rc || TL_VEC_PUSH(&c->sources, s)) {
      free(canon);
      if (!rc) rc = tl_nomem(e);
    }
  }
  for (size_t i = 0; rc == TL_OK && i < c->sources.n; i++) rc = load_file(&L, (uint32_t)i);
  if (rc == TL_OK) {
    /* (run_id, step_id) -> step: executions whose step is absent keep missing_step. */
    tl_i64map by_step = {0};
    for (size_t i = 0; rc == TL_OK && i < c->steps.n; i++)
      if (tl_i64map_put(&by_step, ((int64_t)c->steps.v[i].run_id << 32) | c->steps.v[i].step_id,
                        (int64_t)i))
        rc = tl_nomem(e);
    for (size_t i = 0; rc == TL_OK && i < c->execs.n; i++) {
      tl_ctx_exec *x = &c->execs.v[i];
      int64_t *s = tl_i64map_get(&by_step, ((int64_t)x->run_id << 32) | x->step_id);
      x->step = s ? (uint32_t)*s : TL_CTX_NONE;
    }
    tl_i64map_free(&by_step);
  }
  tl_strpool_free(L.keys);
  if (rc) {
    tl_context_free(c);
    return TL_ERROR;
  }
  c->stats.sources = c->sources.n;
  c->stats.steps = c->steps.n;
  c->stats.requests = c->requests.n;
  c->stats.executions = c->execs.n;
  *out = c;
  return TL_OK;
}

int tl_context_refuse_output(const char *const *paths, size_t n, const char *output_path,
                             tl_err *e) {
  struct stat so;
  if (!output_path || !*output_path || stat(output_path, &so) != 0) return TL_OK;
  for (size_t i = 0; i < n; i++) {
    struct stat si;
    if (paths[i] && stat(paths[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
      return tl_fail(e,
                     "refusing to analyse into %s: it is a context input (write the analysis into "
                     "another database)",
                     paths[i]);
  }
  return TL_OK;
}

size_t tl_context_source_count(const tl_context *c) { return c ? c->sources.n : 0; }

const char *tl_context_source_path(const tl_context *c, size_t i) {
  return c && i < c->sources.n ? c->sources.v[i].path : NULL;
}

void tl_context_get_stats(const tl_context *c, tl_context_stats *s) {
  if (c)
    *s = c->stats;
  else
    memset(s, 0, sizeof *s);
}

/*
** fuzz_context.c: libFuzzer harness for the scheduler-context JSONL importer
** (ext/context/jsonl.c, tl_context_load) and its identity link to a loaded trace
** (ext/context/link.c, tl_context_link).
**
** The input is one or two JSONL files: the bytes up to the first NUL (a byte no JSONL text
** holds) become scheduler.jsonl, the bytes after it worker0.jsonl. tl_context_load must
** return TL_OK with a context or TL_ERROR with a message and no context (all-or-nothing).
** A context that loads is then linked to a fixed trace, the context_gen/graph fixture
** (Ascend, graph replay, PYTORCH_API markers), loaded and promoted once at start-up as
** traceloom_analyze would, and its per-event results are checked to be in range.
** TL_FUZZ_CONTEXT_NO_LINK=1 fuzzes the loader alone (for a long run while a reported link
** finding is pending; the smoke run never sets it).
*/
#include <stddef.h>
#include <stdint.h>

#include "fuzz_profile.h"
#include "context/context.h"

/* The fixed trace every loaded context is linked to (read-only after initialization). */
static struct {
  tl_profile profile;
  tl_trace trace;
  tl_relations rel;
  tl_replay replay;
} base;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  char path[1024];
  snprintf(path, sizeof path, "%s/context_gen/graph/PROF_0", tl_fuzz_fixtures());
  tl_err e = {0};
  if (tl_profile_discover(path, "auto", &base.profile, &e) ||
      tl_trace_load(&base.profile, &base.trace, NULL, NULL, &e) ||
      tl_relate(&base.trace, &base.rel, &e) ||
      tl_replay_build(&base.trace, &base.profile, &base.replay, &e) ||
      tl_replay_promote(&base.trace, &base.replay, &e)) {
    fprintf(stderr, "fuzz_context: cannot load %s: %s (run make fixtures, or set "
                    "TL_FUZZ_FIXTURES)\n", path, e.msg ? e.msg : "?");
    exit(1);
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t n1 = nul ? (size_t)(nul - data) : size;
  char p0[512], p1[512];
  snprintf(p0, sizeof p0, "%s/scheduler.jsonl", tl_fuzz_scratch());
  snprintf(p1, sizeof p1, "%s/worker0.jsonl", tl_fuzz_scratch());
  tl_fuzz_write(p0, data, n1);
  size_t npaths = 1;
  if (nul) {
    tl_fuzz_write(p1, nul + 1, size - n1 - 1);
    npaths = 2;
  }
  const char *const paths[] = {p0, p1};

  tl_err e = {0};
  tl_context *c = NULL;
  int rc = tl_context_load(paths, npaths, &c, &e);
  if (rc != TL_OK && c) {
    fprintf(stderr, "tl_context_load failed but returned a context\n");
    abort();
  }
  tl_fuzz_check(rc, &e, "tl_context_load");
  if (rc == TL_OK) {
    if (!c) abort();
    tl_context_stats st;
    tl_context_get_stats(c, &st);
    TL_FUZZ_REQUIRE(tl_context_source_count(c) == npaths, "%zu sources loaded from %zu files",
                    tl_context_source_count(c), npaths);
    const char *no_link = getenv("TL_FUZZ_CONTEXT_NO_LINK");
    rc = no_link && *no_link == '1'
             ? TL_ERROR
             : tl_context_link(c, &base.trace, &base.rel, &base.profile, &base.replay, &e);
    if (!(no_link && *no_link == '1')) tl_fuzz_check(rc, &e, "tl_context_link");
    if (rc == TL_OK) {
      tl_context_get_stats(c, &st);
      TL_FUZZ_REQUIRE(st.events_single_step + st.events_ambiguous <= base.trace.ev.n,
                      "%zu + %zu events with steps, %zu events", st.events_single_step,
                      st.events_ambiguous, base.trace.ev.n);
      for (size_t i = 0; i < c->nevents && c->event_step; i++)
        TL_FUZZ_REQUIRE(c->event_step[i] == TL_CTX_NONE || c->event_step[i] < c->steps.n,
                        "event %zu: step %u of %zu", i, c->event_step[i], c->steps.n);
      for (size_t x = 0; x < c->execs.n; x++)
        TL_FUZZ_REQUIRE(c->execs.v[x].step == TL_CTX_NONE || c->execs.v[x].step < c->steps.n,
                        "execution %zu: step %u of %zu", x, c->execs.v[x].step, c->steps.n);
    }
    tl_context_free(c);
  }
  unlink(p0);
  unlink(p1);
  return 0;
}

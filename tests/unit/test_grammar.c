/*
** test_grammar.c: nested repeat discovery (ext/recover/recover.h).
**
** Expected trees are derived from how each input is built (the spec fixtures of
** recovery.md 4.2, synthetic transformer streams with known steps, layers and ops), and
** every result is re-checked here with an independent walker: atoms cover each token
** once with its symbol, children tile their parent, every Repeat iteration follows the
** slots, ids are first-encounter preorder.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "recover/recover.h"
#include "tl_check.h"

/* ---- helpers ---- */

enum { A = 1, B, C, D, X, Y, H = 20, LL, T };

static tl_structure recover_ok(const uint32_t *sym, size_t n, const uint32_t *part, const tl_protected *pr,
                               size_t np) {
  tl_recover_input in = {sym, n, part, pr, np, NULL};
  tl_structure st;
  tl_err e = {0};
  int rc = tl_recover(&in, &st, &e);
  ck_assert_msg(rc == TL_OK, "tl_recover failed (%d): %s", rc, e.msg ? e.msg : "");
  tl_err_clear(&e);
  return st;
}

static const tl_position *pos(const tl_structure *st, uint32_t id) {
  ck_assert_uint_lt(id, st->npositions);
  return &st->positions[id];
}

static uint32_t slot(const tl_structure *st, uint32_t id, uint32_t k) { /* k is 1-based */
  const tl_position *p = pos(st, id);
  ck_assert_uint_le(k, p->nslots);
  return st->slots[p->first_slot + k - 1];
}

/* The root's child that is a Repeat of token_len tokens (fails when there is none). */
static uint32_t repeat_of_len(const tl_structure *st, uint64_t token_len) {
  for (uint32_t k = 1; k <= pos(st, 0)->nslots; k++) {
    uint32_t id = slot(st, 0, k);
    if (pos(st, id)->kind == TL_POS_REPEAT && pos(st, id)->token_len == token_len) return id;
  }
  ck_abort_msg("no Repeat of %u tokens under the root", (unsigned)token_len);
  return 0;
}

static int is_atom(const tl_structure *st, uint32_t id, uint32_t sym) {
  return pos(st, id)->kind == TL_POS_ATOM && pos(st, id)->symbol == sym;
}

/* Independent structural check of a result against its input. */
static void verify(const tl_structure *st, const uint32_t *sym, size_t n) {
  ck_assert_uint_ge(st->npositions, 1);
  ck_assert_uint_eq(st->positions[0].kind, TL_POS_SEQ);
  ck_assert_uint_eq(st->positions[0].token_len, n);
  const tl_occurrence *o = st->occurrences;
  ck_assert_uint_eq(o[0].parent, TL_RECOVER_NONE);
  ck_assert_uint_eq(o[0].start, 0);
  ck_assert_uint_eq(o[0].end, n);
  /* preorder first-encounter numbering over the occurrence walk */
  uint32_t next = 1;
  uint8_t *seen = calloc(st->npositions, 1);
  uint32_t *cover = calloc(n + 1, sizeof *cover);
  uint32_t *child_end = malloc(st->noccurrences * sizeof *child_end); /* cursor per parent */
  uint32_t *nchild = calloc(st->noccurrences, sizeof *nchild);
  uint32_t *per_pos = calloc(st->npositions, sizeof *per_pos);
  seen[0] = 1;
  per_pos[0] = 1;
  child_end[0] = 0;
  for (size_t i = 1; i < st->noccurrences; i++) {
    const tl_occurrence *c = &o[i];
    ck_assert_uint_lt(c->parent, i);
    if (!seen[c->position]) {
      ck_assert_uint_eq(c->position, next);
      seen[c->position] = 1;
      next++;
    }
    ck_assert_uint_eq(c->occurrence_idx, ++per_pos[c->position]);
    const tl_occurrence *par = &o[c->parent];
    const tl_position *pp = pos(st, par->position);
    /* the k-th child of the parent: iteration k / nslots + 1, slot k % nslots + 1 */
    uint32_t k = nchild[c->parent]++;
    ck_assert_uint_gt(pp->nslots, 0);
    uint32_t want_slot = k % pp->nslots + 1, want_iter = k / pp->nslots + 1;
    ck_assert_uint_eq(c->slot, want_slot);
    ck_assert_uint_eq(c->member_order, pp->kind == TL_POS_REPEAT ? want_iter : 1);
    ck_assert_uint_eq(c->position, slot(st, par->position, want_slot));
    uint32_t expect_start = k ? child_end[c->parent] : par->start;
    ck_assert_uint_eq(c->start, expect_start);
    child_end[c->parent] = c->end;
    child_end[i] = c->start;
    ck_assert_uint_le(c->end, par->end);
    if (pos(st, c->position)->kind == TL_POS_ATOM) {
      ck_assert_uint_eq(c->end - c->start, 1);
      ck_assert_uint_eq(sym[c->start], pos(st, c->position)->symbol);
      cover[c->start]++;
    }
    if (pos(st, c->position)->kind == TL_POS_REPEAT) {
      ck_assert_uint_ge(pos(st, c->position)->repeat_count, 2);
      ck_assert_uint_eq((c->end - c->start) % pos(st, c->position)->repeat_count, 0);
    }
  }
  ck_assert_uint_eq(next, st->npositions);
  for (size_t i = 0; i < st->noccurrences; i++) {
    const tl_position *p = pos(st, o[i].position);
    if (p->kind == TL_POS_ATOM) continue;
    uint32_t reps = p->kind == TL_POS_REPEAT ? p->repeat_count : 1;
    ck_assert_uint_eq(nchild[i], reps * p->nslots);
    if (nchild[i]) ck_assert_uint_eq(child_end[i], o[i].end);
  }
  for (size_t t = 0; t < n; t++) ck_assert_uint_eq(cover[t], 1);
  for (size_t k = 0; k < st->npositions; k++) ck_assert_uint_eq(st->positions[k].occurrence_count, per_pos[k]);
  free(seen);
  free(cover);
  free(child_end);
  free(nchild);
  free(per_pos);
}

static int same_structure(const tl_structure *a, const tl_structure *b) {
  return a->npositions == b->npositions && a->noccurrences == b->noccurrences && a->nslots == b->nslots &&
         !memcmp(a->positions, b->positions, a->npositions * sizeof *a->positions) &&
         !memcmp(a->slots, b->slots, a->nslots * sizeof *a->slots) &&
         !memcmp(a->occurrences, b->occurrences, a->noccurrences * sizeof *a->occurrences);
}

/* Number of positions of a kind. */
static size_t count_kind(const tl_structure *st, uint32_t kind) {
  size_t c = 0;
  for (size_t k = 0; k < st->npositions; k++) c += st->positions[k].kind == kind;
  return c;
}

/* ---- spec fixtures (recovery.md 4.2) ---- */

START_TEST(f1_abab_c) {
  const uint32_t s[] = {A, B, A, B, C};
  tl_structure st = recover_ok(s, 5, NULL, NULL, 0);
  verify(&st, s, 5);
  /* N001 Seq [N002 Rep x2 [N003 A, N004 B], N005 C] */
  ck_assert_uint_eq(st.npositions, 5);
  ck_assert_uint_eq(pos(&st, 0)->nslots, 2);
  ck_assert_uint_eq(slot(&st, 0, 1), 1);
  ck_assert_uint_eq(pos(&st, 1)->kind, TL_POS_REPEAT);
  ck_assert_uint_eq(pos(&st, 1)->repeat_count, 2);
  ck_assert(is_atom(&st, slot(&st, 1, 1), A) && is_atom(&st, slot(&st, 1, 2), B));
  ck_assert(is_atom(&st, slot(&st, 0, 2), C));
  /* occurrences: root, Rep [0,4), A [0,1) r1, B [1,2) r1, A [2,3) r2, B [3,4) r2, C [4,5) */
  ck_assert_uint_eq(st.noccurrences, 7);
  const tl_occurrence *o = st.occurrences;
  ck_assert(o[1].start == 0 && o[1].end == 4 && o[1].slot == 1 && o[1].member_order == 1);
  ck_assert(o[4].start == 2 && o[4].member_order == 2 && o[4].slot == 1 && o[4].occurrence_idx == 2);
  ck_assert(o[6].start == 4 && o[6].slot == 2 && o[6].parent == 0);
  /* One partition gives the identical result. */
  const uint32_t one[] = {7, 7, 7, 7, 7};
  tl_structure st2 = recover_ok(s, 5, one, NULL, 0);
  ck_assert(same_structure(&st, &st2));
  tl_structure_free(&st);
  tl_structure_free(&st2);
}
END_TEST

/* A B C A B C A B C A: three iterations fit from A (A B C) x3, A or from B: A, (B C A) x3.
** Both cover 9 tokens and cut no shorter run; the leftmost wins. When the host hierarchy
** begins ranges at every B (a module whose first operator is B), the iterations begin there. */
START_TEST(hint_chooses_the_rotation) {
  const uint32_t s[] = {A, B, C, A, B, C, A, B, C, A};
  tl_structure st = recover_ok(s, 10, NULL, NULL, 0);
  verify(&st, s, 10);
  ck_assert_uint_eq(pos(&st, slot(&st, 0, 1))->kind, TL_POS_REPEAT);
  ck_assert(is_atom(&st, slot(&st, slot(&st, 0, 1), 1), A));
  ck_assert(is_atom(&st, slot(&st, 0, 2), A));
  /* One range of one token at every A, three at every B (all within an iteration). */
  const uint32_t off[] = {0, 1, 4, 4, 5, 8, 8, 9, 12, 12, 13};
  const uint32_t span[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const uint32_t weight[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const tl_recover_hints hint = {off, span, weight};
  tl_recover_input in = {s, 10, NULL, NULL, 0, &hint};
  tl_structure h;
  tl_err e = {0};
  ck_assert_int_eq(tl_recover(&in, &h, &e), TL_OK);
  verify(&h, s, 10);
  ck_assert(is_atom(&h, slot(&h, 0, 1), A));
  uint32_t rep = slot(&h, 0, 2);
  ck_assert_uint_eq(pos(&h, rep)->kind, TL_POS_REPEAT);
  ck_assert_uint_eq(pos(&h, rep)->repeat_count, 3);
  ck_assert(is_atom(&h, slot(&h, rep, 1), B) && is_atom(&h, slot(&h, rep, 2), C) &&
            is_atom(&h, slot(&h, rep, 3), A));
  /* A hint never makes a worse repeat: no ranges change nothing, and nor do ranges that
  ** begin at every B but cover more than one iteration (a step, a whole model). */
  const uint32_t none[11] = {0};
  const tl_recover_hints zero = {none, span, weight};
  tl_recover_input z = {s, 10, NULL, NULL, 0, &zero};
  tl_structure st0;
  ck_assert_int_eq(tl_recover(&z, &st0, &e), TL_OK);
  ck_assert(same_structure(&st, &st0));
  const uint32_t long_span[] = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4};
  const tl_recover_hints wide = {off, long_span, weight};
  tl_recover_input w = {s, 10, NULL, NULL, 0, &wide};
  tl_structure stw;
  ck_assert_int_eq(tl_recover(&w, &stw, &e), TL_OK);
  ck_assert(same_structure(&st, &stw));
  tl_structure_free(&st), tl_structure_free(&h), tl_structure_free(&st0), tl_structure_free(&stw);
}
END_TEST

/* X A B C A B C A B A B: the run of period 3 (A B C) x2 fits from A (then A B A B stays a
** run of period 2 after it: (A B) x2) or from B (B C A x2, cutting that shorter run). Both
** keep two whole iterations; without hints the rotation that cuts no shorter run wins. A
** module that begins at each B and covers one iteration exactly says the layers begin at B,
** which decides before the shorter run's damage (a decoder layer's module against a
** coincidental run across the last layer's edge: tests/python/test_kineto_gpu.py). */
START_TEST(hint_outranks_damage_between_equal_rotations) {
  const uint32_t s[] = {X, A, B, C, A, B, C, A, B, A, B};
  tl_structure st = recover_ok(s, 11, NULL, NULL, 0);
  verify(&st, s, 11);
  uint32_t r0 = repeat_of_len(&st, 6);
  ck_assert(is_atom(&st, slot(&st, r0, 1), A));
  /* A range of 3 tokens (one iteration) at each B of the two iterations from B. */
  const uint32_t off[] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2};
  const uint32_t span[] = {3, 3}, weight[] = {4096, 4096};
  const tl_recover_hints hint = {off, span, weight};
  tl_recover_input in = {s, 11, NULL, NULL, 0, &hint};
  tl_structure h;
  tl_err e = {0};
  ck_assert_int_eq(tl_recover(&in, &h, &e), TL_OK);
  verify(&h, s, 11);
  uint32_t r = repeat_of_len(&h, 6);
  ck_assert(is_atom(&h, slot(&h, r, 1), B) && is_atom(&h, slot(&h, r, 2), C) &&
            is_atom(&h, slot(&h, r, 3), A));
  tl_structure_free(&st), tl_structure_free(&h);
}
END_TEST

/* No occurrence other than an atom or the root may start or end strictly inside a
** protected unit, nor span a seam between units alone; only the unit's own children (its
** folded layers) lie wholly inside it. */
static void assert_units_intact(const tl_structure *st, const tl_protected *pr, size_t np) {
  for (size_t i = 1; i < st->noccurrences; i++) {
    const tl_occurrence *o = &st->occurrences[i];
    if (pos(st, o->position)->kind == TL_POS_ATOM) continue;
    for (size_t k = 0; k < np; k++) {
      if (pr[k].kind == TL_PROTECT_AMBIGUOUS) continue;
      if (o->start >= pr[k].first && o->end <= pr[k].last + 1 &&
          pos(st, st->occurrences[o->parent].position)->unit_template)
        continue; /* a child of the unit's Seq */
      ck_assert_msg(!(o->start > pr[k].first && o->start <= pr[k].last), "occurrence %zu starts inside a unit", i);
      ck_assert_msg(!(o->end > pr[k].first && o->end <= pr[k].last), "occurrence %zu ends inside a unit", i);
    }
  }
}

START_TEST(f2_units_never_seam) {
  const uint32_t s[] = {H, LL, T, H, LL, T};
  for (uint32_t kind = TL_PROTECT_UNIT; kind <= TL_PROTECT_UNIT_NO_ENCLOSE; kind++) {
    const tl_protected pr[] = {{3, 5, kind}, {0, 2, kind}};
    tl_structure st = recover_ok(s, 6, NULL, pr, 2);
    verify(&st, s, 6);
    assert_units_intact(&st, pr, 2);
    /* N001 [N002 Rep x2 [N003 unit T1 [H, L, T]]] */
    ck_assert_uint_eq(pos(&st, 0)->nslots, 1);
    ck_assert_uint_eq(pos(&st, 1)->kind, TL_POS_REPEAT);
    ck_assert_uint_eq(pos(&st, 1)->repeat_count, 2);
    uint32_t u = slot(&st, 1, 1);
    ck_assert_uint_eq(pos(&st, u)->kind, TL_POS_SEQ);
    ck_assert_uint_eq(pos(&st, u)->unit_template, 1);
    ck_assert_uint_eq(pos(&st, u)->nslots, 3);
    ck_assert(is_atom(&st, slot(&st, u, 1), H) && is_atom(&st, slot(&st, u, 2), LL) &&
              is_atom(&st, slot(&st, u, 3), T));
    ck_assert_uint_eq(pos(&st, u)->occurrence_count, 2);
    ck_assert_uint_eq(st.nunits, 1);
    /* the seam keys ACLT ACLH / ACLT ACLH ACLL are never a node */
    for (size_t i = 1; i < st.noccurrences; i++)
      ck_assert(!(st.occurrences[i].start == 2 && st.occurrences[i].end >= 4));
    tl_structure_free(&st);
  }
}
END_TEST

START_TEST(f4_unit_enclosing) {
  const uint32_t s[] = {X, H, LL, T, Y, X, H, LL, T, Y};
  /* Replay units may be enclosed whole: Rep x2 [X, unit, Y], one unit definition. */
  const tl_protected pr[] = {{1, 3, TL_PROTECT_UNIT}, {6, 8, TL_PROTECT_UNIT}};
  tl_structure st = recover_ok(s, 10, NULL, pr, 2);
  verify(&st, s, 10);
  assert_units_intact(&st, pr, 2);
  ck_assert_uint_eq(pos(&st, 0)->nslots, 1);
  ck_assert_uint_eq(pos(&st, 1)->repeat_count, 2);
  ck_assert_uint_eq(pos(&st, 1)->nslots, 3);
  ck_assert(is_atom(&st, slot(&st, 1, 1), X) && is_atom(&st, slot(&st, 1, 3), Y));
  ck_assert_uint_eq(pos(&st, slot(&st, 1, 2))->unit_template, 1);
  tl_structure_free(&st);
  /* No-enclose: "X ACLH ACLL ACLT Y" is forbidden, so nothing repeats; both units still
  ** share one definition. */
  const tl_protected pn[] = {{1, 3, TL_PROTECT_UNIT_NO_ENCLOSE}, {6, 8, TL_PROTECT_UNIT_NO_ENCLOSE}};
  st = recover_ok(s, 10, NULL, pn, 2);
  verify(&st, s, 10);
  ck_assert_uint_eq(count_kind(&st, TL_POS_REPEAT), 0);
  ck_assert_uint_eq(pos(&st, 0)->nslots, 6);
  ck_assert_uint_eq(slot(&st, 0, 2), slot(&st, 0, 5));
  ck_assert_uint_eq(pos(&st, slot(&st, 0, 2))->unit_template, 1);
  tl_structure_free(&st);
}
END_TEST

/* The layers of a unit fold: two units H L L L T read Rep x2 [unit T1 [H, Rep x3 [L], T]],
** and a unit of one token is still its own Seq (recovery.md 5: every replay unit is a
** ReplayUnit Seq; adjacent equal siblings fold into a Repeat). */
START_TEST(unit_layers_fold_and_single_token_units) {
  const uint32_t s[] = {H, LL, LL, LL, T, H, LL, LL, LL, T};
  const tl_protected pr[] = {{0, 4, TL_PROTECT_UNIT}, {5, 9, TL_PROTECT_UNIT}};
  tl_structure st = recover_ok(s, 10, NULL, pr, 2);
  verify(&st, s, 10);
  assert_units_intact(&st, pr, 2);
  ck_assert_uint_eq(pos(&st, 0)->nslots, 1);
  ck_assert_uint_eq(pos(&st, 1)->kind, TL_POS_REPEAT);
  ck_assert_uint_eq(pos(&st, 1)->repeat_count, 2);
  uint32_t u = slot(&st, 1, 1);
  ck_assert_uint_eq(pos(&st, u)->unit_template, 1);
  ck_assert_uint_eq(pos(&st, u)->nslots, 3);
  ck_assert(is_atom(&st, slot(&st, u, 1), H) && is_atom(&st, slot(&st, u, 3), T));
  uint32_t layers = slot(&st, u, 2);
  ck_assert_uint_eq(pos(&st, layers)->kind, TL_POS_REPEAT);
  ck_assert_uint_eq(pos(&st, layers)->repeat_count, 3);
  ck_assert_uint_eq(pos(&st, layers)->nslots, 1);
  ck_assert(is_atom(&st, slot(&st, layers, 1), LL));
  ck_assert_uint_eq(pos(&st, slot(&st, layers, 1))->occurrence_count, 6);
  tl_structure_free(&st);

  /* X U X U with U a unit of one token: Rep x2 [X, unit T1 [U]]. */
  const uint32_t s1[] = {X, H, X, H};
  const tl_protected p1[] = {{1, 1, TL_PROTECT_UNIT}, {3, 3, TL_PROTECT_UNIT}};
  st = recover_ok(s1, 4, NULL, p1, 2);
  verify(&st, s1, 4);
  ck_assert_uint_eq(pos(&st, 1)->kind, TL_POS_REPEAT);
  ck_assert_uint_eq(pos(&st, 1)->nslots, 2);
  ck_assert(is_atom(&st, slot(&st, 1, 1), X));
  u = slot(&st, 1, 2);
  ck_assert_uint_eq(pos(&st, u)->kind, TL_POS_SEQ);
  ck_assert_uint_eq(pos(&st, u)->unit_template, 1);
  ck_assert_uint_eq(pos(&st, u)->nslots, 1);
  ck_assert(is_atom(&st, slot(&st, u, 1), H));
  tl_structure_free(&st);
}
END_TEST

START_TEST(f5_ambiguous_blocks_key_everywhere) {
  const uint32_t s[] = {A, B, C, A, B, C};
  const tl_protected pr[] = {{1, 2, TL_PROTECT_AMBIGUOUS}};
  tl_structure st = recover_ok(s, 6, NULL, pr, 1);
  verify(&st, s, 6);
  ck_assert_uint_eq(count_kind(&st, TL_POS_REPEAT), 0);
  ck_assert_uint_eq(pos(&st, 0)->nslots, 6);
  tl_structure_free(&st);
  /* Clean copies elsewhere lose the key too: (A B C)x2 (A B C)x2 with the first copy
  ** ambiguous keeps no A B C repeat; an unrelated (D X)x2 still folds. */
  const uint32_t s2[] = {A, B, C, A, B, C, D, X, D, X, A, B, C, A, B, C};
  st = recover_ok(s2, 16, NULL, pr, 1);
  verify(&st, s2, 16);
  ck_assert_uint_eq(count_kind(&st, TL_POS_REPEAT), 1);
  for (size_t k = 0; k < st.npositions; k++)
    if (st.positions[k].kind == TL_POS_REPEAT) {
      ck_assert_uint_eq(st.positions[k].token_len, 4);
      ck_assert(is_atom(&st, slot(&st, (uint32_t)k, 1), D));
    }
  tl_structure_free(&st);
  /* Without the interval both halves fold. */
  st = recover_ok(s2, 16, NULL, NULL, 0);
  ck_assert_uint_eq(count_kind(&st, TL_POS_REPEAT), 2);
  tl_structure_free(&st);
}
END_TEST

START_TEST(f6_determinism) {
  const uint32_t s[] = {A, B, C, D, A, B, C, D};
  tl_structure st = recover_ok(s, 8, NULL, NULL, 0);
  verify(&st, s, 8);
  ck_assert_uint_eq(pos(&st, 0)->nslots, 1);
  ck_assert_uint_eq(pos(&st, 1)->repeat_count, 2);
  ck_assert_uint_eq(pos(&st, 1)->nslots, 4);
  ck_assert(is_atom(&st, slot(&st, 1, 1), A) && is_atom(&st, slot(&st, 1, 4), D));
  for (int r = 0; r < 3; r++) {
    tl_structure again = recover_ok(s, 8, NULL, NULL, 0);
    ck_assert(same_structure(&st, &again));
    tl_structure_free(&again);
  }
  tl_structure_free(&st);
}
END_TEST

/* ---- synthetic transformer streams ---- */

enum { EMBED = 100, AR, FNORM, LMHEAD, SAMPLE, NOISE, PRE, ATTN_PRE, OPS = 200 };

typedef struct stream {
  uint32_t *sym, *part;
  size_t n;
  uint32_t layer[64];
  unsigned L, K, S;
} stream;

/* prefill [PRE EMBED (prefill layer)xL FNORM LMHEAD SAMPLE], then S decode steps
** [EMBED (layer)xL FNORM LMHEAD SAMPLE]. A layer is K ops: norm, K-3 distinct ops, norm
** again in the middle, the all-reduce last; the prefill layer swaps op 2 for ATTN_PRE.
** noisy[s] (s = 1..S) inserts a NOISE token after `noisy[s]` tokens of decode step s. */
static stream make_stream(unsigned S, unsigned L, unsigned K, const unsigned *noisy) {
  stream w = {0};
  w.S = S, w.L = L, w.K = K;
  for (unsigned k = 0; k < K; k++) w.layer[k] = OPS + k;
  w.layer[K / 2] = OPS; /* the post-attention norm is the same kernel as the first op */
  w.layer[K - 1] = AR;
  size_t cap = (size_t)(S + 1) * (L * K + 8);
  w.sym = malloc(cap * sizeof *w.sym);
  w.part = malloc(cap * sizeof *w.part);
  for (unsigned s = 0; s <= S; s++) {
    size_t begin = w.n;
    if (!s) w.sym[w.n++] = PRE;
    w.sym[w.n++] = EMBED;
    for (unsigned l = 0; l < L; l++)
      for (unsigned k = 0; k < K; k++) w.sym[w.n++] = (!s && k == 2) ? ATTN_PRE : w.layer[k];
    w.sym[w.n++] = FNORM;
    w.sym[w.n++] = LMHEAD;
    w.sym[w.n++] = SAMPLE;
    for (size_t i = begin; i < w.n; i++) w.part[i] = s;
    if (s && noisy && noisy[s]) {
      size_t at = begin + noisy[s];
      memmove(w.sym + at + 1, w.sym + at, (w.n - at) * sizeof *w.sym);
      memmove(w.part + at + 1, w.part + at, (w.n - at) * sizeof *w.part);
      w.sym[at] = NOISE;
      w.part[at] = TL_RECOVER_NO_PARTITION;
      w.n++;
    }
  }
  return w;
}

static void free_stream(stream *w) {
  free(w->sym);
  free(w->part);
}

/* Repeat xL over exactly the K layer ops (as atoms), prefill variant when pre. */
static void assert_layer_repeat(const tl_structure *st, uint32_t id, const stream *w, int pre, unsigned count) {
  const tl_position *p = pos(st, id);
  ck_assert_uint_eq(p->kind, TL_POS_REPEAT);
  ck_assert_uint_eq(p->repeat_count, count);
  ck_assert_uint_eq(p->nslots, w->K);
  for (unsigned k = 0; k < w->K; k++)
    ck_assert(is_atom(st, slot(st, id, k + 1), (pre && k == 2) ? ATTN_PRE : w->layer[k]));
}

/* The decode step body: [EMBED, Repeat xL > layer, FNORM, LMHEAD, SAMPLE]. */
static void assert_step_body(const tl_structure *st, uint32_t rep, const stream *w) {
  ck_assert_uint_eq(pos(st, rep)->kind, TL_POS_REPEAT);
  ck_assert_uint_eq(pos(st, rep)->nslots, 5);
  ck_assert(is_atom(st, slot(st, rep, 1), EMBED));
  assert_layer_repeat(st, slot(st, rep, 2), w, 0, w->L);
  ck_assert(is_atom(st, slot(st, rep, 3), FNORM) && is_atom(st, slot(st, rep, 4), LMHEAD) &&
            is_atom(st, slot(st, rep, 5), SAMPLE));
}

/* The same, up to rotation: without step ids the epilogue / prologue boundary of a step
** is ambiguous (both orders describe the tokens), but the layers inside stay whole. */
static void assert_step_body_rotated(const tl_structure *st, uint32_t rep, const stream *w) {
  ck_assert_uint_eq(pos(st, rep)->kind, TL_POS_REPEAT);
  ck_assert_uint_eq(pos(st, rep)->nslots, 5);
  uint32_t r = 0;
  while (r < 5 && !is_atom(st, slot(st, rep, r + 1), EMBED)) r++;
  ck_assert_uint_lt(r, 5);
  assert_layer_repeat(st, slot(st, rep, (r + 1) % 5 + 1), w, 0, w->L);
  ck_assert(is_atom(st, slot(st, rep, (r + 2) % 5 + 1), FNORM) && is_atom(st, slot(st, rep, (r + 3) % 5 + 1), LMHEAD) &&
            is_atom(st, slot(st, rep, (r + 4) % 5 + 1), SAMPLE));
}

static void check_clean_stream(unsigned S, unsigned L, unsigned K, int with_partitions) {
  stream w = make_stream(S, L, K, NULL);
  tl_structure st = recover_ok(w.sym, w.n, with_partitions ? w.part : NULL, NULL, 0);
  verify(&st, w.sym, w.n);
  /* N001 [PRE, EMBED, Rep xL (prefill layer), FNORM, LMHEAD, SAMPLE, Rep xS (step)] */
  ck_assert_msg(pos(&st, 0)->nslots == 7, "S=%u L=%u K=%u: root has %u slots", S, L, K, pos(&st, 0)->nslots);
  ck_assert(is_atom(&st, slot(&st, 0, 1), PRE) && is_atom(&st, slot(&st, 0, 2), EMBED));
  assert_layer_repeat(&st, slot(&st, 0, 3), &w, 1, L);
  ck_assert(is_atom(&st, slot(&st, 0, 4), FNORM) && is_atom(&st, slot(&st, 0, 6), SAMPLE));
  uint32_t steps = slot(&st, 0, 7);
  ck_assert_uint_eq(pos(&st, steps)->repeat_count, S);
  assert_step_body(&st, steps, &w);
  /* few nodes: root, prefill repeat, step repeat, decode layer repeat and the atoms */
  ck_assert_uint_eq(count_kind(&st, TL_POS_REPEAT), 3);
  tl_structure_free(&st);
  free_stream(&w);
}

START_TEST(transformer_clean) {
  const unsigned shapes[][3] = {{36, 24, 12}, {2, 2, 4}, {3, 7, 5}, {10, 2, 9}, {5, 32, 40}, {64, 3, 6}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    check_clean_stream(shapes[i][0], shapes[i][1], shapes[i][2], 0);
    check_clean_stream(shapes[i][0], shapes[i][1], shapes[i][2], 1);
  }
}
END_TEST

/* Noise inside steps 3, 4 and 9 of 12: the clean stretches 1-2, 5-8 and 10-12 fold into
** Repeat x2, x4 and x3 of ONE step body; noisy steps stay loose, their layers still
** fold into the shared layer body. Without step ids the step body may come out rotated
** at the epilogue (here the tokens of noisy steps 4 and 9 around stretch 5-8 make a
** fifth rotated iteration: [FNORM LMHEAD SAMPLE EMBED layers] x5 is as valid), never
** inside the layers. */
START_TEST(transformer_noisy) {
  for (int with_partitions = 0; with_partitions <= 1; with_partitions++) {
    const unsigned S = 12, L = 6, K = 8;
    unsigned noisy[13] = {0};
    noisy[3] = 1 + 2 * K + 3;   /* inside layer 3 */
    noisy[4] = 1 + 5 * K;       /* between layers 5 and 6 */
    noisy[9] = 1 + L * K + 1;   /* inside the epilogue */
    stream w = make_stream(S, L, K, noisy);
    tl_structure st = recover_ok(w.sym, w.n, with_partitions ? w.part : NULL, NULL, 0);
    verify(&st, w.sym, w.n);
    const tl_position *root = pos(&st, 0);
    unsigned counts[8], nrep = 0;
    uint32_t body = TL_RECOVER_NONE, layer_rep = TL_RECOVER_NONE;
    for (uint32_t k = 1; k <= root->nslots; k++) {
      uint32_t c = slot(&st, 0, k);
      const tl_position *p = pos(&st, c);
      if (p->kind != TL_POS_REPEAT || p->nslots != 5) continue;
      if (with_partitions)
        assert_step_body(&st, c, &w);
      else
        assert_step_body_rotated(&st, c, &w);
      if (body == TL_RECOVER_NONE) body = c;
      /* same slots: one shared body */
      ck_assert(!memcmp(st.slots + p->first_slot, st.slots + pos(&st, body)->first_slot, 5 * sizeof(uint32_t)));
      for (uint32_t q = 1; q <= 5; q++)
        if (pos(&st, slot(&st, c, q))->kind == TL_POS_REPEAT) layer_rep = slot(&st, c, q);
      ck_assert_uint_lt(nrep, 8);
      counts[nrep++] = p->repeat_count;
    }
    ck_assert_uint_eq(nrep, 3);
    if (with_partitions)
      ck_assert(counts[0] == 2 && counts[1] == 4 && counts[2] == 3);
    else
      ck_assert(counts[0] >= 2 && counts[1] >= 4 && counts[2] >= 3);
    /* Every repeat of whole layers (period K) uses the same layer slots as the step's. */
    for (size_t k = 0; k < st.npositions; k++) {
      const tl_position *p = &st.positions[k];
      if (p->kind != TL_POS_REPEAT || p->token_len != (uint64_t)p->repeat_count * K || k == layer_rep) continue;
      if (is_atom(&st, slot(&st, (uint32_t)k, 3), ATTN_PRE)) continue; /* prefill */
      ck_assert(!memcmp(st.slots + p->first_slot, st.slots + pos(&st, layer_rep)->first_slot, K * sizeof(uint32_t)));
    }
    tl_structure_free(&st);
    free_stream(&w);
  }
}
END_TEST

/* Three levels: experts inside a layer inside a step. */
START_TEST(nesting_three_levels) {
  uint32_t s[4096];
  size_t n = 0;
  for (int step = 0; step < 5; step++) {
    s[n++] = EMBED;
    for (int l = 0; l < 4; l++) {
      s[n++] = OPS;
      for (int ex = 0; ex < 6; ex++) s[n++] = OPS + 1, s[n++] = OPS + 2;
      s[n++] = AR;
    }
    s[n++] = SAMPLE;
  }
  tl_structure st = recover_ok(s, n, NULL, NULL, 0);
  verify(&st, s, n);
  /* N001 [Rep x5 [EMBED, Rep x4 [OPS, Rep x6 [OPS+1, OPS+2], AR], SAMPLE]] */
  ck_assert_uint_eq(pos(&st, 0)->nslots, 1);
  uint32_t steps = slot(&st, 0, 1);
  ck_assert_uint_eq(pos(&st, steps)->repeat_count, 5);
  ck_assert_uint_eq(pos(&st, steps)->nslots, 3);
  uint32_t layers = slot(&st, steps, 2);
  ck_assert_uint_eq(pos(&st, layers)->repeat_count, 4);
  ck_assert_uint_eq(pos(&st, layers)->nslots, 3);
  uint32_t experts = slot(&st, layers, 2);
  ck_assert_uint_eq(pos(&st, experts)->repeat_count, 6);
  ck_assert(is_atom(&st, slot(&st, experts, 1), OPS + 1) && is_atom(&st, slot(&st, experts, 2), OPS + 2));
  ck_assert_uint_eq(st.npositions, 10);
  tl_structure_free(&st);
}
END_TEST

/* A layer that starts and ends with the same op: the seams "a a" between layers must
** not win over the layers (bodies stay aligned, not rotated). */
START_TEST(seams_do_not_rotate) {
  uint32_t s[64];
  size_t n = 0;
  s[n++] = X;
  for (int l = 0; l < 5; l++) s[n++] = A, s[n++] = B, s[n++] = C, s[n++] = A;
  s[n++] = Y;
  tl_structure st = recover_ok(s, n, NULL, NULL, 0);
  verify(&st, s, n);
  ck_assert_uint_eq(pos(&st, 0)->nslots, 3);
  uint32_t r = slot(&st, 0, 2);
  ck_assert_uint_eq(pos(&st, r)->repeat_count, 5);
  ck_assert(is_atom(&st, slot(&st, r, 1), A) && is_atom(&st, slot(&st, r, 2), B) &&
            is_atom(&st, slot(&st, r, 3), C) && is_atom(&st, slot(&st, r, 4), A));
  tl_structure_free(&st);
}
END_TEST

/* ---- partitions ---- */

START_TEST(partitions_are_barriers) {
  /* X A B | A B Y: without partitions Rep x2 [A B]; with the cut nothing may repeat. */
  const uint32_t s[] = {X, A, B, A, B, Y};
  const uint32_t cut[] = {0, 0, 0, 1, 1, 1};
  tl_structure st = recover_ok(s, 6, NULL, NULL, 0);
  ck_assert_uint_eq(count_kind(&st, TL_POS_REPEAT), 1);
  tl_structure_free(&st);
  st = recover_ok(s, 6, cut, NULL, 0);
  verify(&st, s, 6);
  ck_assert_uint_eq(count_kind(&st, TL_POS_REPEAT), 0);
  tl_structure_free(&st);

  /* A A ? A A: the unknown-step token is a barrier. */
  const uint32_t s2[] = {A, A, A, A, A};
  const uint32_t p2[] = {4, 4, TL_RECOVER_NO_PARTITION, 4, 4};
  st = recover_ok(s2, 5, p2, NULL, 0);
  verify(&st, s2, 5);
  ck_assert_uint_eq(pos(&st, 0)->nslots, 3);
  ck_assert_uint_eq(pos(&st, slot(&st, 0, 1))->repeat_count, 2);
  ck_assert(is_atom(&st, slot(&st, 0, 2), A));
  ck_assert_uint_eq(slot(&st, 0, 3), slot(&st, 0, 1));
  tl_structure_free(&st);

  /* Equal whole partitions fold, one partition per iteration; A B C | A B C | A B C. */
  const uint32_t s3[] = {A, B, C, A, B, C, A, B, C};
  const uint32_t p3[] = {0, 0, 0, 1, 1, 1, 2, 2, 2};
  st = recover_ok(s3, 9, p3, NULL, 0);
  verify(&st, s3, 9);
  ck_assert_uint_eq(pos(&st, 0)->nslots, 1);
  ck_assert_uint_eq(pos(&st, 1)->repeat_count, 3);
  ck_assert_uint_eq(pos(&st, 1)->nslots, 3);
  tl_structure_free(&st);

  /* Two partitions per period may not form one iteration: [A][B][A][B] stays flat. */
  const uint32_t s4[] = {A, B, A, B};
  const uint32_t p4[] = {0, 1, 2, 3};
  st = recover_ok(s4, 4, p4, NULL, 0);
  verify(&st, s4, 4);
  ck_assert_uint_eq(count_kind(&st, TL_POS_REPEAT), 0);
  tl_structure_free(&st);
}
END_TEST

START_TEST(partitions_unit_step_conflict) {
  const uint32_t s[] = {H, LL, T, H, LL, T};
  const tl_protected pr[] = {{0, 2, TL_PROTECT_UNIT}, {3, 5, TL_PROTECT_UNIT}};
  const uint32_t split[] = {0, 0, 1, 1, 1, 1};
  const uint32_t unknown[] = {0, 0, 0, TL_RECOVER_NO_PARTITION, TL_RECOVER_NO_PARTITION, TL_RECOVER_NO_PARTITION};
  const uint32_t *bad[] = {split, unknown};
  for (int i = 0; i < 2; i++) {
    tl_recover_input in = {s, 6, bad[i], pr, 2, NULL};
    tl_structure st;
    tl_err e = {0};
    ck_assert_int_eq(tl_recover(&in, &st, &e), TL_RECOVER_ESTEP);
    ck_assert_ptr_nonnull(strstr(e.msg, "protected replay has missing or conflicting step identity"));
    ck_assert_ptr_null(st.positions);
    tl_err_clear(&e);
  }
  /* One unit per step: the steps are equal partitions. */
  const uint32_t ok[] = {0, 0, 0, 1, 1, 1};
  tl_structure st = recover_ok(s, 6, ok, pr, 2);
  verify(&st, s, 6);
  ck_assert_uint_eq(pos(&st, 1)->repeat_count, 2);
  ck_assert_uint_eq(pos(&st, slot(&st, 1, 1))->unit_template, 1);
  tl_structure_free(&st);
}
END_TEST

/* ---- invariants ---- */

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

START_TEST(invariants_random) {
  uint64_t seed = 0x2545F4914F6CDD1Dull;
  uint32_t s[600], part[600];
  for (int it = 0; it < 400; it++) {
    size_t n = rng(&seed) % 600;
    uint32_t alpha = 1 + rng(&seed) % 5;
    size_t i = 0;
    while (i < n) {
      if (rng(&seed) % 3 == 0) { /* periodic block */
        size_t p = 1 + rng(&seed) % 9, c = 2 + rng(&seed) % 5;
        uint32_t body[9];
        for (size_t k = 0; k < p; k++) body[k] = rng(&seed) % alpha;
        for (size_t r = 0; r < c && i < n; r++)
          for (size_t k = 0; k < p && i < n; k++) s[i++] = body[k];
      } else {
        s[i++] = rng(&seed) % alpha;
      }
    }
    uint32_t pid = 0;
    for (i = 0; i < n; i++) {
      if (rng(&seed) % 25 == 0) pid++;
      part[i] = rng(&seed) % 40 == 0 ? TL_RECOVER_NO_PARTITION : pid;
    }
    tl_protected pr[4];
    size_t np = 0;
    if (n > 8 && it % 2)
      for (int k = 0; k < 3; k++) {
        size_t f = rng(&seed) % (n - 4);
        pr[np++] = (tl_protected){f, f + rng(&seed) % 3, TL_PROTECT_AMBIGUOUS};
      }
    const uint32_t *pp = it % 3 == 0 ? part : NULL;
    tl_structure a = recover_ok(s, n, pp, pr, np);
    verify(&a, s, n);
    tl_structure b = recover_ok(s, n, pp, pr, np);
    ck_assert(same_structure(&a, &b));
    /* dense slots: the slot ranges of all positions partition slots[] */
    size_t total = 0;
    for (size_t k = 0; k < a.npositions; k++) total += a.positions[k].nslots;
    ck_assert_uint_eq(total, a.nslots);
    /* no repeat iteration leaves its partition */
    if (pp)
      for (size_t k = 1; k < a.noccurrences; k++) {
        const tl_occurrence *o = &a.occurrences[k];
        const tl_position *q = pos(&a, o->position);
        if (q->kind != TL_POS_REPEAT) continue;
        uint32_t il = (uint32_t)(q->token_len / q->repeat_count);
        for (uint32_t x = o->start; x < o->end; x += il)
          for (uint32_t t = x; t < x + il; t++) {
            ck_assert_uint_ne(pp[t], TL_RECOVER_NO_PARTITION);
            ck_assert_uint_eq(pp[t], pp[x]);
          }
      }
    tl_structure_free(&a);
    tl_structure_free(&b);
  }
}
END_TEST

START_TEST(check_fails_closed) {
  const uint32_t s[] = {A, B, A, B, C};
  tl_recover_input in = {s, 5, NULL, NULL, 0, NULL};
  tl_structure st = recover_ok(s, 5, NULL, NULL, 0);
  tl_err e = {0};
  ck_assert_int_eq(tl_structure_check(&st, &in, &e), TL_OK);
  /* an iteration out of range */
  st.occurrences[4].member_order = 3;
  ck_assert_int_eq(tl_structure_check(&st, &in, &e), TL_RECOVER_EINVARIANT);
  ck_assert_ptr_nonnull(strstr(e.msg, "recover_invariant_violation"));
  tl_err_clear(&e);
  st.occurrences[4].member_order = 2;
  /* a repeat whose count disagrees with its iterations */
  st.positions[1].repeat_count = 3;
  ck_assert_int_eq(tl_structure_check(&st, &in, &e), TL_RECOVER_EINVARIANT);
  tl_err_clear(&e);
  st.positions[1].repeat_count = 2;
  /* an atom that does not own its token */
  const uint32_t other[] = {A, B, B, B, C};
  tl_recover_input in2 = {other, 5, NULL, NULL, 0, NULL};
  ck_assert_int_eq(tl_structure_check(&st, &in2, &e), TL_RECOVER_EINVARIANT);
  tl_err_clear(&e);
  /* occurrences of a repeat that do not follow its slots */
  uint32_t keep = st.slots[st.positions[1].first_slot];
  st.slots[st.positions[1].first_slot] = st.slots[st.positions[1].first_slot + 1];
  ck_assert_int_eq(tl_structure_check(&st, &in, &e), TL_RECOVER_EINVARIANT);
  tl_err_clear(&e);
  st.slots[st.positions[1].first_slot] = keep;
  ck_assert_int_eq(tl_structure_check(&st, &in, &e), TL_OK);
  tl_structure_free(&st);
}
END_TEST

START_TEST(bad_input_and_edges) {
  tl_structure st;
  tl_err e = {0};
  const uint32_t s[] = {A, B, C};
  const tl_protected outside[] = {{1, 3, TL_PROTECT_UNIT}};
  tl_recover_input in = {s, 3, NULL, outside, 1, NULL};
  ck_assert_int_eq(tl_recover(&in, &st, &e), TL_RECOVER_EINPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "recover_bad_input"));
  tl_err_clear(&e);
  const tl_protected overlap[] = {{0, 1, TL_PROTECT_UNIT}, {1, 2, TL_PROTECT_UNIT}};
  in.protect = overlap;
  in.nprotect = 2;
  ck_assert_int_eq(tl_recover(&in, &st, &e), TL_RECOVER_EINPUT);
  ck_assert_ptr_nonnull(strstr(e.msg, "overlap"));
  tl_err_clear(&e);
  const uint32_t huge[] = {1u << 30};
  tl_recover_input in3 = {huge, 1, NULL, NULL, 0, NULL};
  ck_assert_int_eq(tl_recover(&in3, &st, &e), TL_RECOVER_EINPUT);
  tl_err_clear(&e);
  /* empty input: a root alone */
  tl_recover_input in4 = {NULL, 0, NULL, NULL, 0, NULL};
  ck_assert_int_eq(tl_recover(&in4, &st, &e), TL_OK);
  ck_assert_uint_eq(st.npositions, 1);
  ck_assert_uint_eq(st.noccurrences, 1);
  tl_structure_free(&st);
  /* one token; a whole-sequence unit */
  const tl_protected all[] = {{0, 2, TL_PROTECT_UNIT}};
  st = recover_ok(s, 3, NULL, all, 1);
  verify(&st, s, 3);
  ck_assert_uint_eq(pos(&st, 0)->nslots, 1);
  ck_assert_uint_eq(pos(&st, 1)->unit_template, 1);
  tl_structure_free(&st);
  st = recover_ok(s, 1, NULL, NULL, 0);
  verify(&st, s, 1);
  ck_assert_uint_eq(st.npositions, 2);
  tl_structure_free(&st);
  /* outline names the repeat */
  const uint32_t r[] = {A, B, A, B};
  st = recover_ok(r, 4, NULL, NULL, 0);
  char *txt = tl_structure_outline(&st, 4, 8);
  ck_assert_ptr_nonnull(strstr(txt, "N002 Rep x2"));
  free(txt);
  tl_structure_free(&st);
}
END_TEST

/* A long stream (no size cap): 300k tokens fold into a handful of positions. */
START_TEST(long_stream_no_cap) {
  stream w = make_stream(1000, 24, 12, NULL);
  tl_structure st = recover_ok(w.sym, w.n, NULL, NULL, 0);
  ck_assert_uint_gt(w.n, 290000);
  ck_assert_uint_eq(pos(&st, slot(&st, 0, 7))->repeat_count, 1000);
  assert_step_body(&st, slot(&st, 0, 7), &w);
  ck_assert_uint_lt(st.npositions, 40);
  tl_structure_free(&st);
  free_stream(&w);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("grammar");
  TCase *t = tcase_create("core");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, f1_abab_c);
  tcase_add_test(t, f2_units_never_seam);
  tcase_add_test(t, f4_unit_enclosing);
  tcase_add_test(t, unit_layers_fold_and_single_token_units);
  tcase_add_test(t, f5_ambiguous_blocks_key_everywhere);
  tcase_add_test(t, f6_determinism);
  tcase_add_test(t, transformer_clean);
  tcase_add_test(t, transformer_noisy);
  tcase_add_test(t, nesting_three_levels);
  tcase_add_test(t, seams_do_not_rotate);
  tcase_add_test(t, partitions_are_barriers);
  tcase_add_test(t, partitions_unit_step_conflict);
  tcase_add_test(t, invariants_random);
  tcase_add_test(t, check_fails_closed);
  tcase_add_test(t, bad_input_and_edges);
  tcase_add_test(t, long_stream_no_cap);
  tcase_add_test(t, hint_chooses_the_rotation);
  tcase_add_test(t, hint_outranks_damage_between_equal_rotations);
  suite_add_tcase(s, t);
  return s;
}

TL_CHECK_MAIN(suite)

/*
** recover.c: tl_recover, the entry point of structure recovery (see recover.h).
**
** Stages:
**  1. Check the input; sort the protected intervals; collapse each unit into one
**     opaque level-0 token keyed by its content (template), so equal units share one
**     Seq definition and nothing can cut them.
**  2. Cut level 0 into partition segments: maximal stretches of one known step id,
**     and one single-token barrier per unknown-step token.
**  3. Detect the maximal runs of level 0 once (runs.c), inside segments, applying the
**     ambiguous / no-enclose policies.
**  4. Fold each distinct segment content into a child list (grammar.c); equal
**     segments (steps) share it. Level 1 is the sequence of segment contents: its
**     period-1 runs fold equal consecutive steps into Repeats whose iterations are
**     whole steps (barriers get unique ids, so they join nothing).
**  5. Lower the root definition to positions (first-encounter preorder) and
**     occurrences (walk order), then re-check every HPO invariant (fail closed).
*/
#include "recover/recover.h"
#include "recover/recover_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RC_MAX_SYMBOL (1u << 28)

typedef struct unit_rec {
  uint32_t first, last, kind, tmpl;
} unit_rec;

static int cmp_protect(const void *x, const void *y) {
  const tl_protected *a = x, *b = y;
  if (a->first != b->first) return a->first < b->first ? -1 : 1;
  if (a->last != b->last) return a->last < b->last ? -1 : 1;
  return a->kind < b->kind ? -1 : a->kind > b->kind;
}

/* Sorted, validated copy of the protected intervals split into units and ambiguous. */
typedef struct prot_set {
  unit_rec *unit;
  size_t nunit;
  tl_protected *amb;
  size_t namb;
} prot_set;

static void prot_free(prot_set *ps) {
  free(ps->unit);
  free(ps->amb);
  memset(ps, 0, sizeof *ps);
}

static int prot_load(const tl_recover_input *in, prot_set *ps, tl_err *e) {
  memset(ps, 0, sizeof *ps);
  size_t np = in->nprotect;
  if (!np) return TL_OK;
  tl_protected *v = malloc(np * sizeof *v);
  ps->unit = malloc(np * sizeof *ps->unit);
  ps->amb = malloc(np * sizeof *ps->amb);
  if (!v || !ps->unit || !ps->amb) {
    free(v);
    prot_free(ps);
    tl_fail(e, "recover_out_of_memory: protected intervals");
    return TL_RECOVER_ENOMEM;
  }
  memcpy(v, in->protect, np * sizeof *v);
  qsort(v, np, sizeof *v, cmp_protect);
  int rc = TL_OK;
  for (size_t i = 0; i < np && rc == TL_OK; i++) {
    if (v[i].first > v[i].last || v[i].last >= in->n || v[i].kind > TL_PROTECT_AMBIGUOUS) {
      tl_fail(e, "recover_bad_input: protected interval [%zu, %zu] kind %u is not inside the %zu tokens "
                 "or has an unknown kind",
              v[i].first, v[i].last, v[i].kind, in->n);
      rc = TL_RECOVER_EINPUT;
    } else if (v[i].kind == TL_PROTECT_AMBIGUOUS) {
      ps->amb[ps->namb++] = v[i];
    } else {
      if (ps->nunit && ps->unit[ps->nunit - 1].last >= v[i].first) {
        tl_fail(e, "recover_bad_input: protected units [%u, %u] and [%zu, %zu] overlap; units must be disjoint",
                ps->unit[ps->nunit - 1].first, ps->unit[ps->nunit - 1].last, v[i].first, v[i].last);
        rc = TL_RECOVER_EINPUT;
        break;
      }
      ps->unit[ps->nunit++] = (unit_rec){(uint32_t)v[i].first, (uint32_t)v[i].last, v[i].kind, 0};
    }
  }
  free(v);
  if (rc) prot_free(ps);
  return rc;
}

/* Every unit must sit in exactly one known step (recovery.md 4.2 Partitions). */
static int check_unit_steps(const tl_recover_input *in, const prot_set *ps, tl_err *e) {
  if (!in->partition) return TL_OK;
  for (size_t k = 0; k < ps->nunit; k++) {
    const unit_rec *u = &ps->unit[k];
    uint32_t pid = in->partition[u->first];
    for (uint32_t i = u->first; i <= u->last; i++)
      if (in->partition[i] != pid || pid == TL_RECOVER_NO_PARTITION) {
        tl_fail(e,
                "recover_step_conflict: protected replay has missing or conflicting step identity "
                "(unit [%u, %u]: token %u has step %s%u, expected one known step)",
                u->first, u->last, i, in->partition[i] == TL_RECOVER_NO_PARTITION ? "unknown " : "",
                in->partition[i] == TL_RECOVER_NO_PARTITION ? 0 : in->partition[i]);
        return TL_RECOVER_ESTEP;
      }
  }
  return TL_OK;
}

/* Assigns unit templates (1-based, first occurrence order) by content. */
static int assign_templates(const uint32_t *sym, prot_set *ps, uint32_t *ntmpl) {
  *ntmpl = 0;
  if (!ps->nunit) return 0;
  size_t cap = 16;
  while (cap < 2 * ps->nunit) cap *= 2;
  uint32_t *t = malloc(cap * sizeof *t);
  uint64_t *hs = malloc(ps->nunit * sizeof *hs);
  uint32_t *rep = malloc(ps->nunit * sizeof *rep); /* template -> unit index */
  if (!t || !hs || !rep) {
    free(t);
    free(hs);
    free(rep);
    return -1;
  }
  memset(t, 0xff, cap * sizeof *t);
  for (size_t k = 0; k < ps->nunit; k++) {
    unit_rec *u = &ps->unit[k];
    uint32_t len = u->last - u->first + 1;
    uint64_t h = rc_mix(len);
    for (uint32_t i = u->first; i <= u->last; i++) h = rc_mix(h ^ sym[i]);
    hs[k] = h;
    size_t s = (size_t)(h & (cap - 1));
    u->tmpl = 0;
    while (t[s] != RC_NONE) {
      const unit_rec *w = &ps->unit[rep[t[s]]];
      if (hs[rep[t[s]]] == h && w->last - w->first + 1 == len &&
          !memcmp(sym + w->first, sym + u->first, len * sizeof *sym)) {
        u->tmpl = t[s] + 1;
        break;
      }
      s = (s + 1) & (cap - 1);
    }
    if (!u->tmpl) {
      rep[*ntmpl] = (uint32_t)k;
      t[s] = (*ntmpl)++;
      u->tmpl = *ntmpl;
    }
  }
  free(t);
  free(hs);
  free(rep);
  return 0;
}

/* ---- lowering ---- */

typedef struct walk_frame {
  uint32_t def, k;
} walk_frame;

typedef struct occ_frame {
  uint32_t occ, pos, iter, slot;
} occ_frame;

static int lower(const rc_gram *g, uint32_t root, size_t n, tl_structure *out, tl_err *e) {
  size_t nd = g->defs.n;
  uint32_t *newid = malloc(nd * sizeof *newid);
  uint64_t *sub = malloc(nd * sizeof *sub);
  uint32_t *order = malloc(nd * sizeof *order), *depth = malloc(nd * sizeof *depth);
  uint32_t *cnt = NULL;
  TL_VEC(walk_frame) st = {0};
  TL_VEC(occ_frame) of = {0};
  int rc = TL_OK;
  if (!newid || !sub || !order || !depth) goto nomem;
  memset(newid, 0xff, nd * sizeof *newid);
  size_t npos = 0;
  newid[root] = (uint32_t)npos;
  depth[npos] = 0;
  order[npos++] = root;
  if (TL_VEC_PUSH(&st, ((walk_frame){root, 0}))) goto nomem;
  while (st.n) {
    walk_frame *f = &st.v[st.n - 1];
    const rc_def *d = &g->defs.v[f->def];
    if (f->k < d->nkid) {
      uint32_t kid = g->kids.v[d->kid0 + f->k++];
      if (newid[kid] == RC_NONE) {
        newid[kid] = (uint32_t)npos;
        depth[npos] = (uint32_t)st.n;
        order[npos++] = kid;
        if (TL_VEC_PUSH(&st, ((walk_frame){kid, 0}))) goto nomem;
      }
      continue;
    }
    uint64_t s = 0;
    for (uint32_t i = 0; i < d->nkid; i++) s += sub[g->kids.v[d->kid0 + i]];
    sub[f->def] = 1 + (d->kind == RC_REPEAT ? (uint64_t)d->a : 1) * s;
    st.n--;
  }
  if (sub[root] >= RC_NONE) {
    tl_fail(e, "recover_too_large: %llu occurrences exceed the uint32 occurrence index",
            (unsigned long long)sub[root]);
    free(newid), free(sub), free(order), free(depth), TL_VEC_FREE(&st);
    return TL_RECOVER_ETOOBIG;
  }

  size_t nslots = 0;
  for (size_t k = 0; k < npos; k++) nslots += g->defs.v[order[k]].nkid;
  out->positions = calloc(npos, sizeof *out->positions);
  out->slots = malloc((nslots ? nslots : 1) * sizeof *out->slots);
  out->occurrences = malloc((size_t)sub[root] * sizeof *out->occurrences);
  cnt = calloc(npos, sizeof *cnt);
  if (!out->positions || !out->slots || !out->occurrences || !cnt) goto nomem;
  out->npositions = npos;
  out->nslots = nslots;
  size_t sl = 0;
  for (size_t k = 0; k < npos; k++) {
    const rc_def *d = &g->defs.v[order[k]];
    tl_position *p = &out->positions[k];
    p->kind = d->kind == RC_ATOM ? TL_POS_ATOM : d->kind == RC_SEQ ? TL_POS_SEQ : TL_POS_REPEAT;
    p->symbol = d->kind == RC_ATOM ? d->a : TL_RECOVER_NONE;
    p->repeat_count = d->kind == RC_REPEAT ? d->a : 0;
    p->unit_template = d->kind == RC_SEQ ? d->a : 0;
    p->first_slot = (uint32_t)sl;
    p->nslots = d->nkid;
    p->depth = depth[k];
    p->token_len = d->len;
    for (uint32_t i = 0; i < d->nkid; i++) out->slots[sl++] = newid[g->kids.v[d->kid0 + i]];
  }

  /* Occurrences in walk order. */
  size_t no = 0;
  tl_occurrence *occ = out->occurrences;
  occ[no++] = (tl_occurrence){0, TL_RECOVER_NONE, 0, 0, 1, 0, (uint32_t)n};
  cnt[0] = 1;
  uint32_t cursor = 0;
  if (TL_VEC_PUSH(&of, ((occ_frame){0, 0, 1, 0}))) goto nomem;
  while (of.n) {
    occ_frame *f = &of.v[of.n - 1];
    const tl_position *P = &out->positions[f->pos];
    if (f->slot == P->nslots) {
      if (P->kind == TL_POS_REPEAT && f->iter < P->repeat_count) {
        f->iter++;
        f->slot = 0;
      } else {
        of.n--;
      }
      continue;
    }
    uint32_t child = out->slots[P->first_slot + f->slot++];
    const tl_position *C = &out->positions[child];
    uint32_t idx = (uint32_t)no;
    occ[no++] = (tl_occurrence){child,
                                f->occ,
                                f->slot,
                                P->kind == TL_POS_REPEAT ? f->iter : 1,
                                ++cnt[child],
                                cursor,
                                (uint32_t)(cursor + C->token_len)};
    if (C->kind == TL_POS_ATOM)
      cursor++;
    else if (TL_VEC_PUSH(&of, ((occ_frame){idx, child, 1, 0})))
      goto nomem;
  }
  out->noccurrences = no;
  for (size_t k = 0; k < npos; k++) out->positions[k].occurrence_count = cnt[k];
  goto done;
nomem:
  rc = TL_RECOVER_ENOMEM;
  tl_fail(e, "recover_out_of_memory: lowering %zu definitions", nd);
done:
  free(newid);
  free(sub);
  free(order);
  free(depth);
  free(cnt);
  TL_VEC_FREE(&st);
  TL_VEC_FREE(&of);
  return rc;
}

/* ---- tl_recover ---- */

typedef struct rc_job {
  prot_set ps;
  uint32_t *tok0, *ostart, *amb0, *amb1, *ne0, *item0, *nitem, *defs_of_sym, *anchor0, *anchor1;
  uint32_t *hint0_off, *hint0_span;
  tl_recover_hints hint0;
  uint8_t *present;
  TL_VEC(uint32_t) seg_start;
  TL_VEC(uint8_t) seg_known;
  uint32_t *tok1;
  TL_VEC(uint32_t) item1_0;
  TL_VEC(uint32_t) item1_n;
  rc_runs runs0, runs1;
  rc_gram g;
} rc_job;

static void job_free(rc_job *j) {
  prot_free(&j->ps);
  free(j->tok0);
  free(j->ostart);
  free(j->amb0);
  free(j->amb1);
  free(j->ne0);
  free(j->item0);
  free(j->nitem);
  free(j->defs_of_sym);
  free(j->anchor0);
  free(j->anchor1);
  free(j->hint0_off), free(j->hint0_span);
  free(j->present);
  TL_VEC_FREE(&j->seg_start);
  TL_VEC_FREE(&j->seg_known);
  free(j->tok1);
  TL_VEC_FREE(&j->item1_0);
  TL_VEC_FREE(&j->item1_n);
  tl_rc_runs_free(&j->runs0);
  tl_rc_runs_free(&j->runs1);
  tl_rc_gram_free(&j->g);
}

static int nomem(tl_err *e, const char *what) {
  tl_fail(e, "recover_out_of_memory: %s", what);
  return TL_RECOVER_ENOMEM;
}

static int recover_build(const tl_recover_input *in, rc_job *j, tl_structure *out, tl_err *e) {
  size_t n = in->n;
  const uint32_t *sym = in->symbols;
  int rc;
  uint32_t nsym = 0;
  for (size_t i = 0; i < n; i++) {
    if (sym[i] >= RC_MAX_SYMBOL) {
      tl_fail(e, "recover_bad_input: symbol %u at token %zu is not a dense id below %u", sym[i], i,
              RC_MAX_SYMBOL);
      return TL_RECOVER_EINPUT;
    }
    if (sym[i] >= nsym) nsym = sym[i] + 1;
  }
  if ((rc = prot_load(in, &j->ps, e))) return rc;
  if ((rc = check_unit_steps(in, &j->ps, e))) return rc;
  uint32_t ntmpl;
  if (assign_templates(sym, &j->ps, &ntmpl)) return nomem(e, "unit templates");
  out->nunits = ntmpl;

  /* Level 0: atoms and collapsed units. */
  size_t m = n;
  for (size_t k = 0; k < j->ps.nunit; k++) m -= j->ps.unit[k].last - j->ps.unit[k].first;
  uint32_t nid = nsym + ntmpl;
  j->tok0 = malloc((m ? m : 1) * sizeof *j->tok0);
  j->ostart = malloc((m + 1) * sizeof *j->ostart);
  j->present = calloc(nsym ? nsym : 1, 1);
  j->item0 = malloc((nid ? nid : 1) * sizeof *j->item0);
  j->nitem = calloc(nid ? nid : 1, sizeof *j->nitem);
  j->defs_of_sym = malloc((nsym ? nsym : 1) * sizeof *j->defs_of_sym);
  if (!j->tok0 || !j->ostart || !j->present || !j->item0 || !j->nitem || !j->defs_of_sym)
    return nomem(e, "token level");
  int any_noenc = 0;
  for (size_t k = 0; k < j->ps.nunit; k++) any_noenc |= j->ps.unit[k].kind == TL_PROTECT_UNIT_NO_ENCLOSE;
  if (any_noenc) {
    j->ne0 = calloc(m + 1, sizeof *j->ne0);
    if (!j->ne0) return nomem(e, "no-enclose flags");
  }
  {
    size_t t = 0, u = 0;
    for (size_t i = 0; i < n; t++) {
      j->ostart[t] = (uint32_t)i;
      if (u < j->ps.nunit && j->ps.unit[u].first == i) {
        j->tok0[t] = nsym + j->ps.unit[u].tmpl - 1;
        if (j->ne0 && j->ps.unit[u].kind == TL_PROTECT_UNIT_NO_ENCLOSE) j->ne0[t + 1] = 1;
        i = (size_t)j->ps.unit[u].last + 1;
        u++;
      } else {
        j->tok0[t] = sym[i];
        j->present[sym[i]] = 1;
        i++;
      }
    }
    j->ostart[m] = (uint32_t)n;
    if (j->ne0)
      for (size_t k = 0; k < m; k++) j->ne0[k + 1] += j->ne0[k];
  }
  for (size_t k = 0; k < j->ps.nunit; k++)
    for (uint32_t i = j->ps.unit[k].first; i <= j->ps.unit[k].last; i++) j->present[sym[i]] = 1;

  rc_gram *g = &j->g;
  for (uint32_t s = 0; s < nsym; s++) {
    if (!j->present[s]) continue;
    uint32_t d = tl_rc_def_intern(g, RC_ATOM, s, NULL, 0);
    if (d == RC_NONE) return nomem(e, "atoms");
    j->defs_of_sym[s] = d;
    j->item0[s] = tl_rc_list_add(g, &d, 1);
    j->nitem[s] = 1;
    if (j->item0[s] == RC_NONE) return nomem(e, "atoms");
  }
  {
    TL_VEC(uint32_t) kids = {0};
    uint32_t done_tmpl = 0;
    for (size_t k = 0; k < j->ps.nunit; k++) {
      const unit_rec *u = &j->ps.unit[k];
      if (u->tmpl <= done_tmpl) continue; /* templates appear first in position order */
      kids.n = 0;
      /* The unit's launches are its children; adjacent equal ones (the layers of a head +
      ** layer x N + tail unit) fold into one Repeat (recovery.md 5: adjacent equal visible
      ** siblings fold), so a unit reads ACLH, Rep x35 ACLL, ACLT. */
      for (uint32_t i = u->first; i <= u->last;) {
        uint32_t r = i + 1;
        while (r <= u->last && sym[r] == sym[i]) r++;
        uint32_t kid = j->defs_of_sym[sym[i]];
        if (r - i >= 2) kid = tl_rc_def_intern(g, RC_REPEAT, r - i, &kid, 1);
        if (kid == RC_NONE || TL_VEC_PUSH(&kids, kid)) {
          TL_VEC_FREE(&kids);
          return nomem(e, "units");
        }
        i = r;
      }
      uint32_t d = tl_rc_def_intern(g, RC_SEQ, u->tmpl, kids.v, (uint32_t)kids.n);
      uint32_t id = nsym + u->tmpl - 1;
      j->item0[id] = d == RC_NONE ? RC_NONE : tl_rc_list_add(g, &d, 1);
      j->nitem[id] = 1;
      done_tmpl = u->tmpl;
      if (j->item0[id] == RC_NONE) {
        TL_VEC_FREE(&kids);
        return nomem(e, "units");
      }
    }
    TL_VEC_FREE(&kids);
  }

  if (j->ps.namb) {
    uint32_t *mark = calloc(n + 1, sizeof *mark);
    j->amb0 = calloc(m + 1, sizeof *j->amb0);
    if (!mark || !j->amb0) {
      free(mark);
      return nomem(e, "ambiguous intervals");
    }
    for (size_t k = 0; k < j->ps.namb; k++) {
      mark[j->ps.amb[k].first]++;
      mark[j->ps.amb[k].last + 1]--;
    }
    /* mark[] as running depth, then per level-0 token: any ambiguous original token. */
    uint32_t depth = 0;
    size_t t = 0;
    uint32_t hit = 0;
    for (size_t i = 0; i < n; i++) {
      depth += mark[i];
      if (depth) hit = 1;
      if (i + 1 == j->ostart[t + 1]) {
        j->amb0[t + 1] = j->amb0[t] + hit;
        hit = 0;
        t++;
      }
    }
    free(mark);
  }

  /* Partition segments over level 0. */
  for (size_t t = 0; t < m; t++) {
    uint32_t pid = in->partition ? in->partition[j->ostart[t]] : 0;
    int known = pid != TL_RECOVER_NO_PARTITION;
    int start = t == 0 || (in->partition && (!known || !j->seg_known.v[j->seg_known.n - 1] ||
                                             in->partition[j->ostart[t - 1]] != pid));
    if (start && (TL_VEC_PUSH(&j->seg_start, (uint32_t)t) || TL_VEC_PUSH(&j->seg_known, (uint8_t)known)))
      return nomem(e, "partitions");
  }
  size_t nseg = j->seg_start.n;
  out->npartitions = nseg;

  if (tl_vec_reserve_((void **)&j->seg_start.v, &j->seg_start.cap, nseg + 1, sizeof(uint32_t)))
    return nomem(e, "partitions");
  if (tl_rc_runs_detect(j->tok0, m, nid, j->seg_start.v, nseg, &j->runs0, e) ||
      tl_rc_runs_index(&j->runs0, j->tok0, nid, j->amb0, j->ne0, e))
    return TL_RECOVER_ENOMEM;
  out->nruns = j->runs0.n;

  j->anchor0 = malloc((j->runs0.ncls ? j->runs0.ncls : 1) * sizeof *j->anchor0);
  if (!j->anchor0) return nomem(e, "anchors");
  memset(j->anchor0, 0xff, (j->runs0.ncls ? j->runs0.ncls : 1) * sizeof *j->anchor0);
  if (in->hint) {
    /* A collapsed unit begins where its first token does (the ranges that begin inside it
    ** are left out); a range's span counts the level's tokens it covers, a unit one. */
    const tl_recover_hints *h = in->hint;
    size_t total = 0;
    for (size_t t = 0; t < m; t++) total += h->off[j->ostart[t] + 1] - h->off[j->ostart[t]];
    j->hint0_off = malloc((m + 1) * sizeof *j->hint0_off);
    j->hint0_span = malloc((total ? total : 1) * 2 * sizeof *j->hint0_span);
    if (!j->hint0_off || !j->hint0_span) return nomem(e, "hints");
    uint32_t *weight = j->hint0_span + (total ? total : 1), q0 = 0;
    for (size_t t = 0; t < m; t++) {
      j->hint0_off[t] = q0;
      for (uint32_t q = h->off[j->ostart[t]]; q < h->off[j->ostart[t] + 1]; q++, q0++) {
        uint64_t end = (uint64_t)j->ostart[t] + h->span[q]; /* input tokens, exclusive */
        size_t lo = t + 1, hi = m; /* the first level-0 token that starts at or after end */
        while (lo < hi) {
          size_t mid = lo + (hi - lo) / 2;
          if (j->ostart[mid] < end) lo = mid + 1;
          else hi = mid;
        }
        /* A range that runs past the input (past this tree's anchors) fits no iteration. */
        j->hint0_span[q0] = end > n ? UINT32_MAX : (uint32_t)(lo - t);
        weight[q0] = h->weight[q];
      }
    }
    j->hint0_off[m] = q0;
    j->hint0 = (tl_recover_hints){j->hint0_off, j->hint0_span, weight};
  }
  rc_level lv0 = {0, j->tok0, m, &j->runs0, j->item0, j->nitem, j->anchor0,
                  in->hint ? &j->hint0 : NULL};
  j->tok1 = malloc((nseg ? nseg : 1) * sizeof *j->tok1);
  if (!j->tok1) return nomem(e, "partitions");
  for (size_t s = 0; s < nseg; s++) {
    uint32_t a = j->seg_start.v[s], b = s + 1 < nseg ? j->seg_start.v[s + 1] : (uint32_t)m;
    uint32_t l0, nl, uid = RC_NONE;
    if (j->seg_known.v[s]) {
      uint32_t memo;
      if (tl_rc_structure_segment(g, &lv0, a, b, &l0, &nl, &memo, e)) return TL_RECOVER_ENOMEM;
      uid = g->memo.v[memo].uid;
      if (uid == RC_NONE) uid = g->memo.v[memo].uid = (uint32_t)j->item1_0.n;
    } else {
      l0 = j->item0[j->tok0[a]];
      nl = j->nitem[j->tok0[a]];
    }
    if (uid == RC_NONE || uid == j->item1_0.n) {
      uid = (uint32_t)j->item1_0.n;
      if (TL_VEC_PUSH(&j->item1_0, l0) || TL_VEC_PUSH(&j->item1_n, nl)) return nomem(e, "partitions");
    }
    j->tok1[s] = uid;
  }

  size_t mark = g->scratch.n;
  if (nseg == 1) {
    uint32_t id = j->tok1[0];
    if (TL_VEC_RESERVE(&g->scratch, mark + j->item1_n.v[id])) return nomem(e, "root");
    memcpy(g->scratch.v + mark, g->lists.v + j->item1_0.v[id], j->item1_n.v[id] * sizeof(uint32_t));
    g->scratch.n += j->item1_n.v[id];
  } else if (nseg > 1) {
    uint32_t zero = 0, nid1 = (uint32_t)j->item1_0.n;
    /* A partition holding an ambiguous token bans the repeats over it like a token. */
    if (j->amb0) {
      j->amb1 = calloc(nseg + 1, sizeof *j->amb1);
      if (!j->amb1) return nomem(e, "ambiguous partitions");
      for (size_t s = 0; s < nseg; s++) {
        uint32_t a = j->seg_start.v[s], b = s + 1 < nseg ? j->seg_start.v[s + 1] : (uint32_t)m;
        j->amb1[s + 1] = j->amb1[s] + (j->amb0[b] != j->amb0[a]);
      }
    }
    if (tl_rc_runs_detect(j->tok1, nseg, nid1, &zero, 1, &j->runs1, e)) return TL_RECOVER_ENOMEM;
    /* An iteration may not cross a partition boundary: only runs of whole single
    ** partitions (period 1) fold at this level. */
    size_t keep = 0;
    for (size_t r = 0; r < j->runs1.n; r++)
      if (j->runs1.run[r].p == 1) j->runs1.run[keep++] = j->runs1.run[r];
    j->runs1.n = keep;
    if (tl_rc_runs_index(&j->runs1, j->tok1, nid1, j->amb1, NULL, e)) return TL_RECOVER_ENOMEM;
    j->anchor1 = malloc((j->runs1.ncls ? j->runs1.ncls : 1) * sizeof *j->anchor1);
    if (!j->anchor1) return nomem(e, "anchors");
    memset(j->anchor1, 0xff, (j->runs1.ncls ? j->runs1.ncls : 1) * sizeof *j->anchor1);
    rc_level lv1 = {1, j->tok1, nseg, &j->runs1, j->item1_0.v, j->item1_n.v, j->anchor1, NULL};
    if (tl_rc_structure_all(g, &lv1, e)) return TL_RECOVER_ENOMEM;
  }
  uint32_t root = tl_rc_def_intern(g, RC_SEQ, 0, g->scratch.v + mark, (uint32_t)(g->scratch.n - mark));
  if (root == RC_NONE) return nomem(e, "root");
  g->scratch.n = mark;
  if (g->defs.v[root].len != n) {
    tl_fail(e, "recover_invariant_violation: root covers %llu of %zu tokens",
            (unsigned long long)g->defs.v[root].len, n);
    return TL_RECOVER_EINVARIANT;
  }
  /* Free the token level before the occurrence arrays are allocated. */
  free(j->tok0), j->tok0 = NULL;
  free(j->ostart), j->ostart = NULL;
  tl_rc_runs_free(&j->runs0);
  tl_rc_runs_free(&j->runs1);
  return lower(g, root, n, out, e);
}

int tl_recover(const tl_recover_input *in, tl_structure *out, tl_err *e) {
  memset(out, 0, sizeof *out);
  if (!in || (in->n && !in->symbols) || (in->nprotect && !in->protect)) {
    tl_fail(e, "recover_bad_input: missing symbols or protected intervals");
    return TL_RECOVER_EINPUT;
  }
  if (in->n >= (size_t)UINT32_MAX - 1) {
    tl_fail(e, "recover_too_large: %zu tokens exceed the uint32 token ordinal", in->n);
    return TL_RECOVER_ETOOBIG;
  }
  out->ntokens = in->n;
  rc_job j;
  memset(&j, 0, sizeof j);
  int rc = recover_build(in, &j, out, e);
  job_free(&j);
  if (rc == TL_OK) rc = tl_structure_check(out, in, e);
  if (rc != TL_OK) tl_structure_free(out);
  return rc;
}

void tl_structure_free(tl_structure *s) {
  if (!s) return;
  free(s->positions);
  free(s->slots);
  free(s->occurrences);
  memset(s, 0, sizeof *s);
}

/* ---- fail-closed checker ---- */

static int bad(tl_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(tl_err *e, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tl_fail(e, "recover_invariant_violation: %s", msg);
  return TL_RECOVER_EINVARIANT;
}

typedef struct chk_frame {
  uint32_t occ, cursor, iter, slot; /* slot: next expected, 1-based; 0 = complete */
} chk_frame;

static int check_close(const tl_structure *s, const chk_frame *f, tl_err *e) {
  const tl_occurrence *o = &s->occurrences[f->occ];
  if (f->slot != 0 || f->cursor != o->end)
    return bad(e, "occurrence %u of position N%03u is incomplete: children stop at token %u of [%u, %u), "
                  "slot %u iteration %u pending",
               f->occ, o->position + 1, f->cursor, o->start, o->end, f->slot, f->iter);
  return TL_OK;
}

int tl_structure_check(const tl_structure *s, const tl_recover_input *in, tl_err *e) {
  size_t n = in->n, np = s->npositions;
  if (!np || !s->noccurrences) return bad(e, "no root");
  const tl_position *R = &s->positions[0];
  if (R->kind != TL_POS_SEQ || R->unit_template || R->token_len != n)
    return bad(e, "the root N001 is not a Seq spanning [0, %zu)", n);

  /* Positions: well formed, and ids are the first-encounter preorder. */
  for (size_t k = 0; k < np; k++) {
    const tl_position *p = &s->positions[k];
    if (p->kind < TL_POS_ATOM || p->kind > TL_POS_REPEAT || (size_t)p->first_slot + p->nslots > s->nslots)
      return bad(e, "position N%03zu has a bad kind or slot range", k + 1);
    uint64_t len = p->kind == TL_POS_ATOM ? 1 : 0;
    for (uint32_t i = 0; i < p->nslots; i++) {
      uint32_t c = s->slots[p->first_slot + i];
      if (c >= np || c == 0) return bad(e, "position N%03zu slot %u names no position", k + 1, i + 1);
      len += s->positions[c].token_len;
    }
    if (p->kind == TL_POS_REPEAT) len *= p->repeat_count;
    if ((p->kind == TL_POS_ATOM && p->nslots) || (p->kind == TL_POS_REPEAT && (p->repeat_count < 2 || !p->nslots)) ||
        (p->kind == TL_POS_SEQ && !p->nslots && k) || len != p->token_len)
      return bad(e, "position N%03zu (%s) is malformed: %u slots, count %u, %llu tokens (slots sum to %llu)",
                 k + 1, p->kind == TL_POS_ATOM ? "Atom" : p->kind == TL_POS_SEQ ? "Seq" : "Repeat",
                 p->nslots, p->repeat_count, (unsigned long long)p->token_len, (unsigned long long)len);
  }
  {
    uint8_t *seen = calloc(np, 1);
    TL_VEC(walk_frame) st = {0};
    int rc = TL_OK;
    uint32_t next = 1;
    if (!seen || TL_VEC_PUSH(&st, ((walk_frame){0, 0}))) rc = TL_RECOVER_ENOMEM;
    if (seen) seen[0] = 1;
    while (rc == TL_OK && st.n) {
      walk_frame *f = &st.v[st.n - 1];
      const tl_position *p = &s->positions[f->def];
      if (f->k == p->nslots) {
        st.n--;
        continue;
      }
      uint32_t c = s->slots[p->first_slot + f->k++];
      if (seen[c]) continue;
      if (c != next) rc = bad(e, "position ids are not in first-encounter preorder: met N%03u where N%03u was due", c + 1, next + 1);
      seen[c] = 1;
      next++;
      if (rc == TL_OK && TL_VEC_PUSH(&st, ((walk_frame){c, 0}))) rc = TL_RECOVER_ENOMEM;
    }
    if (rc == TL_OK && next != np) rc = bad(e, "%zu positions are unreachable from the root", np - next);
    free(seen);
    TL_VEC_FREE(&st);
    if (rc == TL_RECOVER_ENOMEM) tl_fail(e, "recover_out_of_memory: checking positions");
    if (rc) return rc;
  }

  /* Protection and partition context. */
  prot_set ps;
  int rc = prot_load(in, &ps, e);
  if (rc) return rc;
  uint32_t *amb = NULL, *cnt = NULL, *ne = NULL; /* prefix counts over input tokens */
  TL_VEC(uint32_t) stretch = {0}; /* starts of partition stretches; stretch_known parallel */
  TL_VEC(uint8_t) stretch_known = {0};
  TL_VEC(chk_frame) st = {0};
  size_t nunit_seen = 0;
  if (ps.namb) {
    amb = calloc(n + 1, sizeof *amb);
    if (!amb) goto nomem;
    for (size_t k = 0; k < ps.namb; k++) {
      amb[ps.amb[k].first]++;
      amb[ps.amb[k].last + 1]--;
    }
    uint32_t d = 0, acc = 0;
    for (size_t i = 0; i <= n; i++) {
      d += amb[i];
      amb[i] = acc;
      acc += i < n && d ? 1 : 0;
    }
  }
  for (size_t k = 0; k < ps.nunit; k++) {
    if (ps.unit[k].kind != TL_PROTECT_UNIT_NO_ENCLOSE) continue;
    if (!ne && !(ne = calloc(n + 1, sizeof *ne))) goto nomem;
    ne[ps.unit[k].first + 1] = 1;
  }
  if (ne)
    for (size_t i = 0; i < n; i++) ne[i + 1] += ne[i];
  if (in->partition)
    for (size_t i = 0; i < n; i++)
      if (i == 0 || in->partition[i] != in->partition[i - 1] || in->partition[i] == TL_RECOVER_NO_PARTITION) {
        if (TL_VEC_PUSH(&stretch, (uint32_t)i) ||
            TL_VEC_PUSH(&stretch_known, (uint8_t)(in->partition[i] != TL_RECOVER_NO_PARTITION)))
          goto nomem;
      }
  cnt = calloc(np, sizeof *cnt);
  if (!cnt) goto nomem;

  const tl_occurrence *O = s->occurrences;
  if (O[0].position != 0 || O[0].parent != TL_RECOVER_NONE || O[0].slot || O[0].member_order ||
      O[0].occurrence_idx != 1 || O[0].start != 0 || O[0].end != n) {
    rc = bad(e, "occurrence 0 is not the root over [0, %zu)", n);
    goto out;
  }
  cnt[0] = 1;
  if (TL_VEC_PUSH(&st, ((chk_frame){0, 0, 1, R->nslots ? 1 : 0}))) goto nomem;
  for (size_t i = 1; i < s->noccurrences; i++) {
    const tl_occurrence *o = &O[i];
    if (o->parent >= i || o->position >= np) {
      rc = bad(e, "occurrence %zu names parent %u / position %u out of order or range", i, o->parent, o->position);
      goto out;
    }
    while (st.n && st.v[st.n - 1].occ != o->parent) {
      if ((rc = check_close(s, &st.v[st.n - 1], e))) goto out;
      st.n--;
    }
    if (!st.n) {
      rc = bad(e, "occurrence %zu: parent %u is not open (members out of walk order)", i, o->parent);
      goto out;
    }
    chk_frame *f = &st.v[st.n - 1];
    const tl_position *P = &s->positions[O[f->occ].position];
    const tl_position *C = &s->positions[o->position];
    uint32_t want_member = P->kind == TL_POS_REPEAT ? f->iter : 1;
    if (!f->slot || o->slot != f->slot || o->member_order != want_member ||
        o->position != s->slots[P->first_slot + f->slot - 1] || o->start != f->cursor ||
        (uint64_t)o->end - o->start != C->token_len || o->end > O[f->occ].end) {
      rc = bad(e, "occurrence %zu (N%03u, slot %u, member %u, [%u, %u)) does not fill slot %u iteration %u of "
                  "its parent N%03u at token %u",
               i, o->position + 1, o->slot, o->member_order, o->start, o->end, f->slot, f->iter,
               O[f->occ].position + 1, f->cursor);
      goto out;
    }
    if (o->occurrence_idx != ++cnt[o->position]) {
      rc = bad(e, "occurrence %zu: occurrence_idx %u of N%03u should be %u", i, o->occurrence_idx,
               o->position + 1, cnt[o->position]);
      goto out;
    }
    f->cursor = o->end;
    if (++f->slot > P->nslots) {
      if (P->kind == TL_POS_REPEAT && f->iter < P->repeat_count) {
        f->iter++;
        f->slot = 1;
      } else {
        f->slot = 0;
      }
    }
    if (C->kind == TL_POS_ATOM) {
      if (in->symbols[o->start] != C->symbol) {
        rc = bad(e, "atom N%03u (symbol %u) owns token %u whose symbol is %u", o->position + 1, C->symbol,
                 o->start, in->symbols[o->start]);
        goto out;
      }
      continue;
    }
    if (C->kind == TL_POS_SEQ) {
      if (!C->unit_template) {
        rc = bad(e, "occurrence %zu: a Seq below the root must be a protected unit", i);
        goto out;
      }
      size_t lo = 0, hi = ps.nunit;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ps.unit[mid].first < o->start) lo = mid + 1; else hi = mid;
      }
      if (lo == ps.nunit || ps.unit[lo].first != o->start || ps.unit[lo].last + 1 != o->end) {
        rc = bad(e, "unit occurrence [%u, %u) matches no protected unit", o->start, o->end);
        goto out;
      }
      nunit_seen++;
    }
    if (C->kind == TL_POS_REPEAT) {
      uint32_t il = (uint32_t)(C->token_len / C->repeat_count);
      if (amb && amb[o->end] != amb[o->start]) {
        rc = bad(e, "repeat N%03u over [%u, %u) overlaps an ambiguous interval", o->position + 1, o->start, o->end);
        goto out;
      }
      if (stretch.n)
        for (uint32_t x = o->start; x < o->end; x += il) {
          size_t lo = 0, hi = stretch.n;
          while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (stretch.v[mid] <= x) lo = mid + 1; else hi = mid;
          }
          size_t k = lo - 1;
          uint32_t end = k + 1 < stretch.n ? stretch.v[k + 1] : (uint32_t)n;
          if (!stretch_known.v[k] || x + il > end) {
            rc = bad(e, "repeat N%03u iteration [%u, %u) leaves its partition [%u, %u)%s", o->position + 1, x,
                     x + il, stretch.v[k], end, stretch_known.v[k] ? "" : " (unknown step)");
            goto out;
          }
        }
      if (ne && ne[o->end] != ne[o->start] &&
          (C->nslots != 1 || !s->positions[s->slots[C->first_slot]].unit_template)) {
        rc = bad(e, "repeat N%03u over [%u, %u) encloses a no-enclose unit together with other tokens",
                 o->position + 1, o->start, o->end);
        goto out;
      }
    }
    if (TL_VEC_PUSH(&st, ((chk_frame){(uint32_t)i, o->start, 1, C->nslots ? 1 : 0}))) goto nomem;
  }
  while (st.n) {
    if ((rc = check_close(s, &st.v[st.n - 1], e))) goto out;
    st.n--;
  }
  for (size_t k = 0; k < np; k++)
    if (s->positions[k].occurrence_count != cnt[k]) {
      rc = bad(e, "position N%03zu claims %u occurrences, the walk has %u", k + 1,
               s->positions[k].occurrence_count, cnt[k]);
      goto out;
    }
  if (nunit_seen != ps.nunit) {
    rc = bad(e, "%zu protected units but %zu unit occurrences", ps.nunit, nunit_seen);
    goto out;
  }
  goto out;
nomem:
  rc = TL_RECOVER_ENOMEM;
  tl_fail(e, "recover_out_of_memory: checking occurrences");
out:
  prot_free(&ps);
  free(amb);
  free(ne);
  free(cnt);
  TL_VEC_FREE(&stretch);
  TL_VEC_FREE(&stretch_known);
  TL_VEC_FREE(&st);
  return rc;
}

/* ---- outline ---- */

typedef struct sbuf {
  char *p;
  size_t n, cap;
  int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int k = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (k < 0 || tl_vec_reserve_((void **)&b->p, &b->cap, b->n + (size_t)k + 1, 1)) {
    b->oom = 1;
    va_end(ap);
    return;
  }
  vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
  b->n += (size_t)k;
  va_end(ap);
}

static void outline_rec(const tl_structure *s, sbuf *b, uint32_t pos, unsigned depth, unsigned max_depth,
                        unsigned max_children, size_t *budget) {
  if (!*budget) return;
  (*budget)--;
  const tl_position *p = &s->positions[pos];
  sb_printf(b, "%*s", (int)(2 * depth), "");
  if (p->kind == TL_POS_ATOM)
    sb_printf(b, "N%03u Atom %u\n", pos + 1, p->symbol);
  else if (p->kind == TL_POS_REPEAT)
    sb_printf(b, "N%03u Rep x%u [%llu tok/iter, %u slots]\n", pos + 1, p->repeat_count,
              (unsigned long long)(p->token_len / p->repeat_count), p->nslots);
  else if (p->unit_template)
    sb_printf(b, "N%03u Seq unit T%u [%llu tok]\n", pos + 1, p->unit_template, (unsigned long long)p->token_len);
  else
    sb_printf(b, "N%03u Seq [%llu tok, %u slots]\n", pos + 1, (unsigned long long)p->token_len, p->nslots);
  if (depth >= max_depth) return;
  for (uint32_t i = 0; i < p->nslots; i++) {
    if (i == max_children) {
      sb_printf(b, "%*s... %u more slots\n", (int)(2 * depth + 2), "", p->nslots - i);
      break;
    }
    outline_rec(s, b, s->slots[p->first_slot + i], depth + 1, max_depth, max_children, budget);
  }
}

char *tl_structure_outline(const tl_structure *s, unsigned max_depth, unsigned max_children) {
  sbuf b = {0};
  size_t budget = 4000;
  sb_printf(&b, "%s", "");
  if (s->npositions) outline_rec(s, &b, 0, 0, max_depth, max_children, &budget);
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

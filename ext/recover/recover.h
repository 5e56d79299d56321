/*
** recover.h: nested repeat discovery over one device's anchor token sequence.
**
** Input: the anchor symbols of one (db_idx, device_id) in anchor_idx order, optional
** per-token step partitions, and protected intervals (graph replay units). Output: a
** tree of *positions* (definitions: Atom, Seq, Repeat) and *occurrences* (their
** realisations over token spans), ready to be published as the HPO relations of
** outputs.md section 4 and recovery.md section 5.
**
**   tl_recover_input in = {.symbols = sym, .n = n};      // partition, protect optional
**   tl_structure st;
**   tl_err e = {0};
**   if (tl_recover(&in, &st, &e) != TL_OK) { ... e.msg names the failure ... }
**   for (size_t i = 0; i < st.noccurrences; i++) { const tl_occurrence *o = &st.occurrences[i]; ... }
**   tl_structure_free(&st);
**
** Positions. positions[k] is the definition with local_node_id N<k+1> (N001 = index 0 =
** the root): ids are assigned in first-encounter order of a depth-first, left-to-right
** walk, which is the display order. Identical structures are one position: every Atom
** of one symbol, every Repeat with the same count and body, every protected unit with
** the same content. A Seq is either the root (unit_template 0) or a protected unit.
** Children ("refinements") of position k are slots 1..nslots:
** slots[first_slot + j - 1] is the position id in slot j. A Repeat's slots are the
** children of ONE iteration; repeat_count iterations realise them.
**
** Occurrences are in walk (time) order: the root first, then depth first, left to right.
** Each names its parent occurrence (index; TL_RECOVER_NONE for the root), the slot it
** fills in the parent position (1-based; 0 for the root) and member_order: 1 under a
** Seq, the iteration 1..N under a Repeat (= repeat_iteration), 0 for the root.
** occurrence_idx is 1-based per position in walk order. Spans are [start, end) in input
** token ordinals; an Atom owns exactly one token (its terminal, member slot 0).
**
** Guarantees (checked before tl_recover returns, fail closed otherwise): the root spans
** [0, n); children tile their parent exactly; each Repeat span is repeat_count equal
** iterations whose children follow the slots; every protected unit is one Seq occurrence
** that is never split; no repeat iteration leaves one known partition or touches an
** unknown-partition token (the root may span partitions); no repeat touches an
** ambiguous interval. The same input gives byte-identical output.
**
** Algorithm (docs/RECOVERY_ALGORITHM.md): maximal runs (tandem repeats) are detected
** once per level in near-linear time, then folded top down: the run covering most
** tokens becomes a Repeat, its first iteration is structured recursively (one
** definition shared by all iterations, memoized by content), the rest of the segment
** likewise. The phase of each Repeat is chosen so that it keeps the most whole
** iterations, then (with the host hierarchy's hint) where more ranges that fit in one
** iteration begin, then so that no inner run loses an iteration, then by agreement with
** the segment's edges and the other runs of the same cyclic body, then leftmost. No size
** cap and no round limit.
*/
#ifndef TL_RECOVER_H
#define TL_RECOVER_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define TL_RECOVER_NONE UINT32_MAX
/* partition[] value of a token whose step is unknown: it is a barrier no repeat may hold. */
#define TL_RECOVER_NO_PARTITION UINT32_MAX

/* Error codes returned by tl_recover / tl_structure_check (TL_OK = 0 on success).
** Every code is non-zero, so `rc != TL_OK` tests for failure; e->msg starts with the
** code's name, e.g. "recover_step_conflict: ...". */
enum {
  TL_RECOVER_EINPUT = 2,     /* recover_bad_input: bad interval, symbol or size */
  TL_RECOVER_ESTEP = 3,      /* recover_step_conflict: a protected replay has missing or
                                conflicting step identity */
  TL_RECOVER_EINVARIANT = 4, /* recover_invariant_violation: HPO invariants do not hold */
  TL_RECOVER_ENOMEM = 5,     /* recover_out_of_memory */
  TL_RECOVER_ETOOBIG = 6     /* recover_too_large: token/occurrence count beyond uint32 */
};

/* Protected interval policies (recovery.md 4.2). */
typedef enum tl_protect_kind {
  /* Exact replay unit: one opaque token keyed by its content (equal units share one
  ** Seq definition); repeats may contain whole units, never cut them. */
  TL_PROTECT_UNIT = 0,
  /* As UNIT, but no repeat body may hold the unit together with other tokens
  ** ("no-cross, allow_enclosing: false"); only a repeat of the unit alone is allowed. */
  TL_PROTECT_UNIT_NO_ENCLOSE = 1,
  /* Block any overlap ("ambiguous"): its tokens stay plain atoms that no repeat touches,
  ** and every repeat body (cyclic key) that would have overlapped it is dropped
  ** everywhere in the sequence, clean copies included. */
  TL_PROTECT_AMBIGUOUS = 2
} tl_protect_kind;

typedef struct tl_protected {
  size_t first, last; /* inclusive token range */
  uint32_t kind;      /* tl_protect_kind */
} tl_protected;

/* Host ranges that begin at each token: token t's are entries [off[t], off[t + 1]) of span
** (how many tokens the range covers, from t) and weight (what it counts for: a module or an
** annotation far more than a Python function). Offsets index span and weight directly, so a
** slice of a larger table is the same arrays with off moved (off[0] need not be 0). */
typedef struct tl_recover_hints {
  const uint32_t *off; /* n + 1 */
  const uint32_t *span;
  const uint32_t *weight;
} tl_recover_hints;

typedef struct tl_recover_input {
  const uint32_t *symbols; /* n token symbol ids; dense small integers (< 2^28) */
  size_t n;                /* < 2^32 - 2 */
  /* Optional (NULL = one partition): step id per token, TL_RECOVER_NO_PARTITION =
  ** unknown. A partition is a maximal stretch of one id. Partitions are barriers: every
  ** repeat iteration lies inside one known partition, so a repeat spans partitions
  ** only as a run of equal whole partitions (one per iteration); equal partitions
  ** share definitions. */
  const uint32_t *partition;
  /* Optional protected intervals, any order. Units (UNIT, UNIT_NO_ENCLOSE) must not
  ** overlap each other and must lie in one known partition; ambiguous intervals may
  ** overlap anything. */
  const tl_protected *protect;
  size_t nprotect;
  /* Optional (NULL = none): the ranges of the trace's own host hierarchy (modules,
  ** functions, annotations) that begin at each token (tl_recover_hints). Among the
  ** rotations of a Repeat that keep as many whole iterations, the one whose iterations begin
  ** where more ranges that fit in one iteration begin wins, before the damage to shorter
  ** runs and the segment-edge, vote and leftmost tie-breaks. It never changes which tokens
  ** repeat, only where an iteration starts. */
  const tl_recover_hints *hint;
} tl_recover_input;

typedef enum tl_position_kind {
  TL_POS_ATOM = 1,
  TL_POS_SEQ = 2,
  TL_POS_REPEAT = 3
} tl_position_kind;

typedef struct tl_position {
  uint32_t kind;             /* tl_position_kind */
  uint32_t symbol;           /* ATOM: the input symbol; TL_RECOVER_NONE otherwise */
  uint32_t repeat_count;     /* REPEAT: N >= 2; 0 otherwise */
  uint32_t unit_template;    /* SEQ of a protected unit: 1-based template ordinal in
                                order of first occurrence; 0 for the root and others */
  uint32_t first_slot;       /* slot j (1-based) is slots[first_slot + j - 1] */
  uint32_t nslots;           /* 0 for an ATOM */
  uint32_t occurrence_count; /* occurrences of this position */
  uint32_t depth;            /* depth of its first occurrence (root 0) */
  uint64_t token_len;        /* tokens spanned by one occurrence */
} tl_position;

typedef struct tl_occurrence {
  uint32_t position;       /* index into positions */
  uint32_t parent;         /* index into occurrences; TL_RECOVER_NONE for the root */
  uint32_t slot;           /* 1-based slot in the parent position; 0 for the root */
  uint32_t member_order;   /* 1 under a Seq; iteration 1..N under a Repeat; 0 root */
  uint32_t occurrence_idx; /* 1-based per position, walk order */
  uint32_t start, end;     /* token span [start, end) */
} tl_occurrence;

typedef struct tl_structure {
  tl_position *positions;
  size_t npositions;
  uint32_t *slots;
  size_t nslots;
  tl_occurrence *occurrences;
  size_t noccurrences;
  size_t ntokens;
  /* Diagnostics. */
  size_t nruns;      /* maximal runs detected over the token level (after bans) */
  size_t nunits;     /* protected unit templates */
  size_t npartitions;/* partition segments (known stretches and unknown tokens) */
} tl_structure;

/* Recovers the structure. On success returns TL_OK and fills *out (free with
** tl_structure_free); on failure returns a TL_RECOVER_E* code, sets e and leaves *out
** empty. The input is only read. */
int tl_recover(const tl_recover_input *in, tl_structure *out, tl_err *e);

/* Re-checks every invariant listed above for s against in (what tl_recover does before
** returning). Returns TL_OK or TL_RECOVER_EINVARIANT / TL_RECOVER_EINPUT with e set. */
int tl_structure_check(const tl_structure *s, const tl_recover_input *in, tl_err *e);

void tl_structure_free(tl_structure *s);

/* Human-readable outline of the positions below the root, one line per slot, e.g.
**   N001 Seq [10000000 tok]
**     N002 Rep x36 [1300 tok/iter]
**       N003 Atom 7
** Children beyond max_children per position are summarised; positions deeper than
** max_depth are elided. Returns a malloc'd string (NULL on out-of-memory). */
char *tl_structure_outline(const tl_structure *s, unsigned max_depth, unsigned max_children);

#endif

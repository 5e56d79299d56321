/*
** test_rules.c: loading rule manifests and rules configs (ext/classify/rules.c).
**
** Expected values come from recovery.md sections 2.2-2.7 and from the YAML texts themselves:
** rule counts are counted in the rules/ manifests (68 classification rules: 16 Ascend task-type
** auxiliaries, 4 sync blobs, 1 AI_CORE transparent, 1 DispatchFFNCombineBF16 anchor, 5 CUDA
** auxiliaries, 2 CUDA anchors, 2 Hygon auxiliaries, 1 Hygon anchor, 12 collective and 19
** model-op blob anchors; for PyTorch CPU operators 2 anchors, 1 transparent, 2 auxiliaries), and error lines are the line numbers of the offending key in the
** texts below and in tests/fixtures/rules/. Digests are recomputed here from the bytes.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "classify/classify.h"
#include "embedded.h"
#include "util/sha256.h"
#include "tl_check.h"

/* ---------------------------------------------------------------- helpers */

static tl_rules *load_ok(const char *config) {
  tl_rules *r = NULL;
  tl_err e = {0};
  int rc = tl_rules_load(config, &r, &e);
  ck_assert_msg(rc == TL_OK, "loading %s failed: %s", config ? config : "(defaults)",
                e.msg ? e.msg : "?");
  ck_assert_ptr_nonnull(r);
  return r;
}

/* The error message of a load that must fail (caller frees). */
static char *load_err(const char *config) {
  tl_rules *r = NULL;
  tl_err e = {0};
  int rc = tl_rules_load(config, &r, &e);
  ck_assert_msg(rc == TL_ERROR, "loading %s succeeded, expected an error", config);
  ck_assert_ptr_null(r);
  ck_assert_ptr_nonnull(e.msg);
  return tl_err_take(&e);
}

static void expect_err(const char *config, const char *want) {
  char *msg = load_err(config);
  ck_assert_msg(strstr(msg, want) != NULL, "error for %s was\n  %s\nexpected to contain\n  %s",
                config, msg, want);
  free(msg);
}

/* Writes text to a fresh temporary .yaml file; returns its path (caller unlinks, frees). */
static char *tmp_yaml(const char *text) {
  char *path = strdup("/tmp/tl_rules_XXXXXX.yaml");
  int fd = mkstemps(path, 5);
  ck_assert_int_ge(fd, 0);
  size_t n = strlen(text);
  ck_assert_int_eq((long)write(fd, text, n), (long)n);
  close(fd);
  return path;
}

/* Error for inline text: "<path>:<line>: <key>" must appear. */
static void expect_inline_err(const char *text, int line, const char *key, const char *also) {
  char *path = tmp_yaml(text);
  char want[512];
  snprintf(want, sizeof want, "%s:%d: %s", path, line, key);
  char *msg = load_err(path);
  ck_assert_msg(strstr(msg, want) != NULL, "error was\n  %s\nexpected to contain\n  %s", msg, want);
  if (also) ck_assert_msg(strstr(msg, also) != NULL, "error was\n  %s\nexpected to mention %s", msg, also);
  free(msg);
  unlink(path);
  free(path);
}

static void sha_of(const void *p, size_t n, char hex[65]) {
  tl_sha256 s;
  uint8_t d[32];
  tl_sha256_init(&s);
  tl_sha256_update(&s, p, n);
  tl_sha256_final(&s, d);
  tl_sha256_hex(d, hex);
}

static void file_sha(const char *path, char hex[65]) {
  tl_err e = {0};
  ck_assert_int_eq(tl_sha256_file(path, hex, NULL, &e), TL_OK);
}

static const tl_class_rule *class_rule(const tl_rules *r, const char *id, size_t *pos) {
  for (size_t i = 0; i < r->cls.rules.n; i++)
    if (strcmp(r->cls.rules.v[i].rule_id, id) == 0) {
      if (pos) *pos = i;
      return &r->cls.rules.v[i];
    }
  return NULL;
}

static char *fixture_rules(const char *name) {
  size_t n = strlen("tests/fixtures/rules/") + strlen(name) + 1;
  char *p = malloc(n);
  snprintf(p, n, "tests/fixtures/rules/%s", name);
  return p;
}

/* ---------------------------------------------------------------- defaults */

START_TEST(test_defaults) {
  unsetenv("TRACELOOM_CLASSIFICATION_RULES");
  tl_rules *r = load_ok(NULL);
  ck_assert_int_eq(r->cls.rules.n, 68);
  ck_assert_int_eq(r->sym.rules.n, 9);
  ck_assert_int_eq(r->rec.rules.n, 3);
  ck_assert_str_eq(r->cls.meta.policy_id, "traceloom.default.accelerator-task-projection");
  ck_assert_str_eq(r->cls.meta.policy_version, "3");
  ck_assert_str_eq(r->sym.meta.policy_id, "traceloom.default-structural-symbols");
  ck_assert_str_eq(r->rec.meta.policy_id, "traceloom.default.event-reconciliation");
  ck_assert_ptr_null(r->config_name);

  /* Decision order: priority descending, ties in declaration order. */
  for (size_t i = 1; i < r->cls.rules.n; i++) {
    const tl_class_rule *a = &r->cls.rules.v[i - 1], *b = &r->cls.rules.v[i];
    ck_assert(a->priority > b->priority ||
              (a->priority == b->priority && a->decl_order < b->decl_order));
  }
  ck_assert_int_eq(r->cls.rules.v[0].priority, 100);
  ck_assert_int_eq(r->cls.rules.v[62].priority, 60);

  size_t pos;
  const tl_class_rule *ai = class_rule(r, "ascend.transparent.task.type.ai.core.7897ff1d", &pos);
  ck_assert_ptr_nonnull(ai);
  ck_assert_int_eq(ai->role, TL_EVIDENCE_TRANSPARENT);
  ck_assert_int_eq(ai->defer, 1);
  ck_assert_int_eq(ai->priority, 70);
  const tl_class_rule *ffn = class_rule(r, "ascend.anchor.operator.dispatchffncombinebf16.dccb9f76", NULL);
  ck_assert_ptr_nonnull(ffn);
  ck_assert_int_eq(ffn->field, TL_CF_OPERATOR);
  ck_assert_str_eq(ffn->key, "dispatchffncombinebf16"); /* operator compares lower-cased */
  ck_assert_int_eq(ffn->priority, 85);

  size_t counts[TL_EVIDENCE_NONE] = {0};
  for (size_t i = 0; i < r->cls.rules.n; i++) counts[r->cls.rules.v[i].role]++;
  ck_assert_int_eq(counts[TL_EVIDENCE_AUXILIARY], 16 + 4 + 5 + 2 + 2);
  ck_assert_int_eq(counts[TL_EVIDENCE_TRANSPARENT], 1 + 1);
  ck_assert_int_eq(counts[TL_EVIDENCE_ANCHOR], 1 + 2 + 1 + 12 + 19 + 2);

  /* The manifest digest is the SHA-256 of the bundled bytes. */
  const tl_embedded_file *f = tl_embedded_find("rules/classification.yaml");
  ck_assert_ptr_nonnull(f);
  char hex[65];
  sha_of(f->text, f->len, hex);
  ck_assert_str_eq(r->cls.meta.sha256, hex);
  ck_assert_int_eq(strlen(tl_rules_digest(r)), 64);

  /* The decorated-kernel rule gives {kernel_base}. */
  const tl_symbol_rule *last = &r->sym.rules.v[8];
  ck_assert_str_eq(last->rule_id, "ascend.task.decorated-kernel-base");
  ck_assert_int_eq(last->kernel_base, 1);
  ck_assert_int_eq(last->priority, 10);
  ck_assert_int_eq(r->rec.rules.v[0].min_contained_ppm, 990000);
  ck_assert_int_eq(r->rec.rules.v[0].generic_context_id, 4294967295LL);
  ck_assert_int_eq(r->rec.rules.v[2].concrete_context_id, -1);
  tl_rules_free(r);
}
END_TEST

START_TEST(test_defaults_deterministic) {
  tl_rules *a = load_ok(NULL), *b = load_ok(NULL);
  ck_assert_str_eq(tl_rules_digest(a), tl_rules_digest(b));
  tl_buf ja = {0}, jb = {0};
  ck_assert_int_eq(tl_rules_options_json(a, &ja), 0);
  ck_assert_int_eq(tl_rules_options_json(b, &jb), 0);
  ck_assert_str_eq(ja.p, jb.p);
  ck_assert_ptr_nonnull(strstr(ja.p, "\"config\":null"));
  tl_buf_free(&ja), tl_buf_free(&jb);
  tl_rules_free(a), tl_rules_free(b);
}
END_TEST

/* ---------------------------------------------------------------- bundled configs */

START_TEST(test_bundled_scheduler_step) {
  tl_rules *r = load_ok("scheduler-step");
  ck_assert_int_eq(r->macro.partition_by_scheduler_step, 1);
  ck_assert_int_eq(r->macro.ordered.n, 0);
  ck_assert_int_eq(r->cls.rules.n, 68);
  ck_assert_str_eq(r->config_name, "scheduler-step");
  const tl_embedded_file *f = tl_embedded_find("configs/scheduler-step.yaml");
  char hex[65];
  sha_of(f->text, f->len, hex);
  ck_assert_str_eq(r->config_sha256, hex);
  tl_rules *d = load_ok(NULL);
  ck_assert_str_ne(tl_rules_digest(r), tl_rules_digest(d)); /* the config enters the digest */
  tl_rules_free(d);
  tl_rules_free(r);
  r = load_ok("configs/scheduler-step.yaml"); /* the other spellings of the name */
  tl_rules_free(r);
  r = load_ok("scheduler-step.yaml");
  tl_rules_free(r);
}
END_TEST

START_TEST(test_bundled_deepseekv4) {
  tl_rules *base = load_ok(NULL);
  tl_rules *r = load_ok("deepseekv4");
  ck_assert_int_eq(r->cls.rules.n, 69);
  size_t pos;
  const tl_class_rule *tm = class_rule(r, "deepseekv4.tensormove-aux", &pos);
  ck_assert_ptr_nonnull(tm);
  ck_assert_int_eq(pos, 0); /* priority 110 is tried first */
  ck_assert_int_eq(tm->priority, 110);
  ck_assert_int_eq(tm->role, TL_EVIDENCE_AUXILIARY);
  ck_assert_int_eq(tm->scope, TL_SCOPE_ASCEND);
  ck_assert_str_eq(r->cls.meta.policy_id,
                   "traceloom.default.accelerator-task-projection+deepseekv4.hints");
  ck_assert_str_eq(r->cls.meta.policy_version, "3+1");
  /* Extended digest: SHA-256 of "<base sha>\n<config sha>". */
  const tl_embedded_file *f = tl_embedded_find("configs/deepseekv4.yaml");
  char cfg[65], both[200], want[65];
  sha_of(f->text, f->len, cfg);
  snprintf(both, sizeof both, "%s\n%s", base->cls.meta.sha256, cfg);
  sha_of(both, strlen(both), want);
  ck_assert_str_eq(r->cls.meta.sha256, want);
  ck_assert_str_eq(r->cls.meta.mode, "extend");
  /* The other stages are untouched. */
  ck_assert_str_eq(r->sym.meta.sha256, base->sym.meta.sha256);
  ck_assert_int_eq(r->macro.ordered.n, 1);
  ck_assert_str_eq(r->macro.ordered.v[0].id, "hc_pre_post");
  ck_assert_str_eq(r->macro.ordered.v[0].before, "HcPre");
  ck_assert_str_eq(r->macro.ordered.v[0].after, "HcPost");
  ck_assert_int_eq(r->macro.suffix.n, 1);
  ck_assert_str_eq(r->macro.suffix.v[0].id, "slot_mapping_cycle_end");
  ck_assert_str_eq(r->macro.suffix.v[0].marker, "_compute_slot_mapping_kernel");
  ck_assert_int_eq(r->macro.partition_by_scheduler_step, 0);
  tl_rules_free(r);
  tl_rules_free(base);
}
END_TEST

START_TEST(test_bundled_qwen35) {
  tl_rules *r = load_ok("qwen35-serving");
  const tl_structure_rules *s = &r->structure, *p = &r->replay_structure;
  ck_assert_int_eq(s->present, 1);
  ck_assert_str_eq(s->id, "qwen35_slot_mapping_tail");
  ck_assert_int_eq(s->mode, TL_UNIT_CYCLE_END);
  ck_assert_str_eq(s->label, "serving_cycle_candidate");
  ck_assert_int_eq(s->end_sequence.n, 23);
  ck_assert_str_eq(s->end_sequence.v[0], "_compute_slot_mapping_kernel");
  ck_assert_str_eq(s->end_sequence.v[20], "Equal");
  ck_assert_str_eq(s->end_sequence.v[22], "ClipByValueV2");
  ck_assert_int_eq(p->present, 1);
  ck_assert_str_eq(p->id, "qwen35_residual_sublayer");
  ck_assert_int_eq(p->mode, TL_UNIT_END_DELIMITED);
  ck_assert_str_eq(p->begin, "GemmaRmsNorm");
  ck_assert_str_eq(p->end, "AddRmsNormBias");
  ck_assert_int_eq(p->decorated_names, 1);
  ck_assert_int_eq(p->end_predecessors.n, 2);
  ck_assert_str_eq(p->end_predecessors.v[0], "aclnnAdds_AddAiCore_Add");
  ck_assert_str_eq(p->end_predecessors.v[1], "Add");
  ck_assert_str_eq(p->boundary_label, "residual_norm");
  ck_assert_int_eq(p->labels.n, 2);
  ck_assert_str_eq(p->labels.v[0].label, "attention");
  ck_assert_int_eq(p->labels.v[0].contains_any.n, 2);
  ck_assert_str_eq(p->labels.v[1].contains_any.v[0], "SwiGlu");
  ck_assert_int_eq(p->compositions.n, 1);
  ck_assert_str_eq(p->compositions.v[0].label, "layer");
  ck_assert_int_eq(p->compositions.v[0].sequence.n, 4);
  ck_assert_str_eq(p->compositions.v[0].sequence.v[2], "mlp");
  ck_assert_int_eq(r->cls.rules.n, 68);
  tl_rules_free(r);
}
END_TEST

START_TEST(test_config_not_found) {
  expect_err("no-such-config", "rules config not found: no-such-config");
  expect_err("no-such-config", "deepseekv4");  /* the message lists the bundled names */
  expect_err("/nonexistent/dir/x.yaml", "rules config not found");
}
END_TEST

/* ---------------------------------------------------------------- stage modes */

START_TEST(test_stage_modes) {
  char *path = fixture_rules("good_stages.yaml");
  tl_rules *base = load_ok(NULL);
  tl_rules *r = load_ok(path);
  char cfg[65];
  file_sha(path, cfg);
  ck_assert_str_eq(r->config_sha256, cfg);

  /* extend: one more rule, new provenance, rule origin = the config at its line. */
  ck_assert_int_eq(r->cls.rules.n, 69);
  const tl_class_rule *g = class_rule(r, "test.gatherv2-aux", NULL);
  ck_assert_ptr_nonnull(g);
  ck_assert_int_eq(g->cost, TL_COSTP_RETAINED_AS_EVIDENCE);
  ck_assert_int_eq(g->line, 9);
  ck_assert_str_eq(r->origins.v[g->origin].name, path);
  ck_assert_str_eq(r->cls.meta.policy_id,
                   "traceloom.default.accelerator-task-projection+test.extra");
  ck_assert_str_eq(r->cls.meta.policy_version, "3+7");

  /* override: same count, same place, new body. */
  ck_assert_int_eq(r->sym.rules.n, 9);
  ck_assert_str_eq(r->sym.rules.v[1].rule_id, "ascend.task.matmul-backend-variant");
  ck_assert_str_eq(r->sym.rules.v[1].structural_symbol, "Gemm");
  ck_assert_int_eq(r->sym.rules.v[1].nalts, 2);
  ck_assert_str_eq(r->sym.meta.policy_id, "traceloom.default-structural-symbols+test.symbols");
  char both[200], want[65];
  snprintf(both, sizeof both, "%s\n%s", base->sym.meta.sha256, cfg);
  sha_of(both, strlen(both), want);
  ck_assert_str_eq(r->sym.meta.sha256, want);
  ck_assert_str_eq(r->sym.meta.mode, "override");

  /* replace with rules: [] leaves the fallback only. */
  ck_assert_int_eq(r->rec.rules.n, 0);
  ck_assert_str_eq(r->rec.meta.policy_id, "test.no-reconciliation");
  ck_assert_str_eq(r->rec.meta.sha256, cfg);
  ck_assert_str_eq(r->rec.meta.mode, "replace");
  tl_rules_free(r);
  tl_rules_free(base);
  free(path);

  path = fixture_rules("replace_empty.yaml");
  r = load_ok(path);
  ck_assert_int_eq(r->cls.rules.n, 0);
  ck_assert_str_eq(r->cls.meta.policy_id, "test.empty-classification");
  ck_assert_int_eq(r->sym.rules.n, 9);
  tl_rules_free(r);
  free(path);
}
END_TEST

/* Rules a config overrides keep their declaration position among equal priorities. */
START_TEST(test_override_keeps_position) {
  static const char text[] =
      "schema: traceloom-analysis-rules-v1\n"
      "classification:\n"
      "  mode: override\n"
      "  metadata: {policy_id: t.o, policy_version: \"1\"}\n"
      "  rules:\n"
      "    - {rule_id: ascend.aux.task.type.notify.wait.717e33e3, priority: 70,\n"
      "       provider_scope: ascend, source_domain: task, field: task_type, match: exact,\n"
      "       pattern: NOTIFY_WAIT, role: transparent, required_fields: task_type,\n"
      "       structural_participation: excluded, cost_treatment: retained_as_evidence,\n"
      "       context_treatment: retained, provenance_treatment: retained,\n"
      "       missing_evidence_behavior: continue_or_fallback,\n"
      "       concrete_identity_behavior: apply, note: overridden}\n";
  tl_rules *base = load_ok(NULL);
  size_t before, after;
  ck_assert_ptr_nonnull(class_rule(base, "ascend.aux.task.type.notify.wait.717e33e3", &before));
  char *path = tmp_yaml(text);
  tl_rules *r = load_ok(path);
  const tl_class_rule *n = class_rule(r, "ascend.aux.task.type.notify.wait.717e33e3", &after);
  ck_assert_int_eq(before, after);
  ck_assert_int_eq(n->role, TL_EVIDENCE_TRANSPARENT);
  ck_assert_int_eq(r->cls.rules.n, 68);
  tl_rules_free(r);
  tl_rules_free(base);
  unlink(path);
  free(path);
}
END_TEST

START_TEST(test_env_manifest) {
  static const char text[] =
      "schema: traceloom-policy-v1\n"
      "kind: classification\n"
      "metadata:\n"
      "  manifest_schema: traceloom.evidence-role-policy/v1\n"
      "  policy_id: env.policy\n"
      "  policy_version: \"5\"\n"
      "  provider_scopes: any\n"
      "  fallback_identity_role: unknown_anchor\n"
      "  fallback_cost_treatment: retained_as_evidence\n"
      "  fallback_context_treatment: retained\n"
      "  fallback_provenance_treatment: retained\n"
      "  missing_evidence_behavior: continue_or_fallback\n"
      "rules: []\n";
  char *path = tmp_yaml(text);
  setenv("TRACELOOM_CLASSIFICATION_RULES", path, 1);
  tl_rules *r = load_ok(NULL);
  unsetenv("TRACELOOM_CLASSIFICATION_RULES");
  ck_assert_str_eq(r->cls.meta.policy_id, "env.policy");
  ck_assert_int_eq(r->cls.rules.n, 0);
  ck_assert_int_eq(r->cls.fallback_cost, TL_COSTP_RETAINED_AS_EVIDENCE);
  ck_assert_str_eq(r->cls.meta.mode, "env");
  char hex[65];
  file_sha(path, hex);
  ck_assert_str_eq(r->cls.meta.sha256, hex);
  tl_rules_free(r);
  unlink(path);
  free(path);
}
END_TEST

/* ---------------------------------------------------------------- errors */

START_TEST(test_error_fixtures) {
  char *p = fixture_rules("bad_schema_key.yaml");
  char want[300];
  snprintf(want, sizeof want, "%s:3: classifcation: unknown key", p);
  expect_err(p, want);
  free(p);

  p = fixture_rules("bad_unknown_predicate.yaml");
  snprintf(want, sizeof want,
           "%s:14: classification.rules[0].match: expected exact | contains | exact_any, got 'regex'", p);
  expect_err(p, want);
  free(p);

  p = fixture_rules("bad_wrong_type.yaml");
  snprintf(want, sizeof want,
           "%s:10: classification.rules[0].priority: expected a 32-bit integer, got 'high'", p);
  expect_err(p, want);
  free(p);

  p = fixture_rules("bad_duplicate_rule_id.yaml");
  snprintf(want, sizeof want, "%s:9: classification.rules[0].rule_id: expected a new rule id", p);
  expect_err(p, want);
  expect_err(p, "bundled:rules/classification.yaml:"); /* where the id already is */
  free(p);
}
END_TEST

/* A whole manifest with the pieces of one rule, so tests can break one key at a time. */
static char *manifest_with(const char *rules) {
  static const char head[] =
      "schema: traceloom-policy-v1\n"                          /* 1 */
      "kind: classification\n"                                 /* 2 */
      "metadata:\n"                                            /* 3 */
      "  manifest_schema: traceloom.evidence-role-policy/v1\n" /* 4 */
      "  policy_id: t\n"                                       /* 5 */
      "  policy_version: \"1\"\n"                              /* 6 */
      "  provider_scopes: ascend\n"                            /* 7 */
      "  fallback_identity_role: unknown_anchor\n"             /* 8 */
      "  fallback_cost_treatment: retained_for_attribution\n"  /* 9 */
      "  fallback_context_treatment: retained\n"               /* 10 */
      "  fallback_provenance_treatment: retained\n"            /* 11 */
      "  missing_evidence_behavior: continue_or_fallback\n"    /* 12 */
      "rules:\n";                                              /* 13 */
  size_t n = strlen(head) + strlen(rules) + 1;
  char *s = malloc(n);
  snprintf(s, n, "%s%s", head, rules);
  return s;
}

/* One rule, lines 14..29; the template has printf holes for rule_id, priority, scope, field,
** pattern, role, required_fields and participation. */
static char *rule_text(const char *id, const char *prio, const char *scope, const char *field,
                       const char *pattern, const char *role, const char *req, const char *part) {
  char *s = malloc(2048);
  snprintf(s, 2048,
           "  - rule_id: %s\n"                                 /* 14 */
           "    priority: %s\n"                                /* 15 */
           "    provider_scope: %s\n"                          /* 16 */
           "    source_domain: task\n"                         /* 17 */
           "    field: %s\n"                                   /* 18 */
           "    match: exact\n"                                /* 19 */
           "    pattern: %s\n"                                 /* 20 */
           "    role: %s\n"                                    /* 21 */
           "    required_fields: %s\n"                         /* 22 */
           "    structural_participation: %s\n"                /* 23 */
           "    cost_treatment: retained_for_attribution\n"    /* 24 */
           "    context_treatment: retained\n"                 /* 25 */
           "    provenance_treatment: retained\n"              /* 26 */
           "    missing_evidence_behavior: continue_or_fallback\n" /* 27 */
           "    concrete_identity_behavior: apply\n"           /* 28 */
           "    note: n\n",                                    /* 29 */
           id, prio, scope, field, pattern, role, req, part);
  return s;
}

static void manifest_err(const char *rules, int line, const char *key, const char *also) {
  char *m = manifest_with(rules);
  expect_inline_err(m, line, key, also);
  free(m);
}

START_TEST(test_manifest_rule_errors) {
  char *ok = rule_text("a", "10", "ascend", "task_type", "X", "auxiliary", "task_type", "excluded");
  char *m = manifest_with(ok);
  char *path = tmp_yaml(m);
  /* A standalone manifest given as config replaces its stage. */
  tl_rules *r = load_ok(path);
  ck_assert_int_eq(r->cls.rules.n, 1);
  ck_assert_int_eq(r->cls.rules.v[0].line, 14);
  ck_assert_str_eq(r->cls.meta.mode, "replace");
  tl_rules_free(r);
  unlink(path);
  free(path);
  free(m);

  /* duplicate id within one manifest: named at the second rule's line */
  char *two = malloc(8192);
  char *b = rule_text("a", "20", "ascend", "task_type", "Y", "auxiliary", "task_type", "excluded");
  snprintf(two, 8192, "%s%s", ok, b);
  manifest_err(two, 30, "rule_id", "duplicate 'a'");
  free(b);
  /* equal precedence: same field, match, normalized pattern (x = X) and priority */
  b = rule_text("b", "10", "ascend", "task_type", "x", "transparent", "task_type", "excluded");
  snprintf(two, 8192, "%s%s", ok, b);
  manifest_err(two, 30, "pattern", "equal precedence");
  free(b);
  free(two);

  char *x;
  x = rule_text("a", "99999999999", "ascend", "task_type", "X", "anchor", "task_type", "identity");
  manifest_err(x, 15, "rules[0].priority", "expected a 32-bit integer");
  free(x);
  x = rule_text("a", "1", "cuda", "task_type", "X", "anchor", "task_type", "identity");
  manifest_err(x, 14, "provider_scope", "declared in provider_scopes");
  free(x);
  x = rule_text("a", "1", "mars", "task_type", "X", "anchor", "task_type", "identity");
  manifest_err(x, 16, "rules[0].provider_scope", "expected any | ascend | cuda | hygon");
  free(x);
  x = rule_text("a", "1", "ascend", "label", "X", "anchor", "task_type", "identity");
  manifest_err(x, 18, "rules[0].field", "expected task_type | blob | operator");
  free(x);
  x = rule_text("a", "1", "ascend", "blob", "X", "anchor", "task_type", "identity");
  manifest_err(x, 22, "rules[0].required_fields", "match field 'blob'");
  free(x);
  x = rule_text("a", "1", "ascend", "blob", "X", "anchor", "blob,colour", "identity");
  manifest_err(x, 22, "rules[0].required_fields", "got 'colour'");
  free(x);
  x = rule_text("a", "1", "ascend", "blob", "X", "anchor", "blob", "excluded");
  manifest_err(x, 23, "rules[0].structural_participation", "expected identity for role anchor");
  free(x);
  x = rule_text("a", "1", "ascend", "blob", "X", "unknown_anchor", "blob", "identity");
  manifest_err(x, 21, "rules[0].role", "fallback role");
  free(x);
  x = rule_text("a", "1", "ascend", "blob", "\"\"", "anchor", "blob", "identity");
  manifest_err(x, 20, "rules[0].pattern", "non-empty");
  free(x);
  x = rule_text("a", "1", "ascend", "blob", "[X, Y]", "anchor", "blob", "identity");
  manifest_err(x, 20, "rules[0].pattern", "got a sequence");
  free(x);
  manifest_err("  - {rule_id: a, colour: red}\n", 14, "rules[0].colour", "unknown key");
  manifest_err("  - {rule_id: a}\n", 14, "rules[0].priority", "missing required key");
  manifest_err("  rule_id: a\n", 14, "rules", "expected a sequence of rules, got a mapping");
  free(ok);
}
END_TEST

START_TEST(test_manifest_metadata_errors) {
  expect_inline_err("schema: traceloom-policy-v1\nkind: classification\nmetadata:\n"
                    "  manifest_schema: traceloom.evidence-role-policy/v9\n",
                    4, "metadata.manifest_schema", "traceloom.evidence-role-policy/v1");
  expect_inline_err("schema: traceloom-policy-v2\n", 1, "schema", "traceloom-analysis-rules-v1");
  expect_inline_err("schema: traceloom-policy-v1\nkind: grammar\n", 2, "kind",
                    "classification | symbol_normalization | event_reconciliation");
  char *m = manifest_with("");
  /* fallback_identity_role must stay unknown_anchor */
  char *p = strstr(m, "fallback_identity_role: unknown_anchor");
  memcpy(p + strlen("fallback_identity_role: "), "anchor        ", 14);
  expect_inline_err(m, 8, "metadata.fallback_identity_role", "expected unknown_anchor");
  free(m);
}
END_TEST

START_TEST(test_yaml_strictness) {
  expect_inline_err("schema: traceloom-analysis-rules-v1\nschema: x\n", 2, "duplicate key 'schema'",
                    "first at line 1");
  expect_inline_err("schema: &s traceloom-analysis-rules-v1\n", 1, "anchors are not supported", NULL);
  expect_inline_err("schema: traceloom-analysis-rules-v1\nmacro_matching:\n  <<: {partition_by: x}\n",
                    3, "merge keys (<<) are not supported", NULL);
  expect_inline_err("schema: !!str traceloom-analysis-rules-v1\n", 1, "explicit tags", NULL);
  expect_inline_err("schema: traceloom-analysis-rules-v1\n---\nschema: x\n", 2,
                    "more than one document", NULL);
  expect_inline_err("schema: [unclosed\n", 2, "invalid YAML", NULL);
  expect_inline_err("", 1, "the document is empty", NULL);
  expect_inline_err("schema: traceloom-analysis-rules-v1\ninclude: other.yaml\n", 2, "include",
                    "unknown key");
  expect_inline_err("schema: |\n  traceloom-analysis-rules-v1\n", 1, "schema", "single-line");
}
END_TEST

START_TEST(test_config_errors) {
  static const char ext_head[] =
      "schema: traceloom-analysis-rules-v1\n"
      "classification:\n"
      "  mode: %s\n"
      "  metadata: {policy_id: t, policy_version: \"1\"%s}\n"
      "  rules:\n"
      "    - {rule_id: %s, priority: 70, provider_scope: ascend, source_domain: task,\n"
      "       field: task_type, match: exact, pattern: FOO, role: auxiliary,\n"
      "       required_fields: task_type, structural_participation: excluded,\n"
      "       cost_treatment: retained_for_attribution, context_treatment: retained,\n"
      "       provenance_treatment: retained, missing_evidence_behavior: continue_or_fallback,\n"
      "       concrete_identity_behavior: apply}\n";
  char text[2048];
  snprintf(text, sizeof text, ext_head, "override", "", "no.such.rule");
  expect_inline_err(text, 6, "classification.rules[0].rule_id", "existing classification rule");
  snprintf(text, sizeof text, ext_head, "append", "", "x");
  expect_inline_err(text, 3, "classification.mode", "expected extend | override | replace");
  snprintf(text, sizeof text, ext_head, "extend", ", fallback_identity_role: unknown_anchor", "x");
  expect_inline_err(text, 4, "classification.metadata.fallback_identity_role", "unknown key");
  snprintf(text, sizeof text, ext_head, "replace", "", "x");
  expect_inline_err(text, 4, "classification.metadata.manifest_schema", "missing required key");
  /* extend: equal precedence with a built-in rule is caught on the merged set */
  static const char eq[] =
      "schema: traceloom-analysis-rules-v1\n"
      "classification:\n"
      "  mode: extend\n"
      "  metadata: {policy_id: t, policy_version: \"1\"}\n"
      "  rules:\n"
      "    - {rule_id: t.notify, priority: 70, provider_scope: ascend, source_domain: task,\n"
      "       field: task_type, match: exact, pattern: notify-wait, role: transparent,\n"
      "       required_fields: task_type, structural_participation: excluded,\n"
      "       cost_treatment: retained_for_attribution, context_treatment: retained,\n"
      "       provenance_treatment: retained, missing_evidence_behavior: continue_or_fallback,\n"
      "       concrete_identity_behavior: apply}\n";
  expect_inline_err(eq, 6, "pattern", "ascend.aux.task.type.notify.wait.717e33e3");

  /* symbol rules */
  static const char sym[] =
      "schema: traceloom-analysis-rules-v1\n"
      "symbol_normalization:\n"
      "  mode: extend\n"
      "  metadata: {policy_id: t, policy_version: \"1\"}\n"
      "  rules:\n"
      "    - {priority: 5, rule_id: t.s, provider_scope: %s, source_domain: %s, field: %s,\n"
      "       match: %s, pattern: \"%s\", structural_symbol: \"%s\", note: n}\n";
  snprintf(text, sizeof text, sym, "ascend", "task", "op_name", "regex", "a.*", "A");
  expect_inline_err(text, 7, "symbol_normalization.rules[0].match", "expected exact | exact_any");
  snprintf(text, sizeof text, sym, "cuda", "task", "selected", "ascend_decorated_kernel", "*",
           "{kernel_base}");
  expect_inline_err(text, 7, "symbol_normalization.rules[0].match", "provider_scope ascend");
  snprintf(text, sizeof text, sym, "ascend", "task", "op_name", "exact", "A", "{kernel_base}");
  expect_inline_err(text, 7, "symbol_normalization.rules[0].structural_symbol",
                    "needs match ascend_decorated_kernel");
  snprintf(text, sizeof text, sym, "ascend", "communication", "comm_name", "exact", "A", "B");
  expect_inline_err(text, 6, "symbol_normalization.rules[0].field", "communication domain");
  snprintf(text, sizeof text, sym, "ascend", "task", "op_name", "exact_any", "A||B", "B");
  expect_inline_err(text, 7, "symbol_normalization.rules[0].pattern", "alternatives");
  /* equal precedence with a built-in rule, compared case-folded */
  static const char dup[] =
      "schema: traceloom-analysis-rules-v1\n"
      "symbol_normalization:\n"
      "  mode: extend\n"
      "  metadata: {policy_id: t, policy_version: \"1\"}\n"
      "  rules:\n"
      "    - {priority: 90, rule_id: t.s, provider_scope: ascend, source_domain: task,\n"
      "       field: selected, match: ascend_kernel_base_exact_any, structural_symbol: M,\n"
      "       pattern: matmulv1|matmulv2|matmulv3|batchmatmulv1|batchmatmulv2|batchmatmulv3,\n"
      "       note: n}\n";
  expect_inline_err(dup, 6, "pattern", "ascend.task.matmul-backend-variant");
}
END_TEST

START_TEST(test_grammar_hint_errors) {
  expect_inline_err("schema: traceloom-analysis-rules-v1\nmacro_matching:\n  partition_by: layer\n",
                    3, "macro_matching.partition_by", "expected scheduler_step");
  expect_inline_err("schema: traceloom-analysis-rules-v1\nmacro_matching:\n  ordered_markers:\n"
                    "    - {id: m, before: A, after: A}\n",
                    4, "macro_matching.ordered_markers[0].after", "different from before");
  expect_inline_err("schema: traceloom-analysis-rules-v1\nmacro_matching:\n  ordered_markers:\n"
                    "    - {id: m, before: A, after: B}\n  suffix_markers:\n    - {id: m, marker: S}\n",
                    6, "macro_matching.suffix_markers[0].id", "unique across");
  expect_inline_err("schema: traceloom-match-rules-v1\nordered_markers:\n  - {id: m, before: A}\n",
                    3, "ordered_markers[0].after", "missing required key");
  expect_inline_err("schema: traceloom-analysis-rules-v1\nreplay_structure:\n  unit:\n"
                    "    id: u\n    mode: cycle_end\n    label: c\n    end_sequence: [A]\n",
                    5, "replay_structure.unit.mode", "outer timeline only");
  expect_inline_err("schema: traceloom-analysis-rules-v1\nstructure:\n  unit:\n"
                    "    id: u\n    mode: cycle_end\n    label: c\n    end: B\n    end_sequence: [A]\n",
                    7, "structure.unit.end", "not allowed with mode cycle_end");
  expect_inline_err("schema: traceloom-analysis-rules-v1\nstructure:\n  unit:\n"
                    "    id: u\n    mode: end_delimited\n    end: E\n    end_predecessor: P\n"
                    "    end_predecessor_any: [Q]\n",
                    8, "structure.unit.end_predecessor_any", "not allowed together");
  expect_inline_err("schema: traceloom-analysis-rules-v1\nstructure:\n  unit:\n"
                    "    id: u\n    begin: B\n    end: E\n    end_predecessor: P\n",
                    7, "structure.unit.end_predecessor", "without mode end_delimited");
  expect_inline_err("schema: traceloom-analysis-rules-v1\nstructure:\n  unit:\n"
                    "    id: u\n    begin: B\n    end: B\n",
                    6, "structure.unit.end", "different from begin");
  expect_inline_err("schema: traceloom-analysis-rules-v1\nstructure:\n  unit:\n"
                    "    id: u\n    begin: B\n    end: E\n    labels:\n"
                    "      - {label: ambiguous, contains_any: [X]}\n",
                    8, "structure.unit.labels[0].label", "reserved");
  expect_inline_err("schema: traceloom-analysis-rules-v1\nstructure:\n  unit:\n"
                    "    id: u\n    begin: B\n    end: E\n    labels:\n"
                    "      - {label: a, contains_any: [X]}\n  compositions:\n"
                    "    - {label: l, sequence: [a, b]}\n",
                    10, "structure.compositions[0].sequence[1]", "got 'b'");
  expect_inline_err("schema: traceloom-analysis-rules-v1\nstructure:\n  unit:\n"
                    "    id: u\n    begin: B\n    end: E\n    labels:\n"
                    "      - {label: a, contains_any: [X]}\n  compositions:\n"
                    "    - {label: l, sequence: [a]}\n",
                    10, "structure.compositions[0].sequence", "at least 2 names");
}
END_TEST

/* An invalid config never yields rules: a failed load leaves nothing behind (ASan checks
** nothing leaks on every error path above as well). */
START_TEST(test_invalid_changes_nothing) {
  char *p = fixture_rules("bad_wrong_type.yaml");
  tl_rules *r = (tl_rules *)1;
  tl_err e = {0};
  ck_assert_int_eq(tl_rules_load(p, &r, &e), TL_ERROR);
  ck_assert_ptr_null(r);
  tl_err_clear(&e);
  free(p);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("rules");
  TCase *tc = tcase_create("rules");
  tcase_add_test(tc, test_defaults);
  tcase_add_test(tc, test_defaults_deterministic);
  tcase_add_test(tc, test_bundled_scheduler_step);
  tcase_add_test(tc, test_bundled_deepseekv4);
  tcase_add_test(tc, test_bundled_qwen35);
  tcase_add_test(tc, test_config_not_found);
  tcase_add_test(tc, test_stage_modes);
  tcase_add_test(tc, test_override_keeps_position);
  tcase_add_test(tc, test_env_manifest);
  tcase_add_test(tc, test_error_fixtures);
  tcase_add_test(tc, test_manifest_rule_errors);
  tcase_add_test(tc, test_manifest_metadata_errors);
  tcase_add_test(tc, test_yaml_strictness);
  tcase_add_test(tc, test_config_errors);
  tcase_add_test(tc, test_grammar_hint_errors);
  tcase_add_test(tc, test_invalid_changes_nothing);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)

/*
** rules.c: the idle-evidence rule sets (E1 semantic task roles, host API families) and the
** names of the idle-evidence vocabularies.
**
** Semantic roles answer a different question than the evidence roles of ext/classify (is it
** a structural token?): what a task means for productive and idle time. Rules are tried by
** priority (highest first), then in table order; exact task_type rules outrank name keyword
** rules; there is no catch-all, so an unmatched task is explicitly unknown. A keyword rule
** matches the lower-cased "identity blob": the task's chosen identity (op type, else op name,
** else communication name, else task type), its op name, op type, compute task type,
** communication name, task type and raw name, space-separated.
**
** Both sets are versioned and identified by the SHA-256 of their canonical text (one line per
** rule), which traceloom_run_metadata records.
*/
#include "idle/idle_int.h"
#include "util/sha256.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

enum { BY_TASK_TYPE = 0, BY_BLOB };

typedef struct semantic_rule {
  const char *id;
  int priority;
  int field;
  const char *pattern;
  uint8_t role;
} semantic_rule;

#define SEMANTIC_VERSION "idle-evidence-semantic-v1"

static const semantic_rule SEMANTIC[] = {
    {"wait.event_wait", 200, BY_TASK_TYPE, "EVENT_WAIT", TL_IR_WAIT},
    {"wait.notify_wait", 200, BY_TASK_TYPE, "NOTIFY_WAIT", TL_IR_WAIT},
    {"capture.capture_wait", 200, BY_TASK_TYPE, "CAPTURE_WAIT", TL_IR_CAPTURE},
    {"capture.capture_record", 200, BY_TASK_TYPE, "CAPTURE_RECORD", TL_IR_CAPTURE},
    {"record.event_record", 190, BY_TASK_TYPE, "EVENT_RECORD", TL_IR_RECORD},
    {"record.notify_record", 190, BY_TASK_TYPE, "NOTIFY_RECORD", TL_IR_RECORD},
    {"data.memcpy", 180, BY_TASK_TYPE, "MEMCPY", TL_IR_DATA_MOVE},
    {"data.memcpy_async", 180, BY_TASK_TYPE, "MEMCPY_ASYNC", TL_IR_DATA_MOVE},
    {"data.sdma", 180, BY_TASK_TYPE, "SDMA", TL_IR_DATA_MOVE},
    {"data.tensor_move", 180, BY_BLOB, "tensormove", TL_IR_DATA_MOVE},
    {"runtime.write_value", 170, BY_TASK_TYPE, "WRITE_VALUE", TL_IR_RUNTIME},
    {"runtime.mem_write_value", 170, BY_TASK_TYPE, "MEM_WRITE_VALUE", TL_IR_RUNTIME},
    {"runtime.model_execute", 170, BY_TASK_TYPE, "MODEL_EXECUTE", TL_IR_RUNTIME},
    {"runtime.model_maintaince", 170, BY_TASK_TYPE, "MODEL_MAINTAINCE", TL_IR_RUNTIME},
    {"runtime.task_timeout_set", 170, BY_TASK_TYPE, "TASK_TIMEOUT_SET", TL_IR_RUNTIME},
    {"runtime.profiling_enable", 170, BY_TASK_TYPE, "PROFILING_ENABLE", TL_IR_RUNTIME},
    {"runtime.hccl_aiv_sync", 170, BY_BLOB, "hccl_aiv_sync", TL_IR_RUNTIME},
    {"comm.allreduce", 150, BY_BLOB, "allreduce", TL_IR_COMM},
    {"comm.all_reduce", 150, BY_BLOB, "all_reduce", TL_IR_COMM},
    {"comm.allgather", 150, BY_BLOB, "allgather", TL_IR_COMM},
    {"comm.all_gather", 150, BY_BLOB, "all_gather", TL_IR_COMM},
    {"comm.reducescatter", 150, BY_BLOB, "reducescatter", TL_IR_COMM},
    {"comm.reduce_scatter", 150, BY_BLOB, "reduce_scatter", TL_IR_COMM},
    {"comm.broadcast", 150, BY_BLOB, "broadcast", TL_IR_COMM},
    {"comm.alltoall", 150, BY_BLOB, "alltoall", TL_IR_COMM},
    {"comm.all_to_all", 150, BY_BLOB, "all_to_all", TL_IR_COMM},
    {"comm.all2all", 150, BY_BLOB, "all2all", TL_IR_COMM},
    /* more specific keywords first at one priority: the first match wins */
    {"compute.batchmatmul", 100, BY_BLOB, "batchmatmul", TL_IR_COMPUTE},
    {"compute.matmul", 100, BY_BLOB, "matmul", TL_IR_COMPUTE},
    {"compute.gemm", 100, BY_BLOB, "gemm", TL_IR_COMPUTE},
    {"compute.conv", 100, BY_BLOB, "conv", TL_IR_COMPUTE},
    {"compute.flashattention", 100, BY_BLOB, "flashattention", TL_IR_COMPUTE},
    {"compute.fusedinferattention", 100, BY_BLOB, "fusedinferattention", TL_IR_COMPUTE},
    {"compute.pagedattention", 100, BY_BLOB, "pagedattention", TL_IR_COMPUTE},
    {"compute.attention", 100, BY_BLOB, "attention", TL_IR_COMPUTE},
    {"compute.rmsnorm", 100, BY_BLOB, "rmsnorm", TL_IR_COMPUTE},
    {"compute.rms_norm", 100, BY_BLOB, "rms_norm", TL_IR_COMPUTE},
    {"compute.layernorm", 100, BY_BLOB, "layernorm", TL_IR_COMPUTE},
    {"compute.layer_norm", 100, BY_BLOB, "layer_norm", TL_IR_COMPUTE},
    {"compute.swiglu", 100, BY_BLOB, "swiglu", TL_IR_COMPUTE},
    {"compute.siluandmul", 100, BY_BLOB, "siluandmul", TL_IR_COMPUTE},
    {"compute.zeroslike", 100, BY_BLOB, "zeroslike", TL_IR_COMPUTE},
    {"compute.gather", 100, BY_BLOB, "gather", TL_IR_COMPUTE},
    {"compute.slice", 100, BY_BLOB, "slice", TL_IR_COMPUTE},
    {"compute.cast", 100, BY_BLOB, "cast", TL_IR_COMPUTE},
    {"compute.fill", 100, BY_BLOB, "fill", TL_IR_COMPUTE},
    {"compute.moe", 100, BY_BLOB, "moe", TL_IR_COMPUTE},
    {"compute.ffn", 100, BY_BLOB, "ffn", TL_IR_COMPUTE},
    {"compute.rotary", 100, BY_BLOB, "rotary", TL_IR_COMPUTE},
    {"compute.rope", 100, BY_BLOB, "rope", TL_IR_COMPUTE},
    {"compute.mamba", 100, BY_BLOB, "mamba", TL_IR_COMPUTE},
};
#define NSEMANTIC (sizeof SEMANTIC / sizeof SEMANTIC[0])

typedef struct host_api_rule {
  const char *pattern;  /* a prefix followed by '*' */
  int family;           /* 1 host_sync, 2 enqueue */
} host_api_rule;

#define HOST_API_VERSION "idle-evidence-host-api-v1"

static const host_api_rule HOST_API[] = {
    {"aclrtLaunchKernel*", 2},      {"aclrtMemcpyAsync*", 2},
    {"aclrtSynchronizeStream*", 1}, {"aclrtSynchronizeDevice*", 1},
    {"aclrtSynchronizeEvent*", 1},  {"StreamSynchronize*", 1},
    {"DeviceSynchronize*", 1},      {"EventSynchronize*", 1},
};
#define NHOST_API (sizeof HOST_API / sizeof HOST_API[0])

static const char *const ROLE_NAME[] = {"productive_compute", "productive_comm", "productive_data_move",
                                        "visible_wait", "capture_control", "record",
                                        "runtime_control", "unknown"};
static const char *const STATE_NAME[] = {"running_compute", "running_comm", "running_data_move",
                                         "running_wait", "running_capture_control", "running_record",
                                         "running_runtime_control", "unknown", "empty_observed",
                                         "ambiguous_overlap"};
static const char *const CATEGORY_NAME[] = {"blocked_by_visible_wait", "capture_control_present",
                                            "runtime_control_present", "queued_visible_task_delay",
                                            "host_sync_api_present", "no_observed_device_work",
                                            "unattributed_visible_idle"};
static const char *const ALIGNMENT_NAME[] = {"not_required", "calibrated", "synthetic_only",
                                             "uncalibrated", "invalid"};
static const char *const COLLECTION_NAME[] = {"complete", "incomplete", "unknown", "invalid"};
static const char *const LINK_NAME[] = {"unique", "one_to_many", "ambiguous", "unresolved"};

const char *tl_idle_role_name(int r) { return ROLE_NAME[r]; }
const char *tl_idle_state_name(int s) { return STATE_NAME[s]; }
const char *tl_idle_category_name(int c) { return CATEGORY_NAME[c]; }
const char *tl_alignment_name(int a) { return ALIGNMENT_NAME[a]; }
const char *tl_collection_name(int c) { return COLLECTION_NAME[c]; }
const char *tl_link_status_name(int s) { return LINK_NAME[s]; }
const char *tl_idle_rule_id(uint32_t rule) { return rule < NSEMANTIC ? SEMANTIC[rule].id : NULL; }
uint32_t tl_idle_rule_count(void) { return (uint32_t)NSEMANTIC; }
const char *tl_idle_semantic_version(void) { return SEMANTIC_VERSION; }
const char *tl_idle_host_api_version(void) { return HOST_API_VERSION; }

/* Case-insensitive substring test of an ASCII lower-case needle. */
static int contains_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++) {
    size_t k = 0;
    while (k < n && hay[k] && tolower((unsigned char)hay[k]) == needle[k]) k++;
    if (k == n) return 1;
  }
  return 0;
}

static int blob_contains(const tl_trace *t, const tl_label *l, const char *needle) {
  const char *fields[] = {tl_str(t, l->op_type), tl_str(t, l->op_name), tl_str(t, l->comm_name),
                          tl_str(t, l->compute_task_type), tl_str(t, l->task_type),
                          tl_str(t, l->name)};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    if (fields[i] && contains_ci(fields[i], needle)) return 1;
  return 0;
}

void tl_idle_classify(const tl_trace *t, size_t i, uint8_t *role, uint32_t *rule) {
  const tl_label *l = tl_event_label(t, i);
  const char *task_type = tl_str(t, l->task_type);
  /* the table is ordered by priority, then declaration: the first match decides */
  for (size_t r = 0; r < NSEMANTIC; r++) {
    const semantic_rule *x = &SEMANTIC[r];
    int hit = x->field == BY_TASK_TYPE ? task_type && strcmp(task_type, x->pattern) == 0
                                       : blob_contains(t, l, x->pattern);
    if (hit) {
      *role = x->role, *rule = (uint32_t)r;
      return;
    }
  }
  *role = TL_IR_UNKNOWN, *rule = TL_IDLE_NONE;
}

/* SHA-256 of a rule table written one line per row (line() formats row r into buf). */
static void digest_rows(size_t n, int (*line)(size_t r, char *buf, size_t cap), char hex[65]) {
  tl_sha256 s;
  tl_sha256_init(&s);
  char buf[256];
  for (size_t r = 0; r < n; r++) {
    int len = line(r, buf, sizeof buf);
    tl_sha256_update(&s, buf, len < 0 ? 0 : (size_t)len < sizeof buf ? (size_t)len : sizeof buf - 1);
  }
  uint8_t d[32];
  tl_sha256_final(&s, d);
  tl_sha256_hex(d, hex);
}

static int semantic_line(size_t r, char *buf, size_t cap) {
  return snprintf(buf, cap, "%s\t%d\ttask\t%s\t%s\t%s\t%s\n", SEMANTIC[r].id, SEMANTIC[r].priority,
                  SEMANTIC[r].field == BY_TASK_TYPE ? "task_type" : "blob",
                  SEMANTIC[r].field == BY_TASK_TYPE ? "exact" : "contains", SEMANTIC[r].pattern,
                  ROLE_NAME[SEMANTIC[r].role]);
}

void tl_idle_semantic_sha256(char hex[65]) { digest_rows(NSEMANTIC, semantic_line, hex); }

int tl_idle_host_api_family(const char *api_name, const char **pattern) {
  if (!api_name) return 0;
  for (size_t r = 0; r < NHOST_API; r++) {
    size_t n = strlen(HOST_API[r].pattern) - 1; /* the prefix before '*' */
    if (strncmp(api_name, HOST_API[r].pattern, n) == 0) {
      *pattern = HOST_API[r].pattern;
      return HOST_API[r].family;
    }
  }
  return 0;
}

static int host_api_line(size_t r, char *buf, size_t cap) {
  return snprintf(buf, cap, "%s\t%s\n", HOST_API[r].pattern,
                  HOST_API[r].family == 1 ? "host_sync" : "enqueue");
}

void tl_idle_host_api_sha256(char hex[65]) { digest_rows(NHOST_API, host_api_line, hex); }

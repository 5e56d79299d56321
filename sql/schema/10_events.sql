-- Normalized device events, host runtime calls and their identity relations
-- (outputs.md section 2, inputs.md sections 9 and 10).

-- @surface traceloom_event | one normalized device event | Every device observation of the profile, anchors and non-anchors, with provenance (source table and rowid) | SELECT kind, count(*) AS events FROM traceloom_event GROUP BY kind ORDER BY events DESC
CREATE TABLE traceloom_event(
  event_id TEXT NOT NULL,          -- event-<n>, n = dense 0-based index in reader order
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  step_idx INTEGER,
  source_id INTEGER NOT NULL,      -- traceloom_raw_source_database.source_id
  source_table TEXT NOT NULL,
  source_key TEXT NOT NULL,        -- the source rowid, as text
  stream_id INTEGER,               -- NULL = no stream
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  dur_us REAL NOT NULL,
  kind TEXT NOT NULL,              -- compute, communication, data_move, sync, control, graph_launch, other
  category TEXT,
  role TEXT,
  semantic_role TEXT,
  semantic_role_reason TEXT,
  symbol TEXT,                     -- structural symbol (classification)
  role_class_id INTEGER,           -- traceloom_evidence_role_class.class_id (roles and symbols)
  label TEXT,
  raw_label TEXT,
  op_name TEXT,
  op_type TEXT,
  compute_task_type TEXT,
  comm_name TEXT,
  comm_task_type TEXT,
  family TEXT,
  task_type TEXT,
  task_id INTEGER,
  global_task_id INTEGER,
  correlation_id INTEGER,
  context_id INTEGER,
  model_id INTEGER,
  graph_node_id INTEGER,
  op_id INTEGER,
  raw_json TEXT,
  event_n INTEGER PRIMARY KEY      -- n of event-<n> (the rowid): integer joins from replays
);

-- @surface traceloom_runtime_call | one host runtime/API call | Host-side runtime calls (CANN_API, ApiData, CUDA runtime) with thread and correlation ids | SELECT api_name, count(*) AS calls FROM traceloom_runtime_call GROUP BY api_name ORDER BY calls DESC
CREATE TABLE traceloom_runtime_call(
  runtime_call_id TEXT NOT NULL,   -- runtime-call-<n>, n = dense 0-based index in reader order
  db_idx INTEGER NOT NULL,
  provider TEXT NOT NULL,          -- ascend, cuda, unknown
  clock_domain TEXT NOT NULL,
  source_id INTEGER NOT NULL,
  source_table TEXT NOT NULL,
  source_key TEXT NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  dur_us REAL NOT NULL,
  api_name TEXT,
  api_type TEXT,
  process_id INTEGER,
  thread_id INTEGER,
  global_tid INTEGER,
  context_id INTEGER,
  device_id INTEGER,
  correlation_id INTEGER,
  match_policy TEXT NOT NULL,
  raw_json TEXT
);

-- @surface traceloom_runtime_device_relation | one relation (or typed non-relation) between a runtime call and device work | Host-to-device links found by provider identifiers only; unmatched, missing and ambiguous cases stay as typed rows | SELECT support_state, count(*) FROM traceloom_runtime_device_relation GROUP BY support_state
CREATE TABLE traceloom_runtime_device_relation(
  relation_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  runtime_call_id TEXT,
  device_work_id TEXT,
  relation_kind TEXT NOT NULL,     -- runtime_launch, graph_launch
  match_policy TEXT NOT NULL,
  evidence_level TEXT NOT NULL,
  support_state TEXT NOT NULL,
  cardinality TEXT NOT NULL,
  runtime_candidate_count INTEGER NOT NULL,
  device_candidate_count INTEGER NOT NULL,
  correlation_id INTEGER,
  raw_json TEXT
);

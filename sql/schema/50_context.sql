-- Scheduler context: the imported traceloom.scheduler.v1 JSONL files and the identity-only
-- chain from scheduler steps to device work (context-observer.md sections 3 to 5).
--
-- Always created; empty when the analysis had no context input (analyze option `context`,
-- CLI --context). Files and records are stored verbatim; steps, requests and executions are
-- their typed columns. The marker, task-queue and runtime-call tables are the audit trail
-- of the host side of the chain; launch candidates and the per-device-work step count are
-- derived in SQL from the direct candidates (sql/views/50_context.sql) at publication.

-- @surface traceloom_context_source | one imported context file | The JSONL files of the scheduler context with their digest and capture state (closed, dropped_records, unclosed) | SELECT source_id, source_path, capture_state, size_bytes FROM traceloom_context_source
CREATE TABLE traceloom_context_source(
  source_id INTEGER PRIMARY KEY,   -- 1-based, in input order
  source_path TEXT UNIQUE,         -- canonical path
  sha256 TEXT,                     -- over the consumed bytes (each line and its newline)
  size_bytes INTEGER,
  capture_state TEXT CHECK (capture_state IN ('closed', 'dropped_records', 'unclosed'))
);

-- @surface traceloom_context_record | one line of a context file | Every record verbatim with its type and producer identity | SELECT record_type, count(*) FROM traceloom_context_record GROUP BY 1
CREATE TABLE traceloom_context_record(
  source_id INTEGER NOT NULL,
  line_no INTEGER NOT NULL,        -- 1-based
  record_type TEXT NOT NULL CHECK (record_type IN ('session', 'step', 'execution', 'summary')),
  run_id TEXT NOT NULL,
  producer_id TEXT NOT NULL,
  raw_json TEXT NOT NULL CHECK (json_valid(raw_json)),
  PRIMARY KEY (source_id, line_no)
);

-- @surface traceloom_scheduler_step | one final scheduling decision | Scheduler steps with token totals, request counts and the after-schedule cache counters | SELECT scheduler_id, ordinal, total_scheduled_tokens, scheduled_requests, free_blocks_after_schedule FROM traceloom_scheduler_step ORDER BY scheduler_id, ordinal LIMIT 20
CREATE TABLE traceloom_scheduler_step(
  run_id TEXT NOT NULL,
  step_id TEXT NOT NULL,
  scheduler_id TEXT NOT NULL,      -- producer_id of the scheduler file
  ordinal INTEGER NOT NULL,
  total_scheduled_tokens INTEGER NOT NULL,
  scheduled_requests INTEGER NOT NULL,
  cache_json TEXT,
  free_blocks_after_schedule INTEGER,
  pool_blocks_after_schedule INTEGER,
  source_id INTEGER NOT NULL,
  line_no INTEGER NOT NULL,
  UNIQUE (run_id, step_id),
  UNIQUE (run_id, scheduler_id, ordinal)
);

-- @surface traceloom_scheduler_request | one request scheduled in a step | Per-step scheduled tokens of each (pseudonymous) request, with its request object | SELECT step_id, request_id, scheduled_tokens FROM traceloom_scheduler_request LIMIT 20
CREATE TABLE traceloom_scheduler_request(
  run_id TEXT NOT NULL,
  step_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  scheduled_tokens INTEGER NOT NULL,
  request_json TEXT NOT NULL,
  source_id INTEGER NOT NULL,
  line_no INTEGER NOT NULL,
  UNIQUE (run_id, step_id, request_id)
);

-- @surface traceloom_context_execution | one worker execution of a step | Worker executions with their transported step id and the profiler marker they emitted | SELECT phase, execution_status, marker_state, count(*) FROM traceloom_context_execution GROUP BY 1, 2, 3
CREATE TABLE traceloom_context_execution(
  run_id TEXT NOT NULL,
  execution_id TEXT NOT NULL UNIQUE,
  step_id TEXT NOT NULL,
  marker TEXT NOT NULL UNIQUE,     -- traceloom.execution.<execution_id>
  worker_rank INTEGER,
  phase TEXT NOT NULL DEFAULT 'execute_model',
  execution_status TEXT NOT NULL,  -- returned, raised
  marker_state TEXT NOT NULL,      -- emitted, unavailable
  source_id INTEGER NOT NULL,
  line_no INTEGER NOT NULL
);

-- @surface traceloom_context_marker | one profiler row carrying an execution marker | PYTORCH_API rows whose name equals an execution's marker exactly, with their thread and interval | SELECT execution_id, source_table, source_key, start_ns, end_ns, global_tid FROM traceloom_context_marker LIMIT 20
CREATE TABLE traceloom_context_marker(
  execution_id TEXT NOT NULL,
  source_id INTEGER NOT NULL,      -- traceloom_raw_source_database.source_id
  source_path TEXT NOT NULL,
  source_table TEXT NOT NULL,      -- PYTORCH_API
  source_key TEXT NOT NULL,        -- the raw rowid, as text
  marker_name TEXT NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  global_tid TEXT NOT NULL,
  PRIMARY KEY (execution_id, source_id, source_table, source_key)
);

-- @surface traceloom_context_task_queue | one task-queue row | Enqueue@ / Dequeue@ rows of PYTORCH_API (type 50002) with their connection id | SELECT queue_kind, count(*) FROM traceloom_context_task_queue GROUP BY 1
CREATE TABLE traceloom_context_task_queue(
  source_id INTEGER NOT NULL,
  source_path TEXT NOT NULL,
  source_key TEXT NOT NULL,
  queue_kind TEXT NOT NULL CHECK (queue_kind IN ('enqueue', 'dequeue')),
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  global_tid INTEGER NOT NULL,
  connection_id INTEGER NOT NULL
);

-- @surface traceloom_context_queue_pair | one unique enqueue/dequeue pair | Exactly one Enqueue@ and one Dequeue@ per (source, connection id), same process, enqueue first | SELECT connection_id, enqueue_tid, dequeue_tid, dequeue_start_ns - enqueue_start_ns AS delay_ns FROM traceloom_context_queue_pair LIMIT 20
CREATE TABLE traceloom_context_queue_pair(
  source_id INTEGER NOT NULL,
  source_path TEXT NOT NULL,
  enqueue_key TEXT NOT NULL,
  dequeue_key TEXT NOT NULL,
  connection_id INTEGER NOT NULL,
  enqueue_start_ns INTEGER NOT NULL,
  enqueue_end_ns INTEGER NOT NULL,
  enqueue_tid INTEGER NOT NULL,
  dequeue_start_ns INTEGER NOT NULL,
  dequeue_end_ns INTEGER NOT NULL,
  dequeue_tid INTEGER NOT NULL
);

-- @surface traceloom_context_queue_runtime | one runtime call reached through the task queue | Audit of the queue bridge: the execution, the pair and the runtime call inside the dequeue | SELECT execution_id, count(*) FROM traceloom_context_queue_runtime GROUP BY 1 LIMIT 20
CREATE TABLE traceloom_context_queue_runtime(
  execution_id TEXT NOT NULL,
  runtime_call_id TEXT NOT NULL,
  source_id INTEGER NOT NULL,
  enqueue_key TEXT NOT NULL,
  dequeue_key TEXT NOT NULL,
  connection_id INTEGER NOT NULL
);

-- @surface traceloom_context_runtime_candidate | one (execution, runtime call, basis) claim | Runtime calls inside an execution's marker on its thread, or reached through the task queue | SELECT association_basis, count(*) FROM traceloom_context_runtime_candidate GROUP BY 1
CREATE TABLE traceloom_context_runtime_candidate(
  execution_id TEXT NOT NULL,
  runtime_call_id TEXT NOT NULL,
  association_basis TEXT NOT NULL  -- same_thread_host_scope, task_queue_connection
);

-- @surface traceloom_context_runtime_call | one (execution, runtime call) | The claim per call: supported_host_scope when exactly one execution claims it, else ambiguous_execution_scope | SELECT support_state, association_basis, count(*) FROM traceloom_context_runtime_call GROUP BY 1, 2
CREATE TABLE traceloom_context_runtime_call(
  execution_id TEXT NOT NULL,
  runtime_call_id TEXT NOT NULL,
  association_basis TEXT NOT NULL, -- MIN over the bases of the candidates
  support_state TEXT NOT NULL CHECK (support_state IN ('supported_host_scope', 'ambiguous_execution_scope')),
  PRIMARY KEY (execution_id, runtime_call_id)
);

-- @surface traceloom_context_replay_launch_candidate | one (step, graph launch) candidate | Direct candidates on a launch's graph_launch device work (its MODEL_EXECUTE), joined to the exact launch | SELECT launch_id, run_id, step_id, association_basis FROM traceloom_context_replay_launch_candidate LIMIT 20
CREATE TABLE traceloom_context_replay_launch_candidate(
  run_id TEXT NOT NULL,
  step_id TEXT NOT NULL,
  execution_id TEXT NOT NULL,
  worker_rank INTEGER,
  phase TEXT,
  runtime_call_id TEXT NOT NULL,
  device_work_id TEXT NOT NULL,
  device_id INTEGER,
  event_id TEXT,
  start_ns INTEGER,
  end_ns INTEGER,
  dur_us REAL,
  symbol TEXT,
  provider_support_state TEXT,
  association_basis TEXT NOT NULL,
  launch_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  replay_unit_id INTEGER,
  anchor_id TEXT,
  graph_launch_occurrence_id INTEGER
);

-- @surface traceloom_context_device_assignment | one device work item with at least one candidate step | Distinct (run_id, step_id) per device work over direct and replay-member candidates; only step_count = 1 is supported | SELECT step_count, count(*) FROM traceloom_context_device_assignment GROUP BY 1
CREATE TABLE traceloom_context_device_assignment(
  device_work_id TEXT PRIMARY KEY,
  step_count INTEGER NOT NULL
) WITHOUT ROWID;

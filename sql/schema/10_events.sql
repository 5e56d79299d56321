-- Normalized device events, host runtime calls and their identity relations
-- (outputs.md section 2, inputs.md sections 9 and 10).

-- traceloom_event is a view over two tables, so that the database stays proportional to the
-- trace: the per-event integers (traceloom_event_core, one row per event) and the text columns,
-- which repeat across millions of events, stored once per distinct combination
-- (traceloom_event_shape). Ids are computed: event_id = 'event-' || event_n is a generated
-- column of the core table, added with its index once the rows are in (sql/views/00_indexes.sql),
-- so joins on event_id, inner or LEFT, are index searches. The view is one table: the shape's
-- text comes from scalar subqueries, not a join, because SQLite cannot flatten a view that is
-- a join into the right side of a LEFT JOIN and would materialize all of it instead.
-- The example counts events per shape_id first, then names the shapes: the join written
-- first (shapes x events) scans the million event rows once per shape (19 at a million
-- kernels: 1.8 s CPU against 0.5).
-- @surface traceloom_event_shape | one distinct combination of an event's text columns | Storage behind traceloom_event: kind, names, symbol and role, stored once and shared by every event with the same values | SELECT s.kind, s.label, n.events FROM (SELECT shape_id, count(*) AS events FROM traceloom_event_core GROUP BY shape_id) n JOIN traceloom_event_shape s USING (shape_id) ORDER BY n.events DESC LIMIT 10
CREATE TABLE traceloom_event_shape(
  shape_id INTEGER PRIMARY KEY,
  source_id INTEGER NOT NULL,      -- traceloom_raw_source_database.source_id
  source_table TEXT NOT NULL,
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
  -- Provider identifiers that few events carry or that repeat with the event's text (Ascend:
  -- one context id on every task, no model or graph node outside graph mode; CUDA: a context
  -- per device, a graph node id per graph kernel): kept here, not as a serial-type byte on
  -- every event row (traceloom_event_core), at the price of one shape per distinct value.
  context_id INTEGER,
  model_id INTEGER,
  graph_node_id INTEGER,
  source_rowid_offset INTEGER      -- source key minus event_n, where every event of the shape
                                   -- has the same; NULL: traceloom_event_source_key
);

-- @surface traceloom_event_core | one device event (integers only) | Storage behind traceloom_event: ids, times, stream and provider identifiers, and the shape of its text columns | SELECT device_id, count(*), min(start_ns), max(start_ns + dur_ns) FROM traceloom_event_core GROUP BY device_id
CREATE TABLE traceloom_event_core(
  event_n INTEGER PRIMARY KEY,     -- n of event-<n>, dense 0-based in reader order
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  stream_id INTEGER,               -- NULL = no stream (its source key: traceloom_event_source_key)
  start_ns INTEGER NOT NULL,
  dur_ns INTEGER NOT NULL,         -- end_ns - start_ns
  shape_id INTEGER NOT NULL,       -- traceloom_event_shape
  task_id INTEGER,
  global_task_id INTEGER,
  correlation_id INTEGER,          -- (context_id, model_id, graph_node_id: in the shape)
  op_id INTEGER,
  relation_n INTEGER,              -- its relation (traceloom_runtime_device_relation_core): the
                                   -- supported one where it has one, else its only one; NULL:
                                   -- none. A synchronization event under a reused correlation id
                                   -- has one per candidate call: the others are found by event_n
  anchor_n INTEGER                 -- its anchor (traceloom_anchor_core), if it is one
);

-- A row's source key (its source rowid; for a derived row, its writer's running key) is its
-- event_n plus an offset that the rows of one source table share wherever the reader keeps
-- every row (Ascend, Nsight: one or two values over a million events), not where it skips
-- rows between them (Kineto: one per event). The offset is stored once on the shape where all
-- the shape's events share it (traceloom_event_shape.source_rowid_offset; a shape is within
-- one source table), not on every core row (a column costs each of a million rows a header
-- byte even when 0 or 1); the events of any other shape, and the replay units' events, store
-- their key here: source_key = COALESCE(shape offset + event_n, this row's), the second
-- read only where the first is NULL.
-- @surface traceloom_event_source_key | the source key of an event whose shape has no single source rowid offset | Storage behind traceloom_event.source_key where the events of a shape are not consecutive rows of their source table (Kineto), and of the replay units' events | SELECT event_n, source_key FROM traceloom_event_source_key ORDER BY event_n LIMIT 10
CREATE TABLE traceloom_event_source_key(
  event_n INTEGER PRIMARY KEY,     -- traceloom_event_core
  source_key INTEGER NOT NULL
);

-- @surface traceloom_event | one normalized device event | Every device observation of the profile, anchors and non-anchors, with provenance (source table and rowid) | SELECT kind, count(*) AS events FROM traceloom_event GROUP BY kind ORDER BY events DESC
CREATE VIEW traceloom_event AS
SELECT c.event_id, c.db_idx, c.device_id, NULL AS step_idx,
       (SELECT s.source_id FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS source_id,
       (SELECT s.source_table FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS source_table,
       CAST(COALESCE((SELECT s.source_rowid_offset FROM traceloom_event_shape s
                       WHERE s.shape_id = c.shape_id) + c.event_n,
                     (SELECT k.source_key FROM traceloom_event_source_key k
                       WHERE k.event_n = c.event_n)) AS TEXT) AS source_key, c.stream_id, c.start_ns,
       c.start_ns + c.dur_ns AS end_ns, c.dur_ns / 1000.0 AS dur_us,
       (SELECT s.kind FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS kind,
       (SELECT s.category FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS category,
       (SELECT s.role FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS role,
       (SELECT s.semantic_role FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS semantic_role,
       (SELECT s.semantic_role_reason FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS semantic_role_reason,
       (SELECT s.symbol FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS symbol,
       (SELECT s.role_class_id FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS role_class_id,
       (SELECT s.label FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS label,
       (SELECT s.raw_label FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS raw_label,
       (SELECT s.op_name FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS op_name,
       (SELECT s.op_type FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS op_type,
       (SELECT s.compute_task_type FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS compute_task_type,
       (SELECT s.comm_name FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS comm_name,
       (SELECT s.comm_task_type FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS comm_task_type,
       (SELECT s.family FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS family,
       (SELECT s.task_type FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS task_type,
       c.task_id, c.global_task_id, c.correlation_id,
       (SELECT s.context_id FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS context_id,
       (SELECT s.model_id FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS model_id,
       (SELECT s.graph_node_id FROM traceloom_event_shape s WHERE s.shape_id = c.shape_id) AS graph_node_id,
       c.op_id, NULL AS raw_json, c.event_n,
       -- the runtime call of its supported relation, if any
       (SELECT r.call_n FROM traceloom_runtime_device_relation_core r
         WHERE r.relation_n = c.relation_n
           AND (SELECT s.support_state FROM traceloom_runtime_device_relation_shape s
                 WHERE s.shape_id = r.shape_id) IN ('supported_exact', 'supported_deterministic'))
         AS launch_call_n,
       c.anchor_n, c.relation_n
FROM traceloom_event_core c
-- A promoted graph launch's derived row (source_table graph_replay, a negative event_n:
-- ext/trace/trace.h tl_event_stored_n) is its launch anchor's interval, not an event: the
-- replay unit's event stands for the launches (ext/replay/publish_replay.c
-- publish_unit_events), as in the reference. A filter, not a key range (the unary +): a
-- search by event_n stays one primary-key search, and the planner does not take the events'
-- range as a cheaper outer loop (a join on event_id then scanned the anchors per event on a
-- small analysis instead of building its automatic index). Under text_id_indexes (and idle
-- evidence) this term on the events alone lets SQLite 3.40 check a Bloom filter on the
-- event_id index in a join by event_id (node-events); that is right only because the option
-- stores event_id (ext/publish/publish.c): built on an index of the generated column the
-- filter held wrong keys and the join gave no row (tests/python/test_report_plans.py,
-- test_node_events_same_rows_with_and_without_text_id_indexes).
WHERE +c.event_n >= 0;

-- Runtime calls and relations follow the same pattern: integers per row in *_core, repeated
-- text once per combination in *_shape, the public name a view with computed ids.
-- @surface traceloom_runtime_call_shape | one distinct combination of a runtime call's text columns | Storage behind traceloom_runtime_call: provider, source table, API name and calling thread, stored once | SELECT api_name, api_type FROM traceloom_runtime_call_shape ORDER BY api_name LIMIT 20
CREATE TABLE traceloom_runtime_call_shape(
  shape_id INTEGER PRIMARY KEY,
  source_id INTEGER NOT NULL,
  provider TEXT NOT NULL,          -- ascend, cuda, unknown
  clock_domain TEXT NOT NULL,
  source_table TEXT NOT NULL,
  api_name TEXT,
  api_type TEXT,
  match_policy TEXT NOT NULL,
  process_id INTEGER,              -- the ids of the calling thread
  thread_id INTEGER,
  global_tid INTEGER,
  source_rowid_offset INTEGER      -- source key minus call_n, where every call of the shape
                                   -- has the same; NULL: traceloom_runtime_call_source_key
);

-- @surface traceloom_runtime_call_core | one runtime call (integers only) | Storage behind traceloom_runtime_call: ids, times, correlation id and the call's range of relations | SELECT shape_id, count(*) FROM traceloom_runtime_call_core GROUP BY shape_id ORDER BY 2 DESC LIMIT 10
CREATE TABLE traceloom_runtime_call_core(
  call_n INTEGER PRIMARY KEY,      -- n of runtime-call-<n>, dense 0-based in reader order
  db_idx INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,       -- (its source key: traceloom_runtime_call_source_key)
  dur_ns INTEGER NOT NULL,         -- end_ns - start_ns
  shape_id INTEGER NOT NULL,       -- traceloom_runtime_call_shape
  context_id INTEGER,
  device_id INTEGER,
  correlation_id INTEGER,
  first_relation_n INTEGER,        -- its relations: [first_relation_n, + relation_count)
  relation_count INTEGER NOT NULL  --   (relations are published call-major)
);

-- The calls' source rowids, as the events' (traceloom_event_source_key).
-- @surface traceloom_runtime_call_source_key | the source key of a runtime call whose shape has no single source rowid offset | Storage behind traceloom_runtime_call.source_key where the calls of a shape are not consecutive rows of their source table (Kineto) | SELECT call_n, source_key FROM traceloom_runtime_call_source_key ORDER BY call_n LIMIT 10
CREATE TABLE traceloom_runtime_call_source_key(
  call_n INTEGER PRIMARY KEY,      -- traceloom_runtime_call_core
  source_key INTEGER NOT NULL
);

-- @surface traceloom_runtime_call | one host runtime/API call | Host-side runtime calls (CANN_API, ApiData, CUDA runtime) with thread and correlation ids | SELECT api_name, count(*) AS calls FROM traceloom_runtime_call GROUP BY api_name ORDER BY calls DESC
CREATE VIEW traceloom_runtime_call AS
SELECT c.runtime_call_id, c.db_idx,
       (SELECT s.provider FROM traceloom_runtime_call_shape s WHERE s.shape_id = c.shape_id) AS provider,
       (SELECT s.clock_domain FROM traceloom_runtime_call_shape s WHERE s.shape_id = c.shape_id) AS clock_domain,
       (SELECT s.source_id FROM traceloom_runtime_call_shape s WHERE s.shape_id = c.shape_id) AS source_id,
       (SELECT s.source_table FROM traceloom_runtime_call_shape s WHERE s.shape_id = c.shape_id) AS source_table,
       CAST(COALESCE((SELECT s.source_rowid_offset FROM traceloom_runtime_call_shape s
                       WHERE s.shape_id = c.shape_id) + c.call_n,
                     (SELECT k.source_key FROM traceloom_runtime_call_source_key k
                       WHERE k.call_n = c.call_n)) AS TEXT) AS source_key, c.start_ns, c.start_ns + c.dur_ns AS end_ns,
       c.dur_ns / 1000.0 AS dur_us,
       (SELECT s.api_name FROM traceloom_runtime_call_shape s WHERE s.shape_id = c.shape_id) AS api_name,
       (SELECT s.api_type FROM traceloom_runtime_call_shape s WHERE s.shape_id = c.shape_id) AS api_type,
       (SELECT s.process_id FROM traceloom_runtime_call_shape s WHERE s.shape_id = c.shape_id) AS process_id,
       (SELECT s.thread_id FROM traceloom_runtime_call_shape s WHERE s.shape_id = c.shape_id) AS thread_id,
       (SELECT s.global_tid FROM traceloom_runtime_call_shape s WHERE s.shape_id = c.shape_id) AS global_tid,
       c.context_id, c.device_id, c.correlation_id,
       (SELECT s.match_policy FROM traceloom_runtime_call_shape s WHERE s.shape_id = c.shape_id) AS match_policy,
       NULL AS raw_json, c.call_n, c.first_relation_n, c.relation_count
FROM traceloom_runtime_call_core c;

-- @surface traceloom_runtime_device_relation_shape | one distinct combination of a relation's policy and states | Storage behind traceloom_runtime_device_relation: match policy, evidence level, support state and cardinality, stored once | SELECT * FROM traceloom_runtime_device_relation_shape
CREATE TABLE traceloom_runtime_device_relation_shape(
  shape_id INTEGER PRIMARY KEY,
  relation_kind TEXT NOT NULL,     -- provider_correlation (a call and its device work joined by the provider's correlation or connection id), graph_launch (a launch and its call: ext/replay/publish_replay.c)
  match_policy TEXT NOT NULL,
  evidence_level TEXT NOT NULL,
  support_state TEXT NOT NULL,
  cardinality TEXT NOT NULL
);

-- @surface traceloom_runtime_device_relation_core | one relation (integers only) | Storage behind traceloom_runtime_device_relation: the call, the device event and candidate counts | SELECT count(*), count(call_n), count(event_n) FROM traceloom_runtime_device_relation_core
CREATE TABLE traceloom_runtime_device_relation_core(
  relation_n INTEGER PRIMARY KEY,  -- n of runtime-device-relation-<n>: call-major order, then
                                   -- the graph_launch relations in launch order
  db_idx INTEGER NOT NULL,
  call_n INTEGER,                  -- traceloom_runtime_call_core; NULL = no call
  event_n INTEGER,                 -- traceloom_event_core of the device work; NULL = none
  shape_id INTEGER NOT NULL,       -- traceloom_runtime_device_relation_shape
  runtime_candidate_count INTEGER NOT NULL,
  device_candidate_count INTEGER NOT NULL
);

-- @surface traceloom_runtime_device_relation | one relation (or typed non-relation) between a runtime call and device work | Host-to-device links found by provider identifiers only; unmatched, missing and ambiguous cases stay as typed rows | SELECT support_state, count(*) FROM traceloom_runtime_device_relation GROUP BY support_state
CREATE VIEW traceloom_runtime_device_relation AS
SELECT r.relation_id, r.db_idx, r.runtime_call_id,
       -- a graph_launch relation's work is its launch's (no event: traceloom_device_work)
       COALESCE(r.device_work_id, (SELECT 'device-work-graph-launch-' || g.launch_n
                                   FROM traceloom_graph_launch g
                                   WHERE g.relation_n = r.relation_n)) AS device_work_id,
       (SELECT s.relation_kind FROM traceloom_runtime_device_relation_shape s WHERE s.shape_id = r.shape_id) AS relation_kind,
       (SELECT s.match_policy FROM traceloom_runtime_device_relation_shape s WHERE s.shape_id = r.shape_id) AS match_policy,
       (SELECT s.evidence_level FROM traceloom_runtime_device_relation_shape s WHERE s.shape_id = r.shape_id) AS evidence_level,
       (SELECT s.support_state FROM traceloom_runtime_device_relation_shape s WHERE s.shape_id = r.shape_id) AS support_state,
       (SELECT s.cardinality FROM traceloom_runtime_device_relation_shape s WHERE s.shape_id = r.shape_id) AS cardinality,
       r.runtime_candidate_count, r.device_candidate_count,
       -- the id the relation was found under: the device work's, else the call's
       CASE WHEN r.event_n IS NOT NULL
            THEN (SELECT CASE WHEN e.correlation_id >= 0 THEN e.correlation_id END
                    FROM traceloom_event_core e WHERE e.event_n = r.event_n)
            -- a call's, else a graph_launch relation's launch's (one without a call)
            ELSE COALESCE((SELECT CASE WHEN c.correlation_id >= 0 THEN c.correlation_id END
                             FROM traceloom_runtime_call_core c WHERE c.call_n = r.call_n),
                          (SELECT CAST(g.correlation_id AS INTEGER) FROM traceloom_graph_launch g
                            WHERE g.relation_n = r.relation_n))
       END AS correlation_id, NULL AS raw_json,
       r.relation_n, r.call_n, r.event_n
FROM traceloom_runtime_device_relation_core r;

-- Views over the event tables. Plain SQL: any SQLite client can read them.

-- @surface traceloom_event_source | one source row per event | Lineage of each event: the raw row it came from (one primary row per event) | SELECT * FROM traceloom_event_source LIMIT 5
CREATE VIEW traceloom_event_source AS
SELECT event_id, 0 AS source_ordinal, db_idx, device_id, source_table, source_key,
       'primary' AS source_role, source_id, NULL AS raw_json
FROM traceloom_event;

-- A graph_launch relation's launch, by the relation (traceloom_runtime_device_relation,
-- traceloom_v_runtime_device).
CREATE INDEX traceloom_graph_launch_relation ON traceloom_graph_launch(relation_n);

-- The reference's words (docs/PARITY.md): every item is an event's work (work_kind 'event';
-- the event's kind tells compute from copies and launches), named as traceloom_v_runtime_device
-- names it: the operator's full name, else the raw label.
-- Written on the storage tables (the event core and shape, the relation core), joined by
-- integer key, not on traceloom_event: its text columns are scalar subqueries, each opening its
-- cursor again per event, and its launch_call_n a subquery on the relation around one on the
-- relation's shape; per event this view read six of them (1M events at a million tasks).
-- The columns are the event view's expressions, unchanged.
-- The example joins the events with CROSS JOIN: SQLite 3.40 runs a FROM-clause subquery (this
-- union) as a co-routine only when it comes first and the next table is CROSS or LEFT JOINed;
-- after a plain JOIN it writes all of it, every column of 1M rows, to a temporary table first
-- (the example's VM steps barely change, 88.4M -> 87.4M, but the temporary table's writes are
-- not VM steps: 17.57 -> 14.00 G instructions, 1.91 -> 1.23 s CPU at 1M, bench/RESULTS.md q31).
-- @surface traceloom_device_work | one device work item | Device-side work that runtime calls can launch (every task-level event; communication-op envelopes, task type COMMUNICATION_OP, excluded) | SELECT e.kind, count(*) FROM traceloom_device_work w CROSS JOIN traceloom_event e ON e.event_n = w.event_n GROUP BY e.kind
CREATE VIEW traceloom_device_work AS
SELECT 'device-work-' || e.event_id AS device_work_id, e.db_idx,
       i.provider, e.device_id, 'event' AS work_kind, e.event_id, e.task_id,
       NULL AS graph_launch_occurrence_id, s.source_table,
       CAST(COALESCE(s.source_rowid_offset + e.event_n, (SELECT sk.source_key FROM traceloom_event_source_key sk WHERE sk.event_n = e.event_n)) AS TEXT) AS source_key,
       e.start_ns, e.start_ns + e.dur_ns AS end_ns, e.dur_ns / 1000.0 AS dur_us,
       COALESCE(s.op_name, s.raw_label, s.task_type) AS symbol,
       NULL AS raw_json, e.event_n,
       -- traceloom_event's launch_call_n: the call of the event's relation when that relation
       -- is supported. The state test sits in the join's ON as a non-correlated IN (the
       -- supported shapes, a list built once per statement and probed per event), so the
       -- column stays r.call_n (declared INTEGER, as the event view's) and no shape row is
       -- searched per event
       r.call_n AS launch_call_n, e.anchor_n
FROM traceloom_event_core e
-- after the event, by key (CROSS JOIN): the events are not scanned once per input
CROSS JOIN traceloom_input i ON i.db_idx = e.db_idx
LEFT JOIN traceloom_event_shape s ON s.shape_id = e.shape_id
LEFT JOIN traceloom_runtime_device_relation_core r
  ON r.relation_n = e.relation_n
 AND r.shape_id IN (SELECT rs.shape_id FROM traceloom_runtime_device_relation_shape rs
                    WHERE rs.support_state IN ('supported_exact', 'supported_deterministic'))
-- (nor a replay unit's event: its launches are the work, below)
WHERE s.task_type IS NOT 'COMMUNICATION_OP'
  AND s.source_table NOT IN ('graph_replay', 'ACLGRAPH_REPLAY_UNIT', 'CUDA_GRAPH_REPLAY_UNIT')
UNION ALL
-- Every observed graph launch is device work of its own (inputs.md 10, graph-launch
-- relations), promoted or not: the launch interval, no event (a launch anchor's derived
-- event, source_table 'graph_replay', is the tree's token, not work), its source the row that
-- shows the launch on the device side (Ascend: its MODEL_EXECUTE task; CUDA: the
-- cudaGraphLaunch call's runtime row, the only row of the launch itself).
SELECT 'device-work-graph-launch-' || g.launch_n, g.db_idx, i.provider, g.device_id,
       'graph_launch', NULL, NULL, g.graph_launch_occurrence_id,
       COALESCE(x.source_table, c.source_table), COALESCE(x.source_key, c.source_key),
       g.start_ns, g.end_ns, g.dur_us, 'graph_launch', NULL, NULL,
       -- launch_call_n: the call of a supported provider relation, which a launch's work has
       -- none of (the launch call is its graph_launch's host_call_id)
       NULL, g.anchor_n
FROM traceloom_graph_launch g
JOIN traceloom_input i ON i.db_idx = g.db_idx
LEFT JOIN traceloom_graph_launch_control k
  ON k.launch_n = g.launch_n AND k.control_kind = 'execute'
LEFT JOIN traceloom_event x ON x.event_n = k.event_n
LEFT JOIN traceloom_runtime_call c ON c.call_n = CAST(substr(g.host_call_id, 14) AS INTEGER);

-- The source registry (traceloom_source_ref): the number an event's or a decision's
-- source_ref_id gives its source table, per input, in the order the reader registers the
-- tables, as the reference numbers them (docs/PARITY.md): an Ascend or Hygon input registers
-- every table of its files, file by file, tables by name (traceloom_raw_table's order, the
-- capture-stream companion's last); an Nsight export registers the kernel table, then of
-- RUNTIME, MEMCPY, MEMSET, SYNCHRONIZATION, CUDA_EVENT (a timed one: its capability usable)
-- and GRAPH_TRACE each one holding rows, in that order, whether or not ours makes events of
-- it (the runtime rows are calls here). The replay units of an input that has any come last,
-- as the analysis's own table. A few dozen rows, numbered once here, read by key.
INSERT INTO traceloom_source_ref(db_idx, source_ref_id, source_id, source_table)
WITH reg AS (
  SELECT d.db_idx, t.source_id, t.source_table,
         row_number() OVER (
           PARTITION BY d.db_idx
           ORDER BY CASE WHEN i.source_kind <> 'cuda_nsys_sqlite' THEN 0
                         ELSE instr(',CUPTI_ACTIVITY_KIND_KERNEL,CUPTI_ACTIVITY_KIND_RUNTIME,'
                                    || 'CUPTI_ACTIVITY_KIND_MEMCPY,CUPTI_ACTIVITY_KIND_MEMSET,'
                                    || 'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,'
                                    || 'CUPTI_ACTIVITY_KIND_CUDA_EVENT,'
                                    || 'CUPTI_ACTIVITY_KIND_GRAPH_TRACE,',
                                    ',' || t.source_table || ',') END,
                    t.source_id, t.source_table) - 1 AS source_ref_id
  FROM traceloom_raw_table t
  JOIN traceloom_raw_source_database d ON d.source_id = t.source_id
  JOIN traceloom_input i ON i.db_idx = d.db_idx
  WHERE i.source_kind <> 'cuda_nsys_sqlite'
     OR t.source_table = 'CUPTI_ACTIVITY_KIND_KERNEL'
     OR (t.row_count > 0
         AND t.source_table IN ('CUPTI_ACTIVITY_KIND_RUNTIME', 'CUPTI_ACTIVITY_KIND_MEMCPY',
                                'CUPTI_ACTIVITY_KIND_MEMSET',
                                'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION',
                                'CUPTI_ACTIVITY_KIND_GRAPH_TRACE'))
     OR (t.row_count > 0 AND t.source_table = 'CUPTI_ACTIVITY_KIND_CUDA_EVENT'
         AND EXISTS (SELECT 1 FROM traceloom_profile_inventory v
                     WHERE v.db_idx = d.db_idx AND v.item = 'capability'
                       AND v.capability = 'cuda_events' AND v.usable = 1))
)
SELECT db_idx, source_ref_id, source_id, source_table FROM reg
UNION ALL
SELECT u.db_idx, (SELECT count(*) FROM reg r WHERE r.db_idx = u.db_idx), NULL, u.source_table
FROM (SELECT DISTINCT d.db_idx, x.source_table
      FROM traceloom_event_shape x
      JOIN traceloom_raw_source_database d ON d.source_id = x.source_id
      WHERE x.source_table IN ('ACLGRAPH_REPLAY_UNIT', 'CUDA_GRAPH_REPLAY_UNIT')) u;
CREATE INDEX traceloom_source_ref_table ON traceloom_source_ref(source_table, db_idx);

-- @surface traceloom_v_event_source_locator | one source row per event | Where each event's raw row lives: path, table and rowid, and whether it is embedded in this database | SELECT event_id, source_path, source_table, source_key, resolution_status FROM traceloom_v_event_source_locator LIMIT 5
CREATE VIEW traceloom_v_event_source_locator AS
SELECT s.event_id, s.source_ordinal, s.db_idx, s.device_id,
       -- the source registry's number of the event's table, as the decisions carry it
       (SELECT r.source_ref_id FROM traceloom_source_ref r
        WHERE r.source_table = s.source_table AND r.db_idx = s.db_idx
          AND (r.source_id = s.source_id OR r.source_id IS NULL)) AS source_ref_id,
       d.source_path, s.source_table, s.source_key, s.source_role, s.source_id,
       t.embedded_table_name, t.source_rowid_column,
       -- a replay unit's event is the analysis's, not a raw row's (the reference's word)
       CASE WHEN s.source_table IN ('ACLGRAPH_REPLAY_UNIT', 'CUDA_GRAPH_REPLAY_UNIT')
            THEN 'analysis_synthetic'
            WHEN t.embedded_table_name IS NOT NULL THEN 'embedded_raw'
            WHEN d.source_id IS NOT NULL THEN 'external_raw'
            ELSE 'unresolved' END AS resolution_status
FROM traceloom_event_source s
LEFT JOIN traceloom_raw_source_database d ON d.source_id = s.source_id
LEFT JOIN traceloom_raw_table t ON t.source_id = s.source_id AND t.source_table = s.source_table;

-- @surface traceloom_v_runtime_call_source_locator | one row per runtime call | Where each runtime call's raw row lives | SELECT runtime_call_id, source_path, source_table, source_key, resolution_status FROM traceloom_v_runtime_call_source_locator LIMIT 5
CREATE VIEW traceloom_v_runtime_call_source_locator AS
SELECT c.*, d.source_path, t.embedded_table_name, t.source_rowid_column,
       CASE WHEN t.embedded_table_name IS NOT NULL THEN 'embedded_raw'
            WHEN d.source_id IS NOT NULL THEN 'external_raw'
            ELSE 'unresolved' END AS resolution_status
FROM traceloom_runtime_call c
LEFT JOIN traceloom_raw_source_database d ON d.source_id = c.source_id
LEFT JOIN traceloom_raw_table t ON t.source_id = c.source_id AND t.source_table = c.source_table;

-- Written on the storage tables (the relation, call and event cores and their shapes), joined
-- by integer key, not on the traceloom_runtime_device_relation / _runtime_call / _event views:
-- their text columns are scalar subqueries, and a subquery opens its cursor again on every
-- evaluation, where a LEFT JOIN searches an open one. Per relation the view read 5-7 of them
-- (support state, provider, API name, ...) and SQLite keeps every LEFT JOIN of a GROUP BY, so
-- the example's count per provider and state paid the joins and the subqueries (1M relations
-- at a million tasks: 1.55 -> 1.14 s CPU). The columns are the views' expressions, unchanged.
-- @surface traceloom_v_runtime_device | one runtime-to-device relation or typed non-relation | Every relation next to its runtime call and device work, with the provider; open, ambiguous and rejected rows are results too | SELECT provider, support_state, count(*) FROM traceloom_v_runtime_device GROUP BY 1, 2
CREATE VIEW traceloom_v_runtime_device AS
SELECT r.relation_id, r.db_idx, r.runtime_call_id,
       -- a graph_launch relation's work is its launch's (no event: traceloom_device_work)
       COALESCE(r.device_work_id, (SELECT 'device-work-graph-launch-' || g.launch_n
                                   FROM traceloom_graph_launch g
                                   WHERE g.relation_n = r.relation_n)) AS device_work_id,
       rs.relation_kind, rs.match_policy, rs.evidence_level, rs.support_state, rs.cardinality,
       r.runtime_candidate_count, r.device_candidate_count,
       -- the id the relation was found under: the device work's, else the call's
       CASE WHEN r.event_n IS NOT NULL THEN CASE WHEN e.correlation_id >= 0 THEN e.correlation_id END
            -- a call's, else a graph_launch relation's launch's (one without a call)
            ELSE COALESCE(CASE WHEN c.correlation_id >= 0 THEN c.correlation_id END,
                          (SELECT CAST(g.correlation_id AS INTEGER) FROM traceloom_graph_launch g
                            WHERE g.relation_n = r.relation_n)) END AS correlation_id,
       NULL AS raw_json, r.relation_n, r.call_n, r.event_n,
       COALESCE(cs.provider, (SELECT i.provider FROM traceloom_input i WHERE i.db_idx = r.db_idx))
         AS provider,
       cs.clock_domain, cs.source_table AS runtime_source_table,
       CAST(COALESCE(cs.source_rowid_offset + c.call_n, (SELECT sk.source_key FROM traceloom_runtime_call_source_key sk WHERE sk.call_n = c.call_n)) AS TEXT) AS runtime_source_key,
       c.start_ns AS runtime_start_ns, c.start_ns + c.dur_ns AS runtime_end_ns,
       c.dur_ns / 1000.0 AS runtime_dur_us,
       cs.api_name, cs.api_type, cs.process_id, cs.thread_id, cs.global_tid,
       c.context_id AS runtime_context_id,
       -- A graph_launch relation's work is its launch (no event): read by the relation's key
       -- only where the relation has no event, so a provider relation (a million at a million
       -- tasks) pays one test per column, not a join
       COALESCE(e.device_id, (SELECT g.device_id FROM traceloom_graph_launch g
                              WHERE g.relation_n = r.relation_n)) AS device_id,
       CASE WHEN e.event_n IS NOT NULL THEN 'event'
            ELSE (SELECT 'graph_launch' FROM traceloom_graph_launch g
                  WHERE g.relation_n = r.relation_n) END AS work_kind, e.event_id,
       e.task_id,
       CASE WHEN e.event_n IS NULL THEN (SELECT g.graph_launch_occurrence_id
                                         FROM traceloom_graph_launch g
                                         WHERE g.relation_n = r.relation_n) END
         AS graph_launch_occurrence_id,
       -- a launch's work is shown by its MODEL_EXECUTE task (Ascend) or its call's row (CUDA),
       -- as in traceloom_device_work
       CASE WHEN e.event_n IS NOT NULL THEN es.source_table
            ELSE (SELECT CASE WHEN g.graph_provider = 'cuda' THEN cs.source_table
                              ELSE (SELECT x.source_table FROM traceloom_graph_launch_control k
                                    CROSS JOIN traceloom_event x ON x.event_n = k.event_n
                                    WHERE k.launch_n = g.launch_n
                                      AND k.control_kind = 'execute') END
                  FROM traceloom_graph_launch g WHERE g.relation_n = r.relation_n) END
         AS device_source_table,
       CASE WHEN e.event_n IS NOT NULL THEN CAST(COALESCE(es.source_rowid_offset + e.event_n, (SELECT sk.source_key FROM traceloom_event_source_key sk WHERE sk.event_n = e.event_n)) AS TEXT)
            ELSE (SELECT CASE WHEN g.graph_provider = 'cuda'
                              THEN CAST(COALESCE(cs.source_rowid_offset + c.call_n, (SELECT sk.source_key FROM traceloom_runtime_call_source_key sk WHERE sk.call_n = c.call_n)) AS TEXT)
                              ELSE (SELECT x.source_key FROM traceloom_graph_launch_control k
                                    CROSS JOIN traceloom_event x ON x.event_n = k.event_n
                                    WHERE k.launch_n = g.launch_n
                                      AND k.control_kind = 'execute') END
                  FROM traceloom_graph_launch g WHERE g.relation_n = r.relation_n) END
         AS device_source_key,
       COALESCE(e.start_ns, (SELECT g.start_ns FROM traceloom_graph_launch g
                             WHERE g.relation_n = r.relation_n)) AS device_start_ns,
       COALESCE(e.start_ns + e.dur_ns, (SELECT g.end_ns FROM traceloom_graph_launch g
                                        WHERE g.relation_n = r.relation_n)) AS device_end_ns,
       COALESCE(e.dur_ns / 1000.0, (SELECT g.dur_us FROM traceloom_graph_launch g
                                    WHERE g.relation_n = r.relation_n)) AS device_dur_us,
       CASE WHEN e.event_n IS NOT NULL THEN COALESCE(es.op_name, es.raw_label, es.task_type)
            ELSE (SELECT 'graph_launch' FROM traceloom_graph_launch g
                  WHERE g.relation_n = r.relation_n) END AS device_symbol,
       CASE WHEN e.event_n IS NOT NULL THEN es.kind
            ELSE (SELECT 'graph_launch' FROM traceloom_graph_launch g
                  WHERE g.relation_n = r.relation_n) END AS device_kind,
       c.start_ns AS call_start_ns, c.start_ns + c.dur_ns AS call_end_ns,
       COALESCE(e.start_ns, (SELECT g.start_ns FROM traceloom_graph_launch g
                             WHERE g.relation_n = r.relation_n)) AS work_start_ns,
       COALESCE(e.start_ns + e.dur_ns, (SELECT g.end_ns FROM traceloom_graph_launch g
                                        WHERE g.relation_n = r.relation_n)) AS work_end_ns
FROM traceloom_runtime_device_relation_core r
-- the device work first: a filter on its columns (traceloom_v_sync_runtime_call keeps the
-- synchronization actions, a quarter of the relations) is tested before the state and the
-- call are searched (SQLite joins LEFT JOINs in the order written)
LEFT JOIN traceloom_event_core e ON e.event_n = r.event_n
LEFT JOIN traceloom_event_shape es ON es.shape_id = e.shape_id
LEFT JOIN traceloom_runtime_device_relation_shape rs ON rs.shape_id = r.shape_id
LEFT JOIN traceloom_runtime_call_core c ON c.call_n = r.call_n
LEFT JOIN traceloom_runtime_call_shape cs ON cs.shape_id = c.shape_id;

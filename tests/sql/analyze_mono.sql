-- traceloom_analyze on Ascend monolithic fixtures: published tables and relations.

SELECT 'analyze exact_hlt/mono', traceloom_analyze('fixtures/exact_hlt/mono') LIKE 'traceloom: analysed 1 input(s) (ascend_sqlite_hot_path): 70 events, 15 runtime calls%';
SELECT 'event ids are event-0 .. event-69', (SELECT count(DISTINCT event_id) = 70 AND min(CAST(substr(event_id, 7) AS INT)) = 0 AND max(CAST(substr(event_id, 7) AS INT)) = 69 FROM traceloom_event WHERE source_table = 'TASK');
-- 12 exact graph launches (4 replay units x head, layer, tail): the launches' anchor rows
-- are no events; each unit is one, event-70 .. event-73 after the 70 tasks, from the first
-- launch's start to the last one's end (the prefill unit 100 .. 320).
SELECT 'replay unit events are event-70 .. event-73, no launch is an event',
  (SELECT count(*) = 4 AND min(CAST(substr(event_id, 7) AS INT)) = 70 AND max(CAST(substr(event_id, 7) AS INT)) = 73
   FROM traceloom_event WHERE source_table = 'ACLGRAPH_REPLAY_UNIT')
  AND (SELECT start_ns || '-' || end_ns FROM traceloom_event WHERE event_id = 'event-70') = '100-320'
  AND NOT EXISTS (SELECT 1 FROM traceloom_event WHERE source_table = 'graph_replay');
SELECT 'absent values are NULL, never -1 or empty',
  (SELECT count(*) FROM traceloom_event WHERE stream_id = 4294967295 OR correlation_id = -1 OR model_id = -1 OR op_type = '') = 0;
SELECT 'dur_us is ns / 1000 with 3 decimals', (SELECT dur_us FROM traceloom_event WHERE event_id = 'event-0') = 0.01;
SELECT 'provenance: every event reaches its source row',
  (SELECT count(*) FROM traceloom_v_event_source_locator WHERE resolution_status = 'external_raw' AND source_path LIKE '%/msprof_0.db' AND source_table = 'TASK') = 70;
-- 14 launches: MODEL_EXECUTE and NOTIFY_WAIT share the connectionId of one aclmdlRIExecuteAsync call.
SELECT 'relations: 28 exact launch links',
  (SELECT count(*) FROM traceloom_runtime_device_relation WHERE support_state = 'supported_exact'
     AND evidence_level = 'direct_provider_identifier' AND match_policy = 'ascend_connection_id' AND cardinality = 'one_to_many'
     AND relation_kind = 'provider_correlation') = 28;
SELECT 'relations: body and record tasks have no runtime call',
  (SELECT count(*) FROM traceloom_runtime_device_relation WHERE support_state = 'unmatched_device_work' AND runtime_call_id IS NULL AND evidence_level = 'open') = 42;
SELECT 'relations: the blocking sync has no device work',
  (SELECT count(*) = 1 AND max(correlation_id) = 9999 FROM traceloom_runtime_device_relation WHERE support_state = 'unmatched_runtime_call');
SELECT 'relations: each exact link joins a launch call to MODEL_EXECUTE or NOTIFY_WAIT',
  (SELECT count(*) FROM traceloom_v_runtime_device WHERE api_name = 'aclmdlRIExecuteAsync' AND relation_kind = 'provider_correlation' AND device_kind IN ('graph_launch', 'control')) = 28;
-- The fixture's 14 aclmdlRIExecuteAsync calls launch 14 graphs (inputs.md 10): one graph_launch
-- relation each, to the launch's own work (no event), shown by its MODEL_EXECUTE task.
SELECT 'relations: each launch call has one graph_launch relation to its launch',
  (SELECT count(DISTINCT r.runtime_call_id) FROM traceloom_v_runtime_device r
   JOIN traceloom_graph_launch g ON g.host_call_id = r.runtime_call_id
    AND r.device_work_id = 'device-work-graph-launch-' || g.launch_n
   WHERE r.relation_kind = 'graph_launch' AND r.api_name = 'aclmdlRIExecuteAsync'
     AND r.work_kind = 'graph_launch' AND r.event_id IS NULL
     AND r.support_state = 'supported_deterministic' AND r.cardinality = 'one_to_one'
     AND r.device_start_ns = g.start_ns AND r.device_end_ns = g.end_ns
     AND EXISTS (SELECT 1 FROM traceloom_event e WHERE e.task_type = 'MODEL_EXECUTE'
                 AND e.source_table = r.device_source_table AND e.source_key = r.device_source_key)) = 14
  AND (SELECT count(*) FROM traceloom_runtime_device_relation WHERE relation_kind = 'graph_launch') = 14;
-- A node's runtime calls include, for each placement of a promoted launch's anchor, that
-- launch's graph_launch relation (the anchor's graph_launch endpoint): the 12 launch anchors
-- (4 units x head, layer, tail) once each as a self placement, and every placement of them.
SELECT 'node runtime calls: each placement of a launch anchor walks to its graph_launch relation',
  (SELECT count(*) FROM traceloom_v_node_runtime_call
    WHERE relation_kind = 'graph_launch' AND coverage_kind = 'self') = 12
  AND (SELECT count(*) FROM traceloom_v_node_runtime_call WHERE relation_kind = 'graph_launch')
      = (SELECT count(*) FROM traceloom_tree_node_anchor na
          JOIN traceloom_anchor_runtime_relation r ON r.anchor_id = na.anchor_id
         WHERE r.endpoint_kind = 'graph_launch')
  AND NOT EXISTS (
    SELECT na.node_id, na.occurrence_idx, na.anchor_order, r.relation_id, r.runtime_call_id,
           r.device_work_id
    FROM traceloom_tree_node_anchor na
    JOIN traceloom_anchor_runtime_relation r ON r.anchor_id = na.anchor_id
    WHERE r.endpoint_kind = 'graph_launch'
    EXCEPT
    SELECT node_id, occurrence_idx, anchor_order, relation_id, runtime_call_id, device_work_id
    FROM traceloom_v_node_runtime_call
    WHERE relation_kind = 'graph_launch' AND work_kind = 'graph_launch');
SELECT 'metadata: required keys',
  (SELECT count(*) FROM traceloom_metadata WHERE key IN ('schema_version','tool_version','artifact_kind','source_kind','source_path','source_size_bytes','source_sha256','source_embedded','analysis_options','analysis_status')) = 10;
SELECT 'metadata: artifact kind and status', (SELECT group_concat(value, ',') FROM (SELECT value FROM traceloom_metadata WHERE key IN ('artifact_kind','analysis_status') ORDER BY key)) = 'complete,queryable_database_timeline';
SELECT 'metadata: two source files hashed (DB and stream_info companion)',
  (SELECT json_array_length(value) = 2 AND length(json_extract(value, '$[0]')) = 64 FROM traceloom_metadata WHERE key = 'source_sha256');
SELECT 'inventory: DB and companion listed', (SELECT count(*) FROM traceloom_raw_source_database) = 2;
SELECT 'inventory: raw TASK table with 70 rows', (SELECT row_count FROM traceloom_raw_table WHERE source_table = 'TASK') = 70;
SELECT 'inventory: companion status', (SELECT stream_info_status FROM traceloom_input WHERE db_idx = 0) = 'stream_info_adjacent';
SELECT 'surface: every published relation is described', (SELECT count(*) FROM main.sqlite_schema s WHERE s.type IN ('table','view') AND s.name LIKE 'traceloom%' AND s.name NOT IN (SELECT surface_name FROM traceloom_analysis_surface)) = 0;

-- Re-running replaces the earlier results.
SELECT 'analyze minimal_smoke/mono', traceloom_analyze('fixtures/minimal_smoke/mono') LIKE '%3 events%';
SELECT 'rerun: replaced', (SELECT count(*) FROM traceloom_event) = 3;
SELECT 'rerun: compute and comm ids', (SELECT group_concat(kind, ',') FROM (SELECT kind FROM traceloom_event ORDER BY event_id)) = 'compute,communication,communication';
SELECT 'rerun: tasks without host API are unmatched device work, comm op is not device work',
  (SELECT count(*) FROM traceloom_runtime_device_relation WHERE support_state = 'unmatched_device_work') = 2;

-- Two ranks in one directory: one db_idx each, in sorted order.
SELECT 'analyze two_ranks', traceloom_analyze('fixtures/two_ranks') LIKE '%2 input(s)%';
SELECT 'two ranks: events per db_idx', (SELECT group_concat(db_idx || ':' || n, ',') FROM (SELECT db_idx, count(*) n FROM traceloom_event GROUP BY db_idx ORDER BY db_idx)) = '0:3,1:74';
SELECT 'two ranks: correlation is per db_idx', (SELECT count(*) FROM traceloom_runtime_device_relation WHERE support_state = 'supported_exact' AND db_idx = 1) = 28;
SELECT 'two ranks: source_paths lists both', (SELECT json_array_length(value) FROM traceloom_metadata WHERE key = 'source_paths') = 2;

-- A failed analysis leaves the previous results exactly as they were.
CREATE TABLE before_run AS SELECT count(*) AS n, group_concat(event_id) AS ids FROM traceloom_event;
-- expect-error: profile path does not exist
SELECT traceloom_analyze('fixtures/does/not/exist.db');
SELECT 'atomic: previous events kept after a failed run', (SELECT n = 77 FROM before_run) AND (SELECT count(*) FROM traceloom_event) = 77;
-- expect-error: unknown analyze option "bogus"
SELECT traceloom_analyze('fixtures/minimal_smoke/mono', '{"bogus": 1}');
SELECT 'atomic: previous events kept after bad options', (SELECT count(*) FROM traceloom_event) = 77;

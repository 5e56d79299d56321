-- The core-and-shape storage behind traceloom_event, traceloom_runtime_call,
-- traceloom_runtime_device_relation and traceloom_anchor (docs/ARCHITECTURE.md, Publication):
-- the public views give back every stored row once, with ids computed from the integers, and
-- lookups by the text ids use the expression indexes.

SELECT 'analyze exact_hlt/mono', traceloom_analyze('fixtures/exact_hlt/mono') LIKE 'traceloom: analysed 1 input(s)%';

-- One view row per core row, none lost to the shape join.
SELECT 'events: one view row per core row', (SELECT count(*) FROM traceloom_event) = (SELECT count(*) FROM traceloom_event_core) AND (SELECT count(*) FROM traceloom_event) = 82;
SELECT 'calls: one view row per core row', (SELECT count(*) FROM traceloom_runtime_call) = (SELECT count(*) FROM traceloom_runtime_call_core) AND (SELECT count(*) FROM traceloom_runtime_call) = 15;
SELECT 'relations: one view row per core row', (SELECT count(*) FROM traceloom_runtime_device_relation) = (SELECT count(*) FROM traceloom_runtime_device_relation_core);
SELECT 'anchors: one view row per core row', (SELECT count(*) FROM traceloom_anchor) = (SELECT count(*) FROM traceloom_anchor_core);

-- Text is stored once per distinct combination: fewer shapes than rows, none unused.
SELECT 'event shapes: fewer than events, each used', (SELECT count(*) FROM traceloom_event_shape) < 82 AND NOT EXISTS (SELECT 1 FROM traceloom_event_shape s WHERE NOT EXISTS (SELECT 1 FROM traceloom_event_core c WHERE c.shape_id = s.shape_id));
SELECT 'event shapes: no two identical', (SELECT count(*) FROM (SELECT DISTINCT source_table, kind, category, role, semantic_role, semantic_role_reason, symbol, role_class_id, label, raw_label, op_name, op_type, compute_task_type, comm_name, comm_task_type, family, task_type FROM traceloom_event_shape)) = (SELECT count(*) FROM traceloom_event_shape);
SELECT 'call shapes: fewer than calls', (SELECT count(*) FROM traceloom_runtime_call_shape) < 15;

-- Ids are the integers behind them.
SELECT 'event_id is event- || event_n', (SELECT count(*) FROM traceloom_event WHERE event_id <> 'event-' || event_n) = 0;
SELECT 'runtime_call_id is runtime-call- || call_n', (SELECT count(*) FROM traceloom_runtime_call WHERE runtime_call_id <> 'runtime-call-' || call_n) = 0;
SELECT 'relations name their call and device event by the same integers',
  (SELECT count(*) FROM traceloom_runtime_device_relation WHERE (call_n IS NULL) <> (runtime_call_id IS NULL) OR runtime_call_id <> 'runtime-call-' || call_n OR device_work_id <> 'device-work-event-' || event_n) = 0;
SELECT 'a relation reaches its call and its event',
  (SELECT count(*) FROM traceloom_runtime_device_relation r JOIN traceloom_runtime_call c ON c.runtime_call_id = r.runtime_call_id JOIN traceloom_event e ON 'device-work-' || e.event_id = r.device_work_id) = (SELECT count(*) FROM traceloom_runtime_device_relation WHERE call_n IS NOT NULL AND event_n IS NOT NULL);
SELECT 'anchor_id and event_id of anchors', (SELECT count(*) FROM traceloom_anchor WHERE anchor_id <> 'anchor-' || anchor_n OR event_id <> 'event-' || event_n) = 0;
SELECT 'an anchor carries its event''s times', (SELECT count(*) FROM traceloom_anchor a JOIN traceloom_event e ON e.event_id = a.event_id WHERE a.start_ns <> e.start_ns OR a.end_ns <> e.end_ns) = 0;

-- Durations and costs in us are the stored ns / 1000, and total = compute + comm + idle.
SELECT 'event dur_us = (end_ns - start_ns) / 1000', (SELECT count(*) FROM traceloom_event_core c JOIN traceloom_event e USING (event_n) WHERE e.dur_us <> (c.end_ns - c.start_ns) / 1000.0) = 0;
SELECT 'anchor costs: us from ns', (SELECT count(*) FROM traceloom_anchor_core c JOIN traceloom_anchor a USING (anchor_n) WHERE a.compute_us <> c.compute_ns / 1000.0 OR a.comm_us <> c.comm_ns / 1000.0 OR a.idle_us <> c.idle_ns / 1000.0 OR a.self_us <> c.self_ns / 1000.0 OR a.aux_us <> c.aux_ns / 1000.0) = 0;
SELECT 'anchor total_us = compute + comm + idle', (SELECT count(*) FROM traceloom_anchor WHERE abs(total_us - (compute_us + comm_us + idle_us)) > 1e-9) = 0;

-- Occurrences: one integer row each; only occurrences with children store their paths.
SELECT 'occurrences: one view row per core row', (SELECT count(*) FROM traceloom_position_occurrence) = (SELECT count(*) FROM traceloom_position_occurrence_core) AND (SELECT count(*) FROM traceloom_position_occurrence) > 0;
SELECT 'occurrences: atoms under a parent store no path, others store both', (SELECT count(*) FROM traceloom_position_occurrence_core WHERE (is_atom AND parent_n IS NOT NULL) <> (occurrence_path IS NULL) OR (occurrence_path IS NULL) <> (rooted_position_path IS NULL)) = 0;
SELECT 'occurrences: a parent is published before its children', (SELECT count(*) FROM traceloom_position_occurrence_core WHERE parent_n >= occurrence_n) = 0;
SELECT 'occurrences: the parent ids name the parent row', (SELECT count(*) FROM traceloom_position_occurrence c JOIN traceloom_position_occurrence p ON p.occurrence_n = c.parent_n WHERE c.parent_occurrence_id IS NOT p.occurrence_id OR c.parent_position_id IS NOT p.position_id OR c.tree_id IS NOT p.tree_id) = 0;
SELECT 'occurrences: a child path extends its parent''s', (SELECT count(*) FROM traceloom_position_occurrence c JOIN traceloom_position_occurrence p ON p.occurrence_n = c.parent_n WHERE substr(c.occurrence_path, 1, length(p.occurrence_path) + 1) IS NOT p.occurrence_path || '/' OR substr(c.rooted_position_path, 1, length(p.rooted_position_path) + 1) IS NOT p.rooted_position_path || '/') = 0;
SELECT 'occurrences: costs in us are the stored ns / 1000', (SELECT count(*) FROM traceloom_position_occurrence_core c JOIN traceloom_position_occurrence o USING (occurrence_n) WHERE o.compute_us <> c.compute_ns / 1000.0 OR o.total_us <> (c.compute_ns + c.comm_ns + c.idle_ns) / 1000.0 OR o.linked_aux_us <> c.linked_aux_ns / 1000.0) = 0;

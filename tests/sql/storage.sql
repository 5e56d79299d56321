-- The core-and-shape storage behind the public relations (docs/ARCHITECTURE.md, Storage):
-- the public views give back every stored row once, with ids computed from the integers;
-- relations of a call and occurrences of a node are ranges the owner records, and a child
-- occurrence is found by arithmetic from its parent's.

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
SELECT 'event dur_us = dur_ns / 1000 and end = start + dur', (SELECT count(*) FROM traceloom_event_core c JOIN traceloom_event e USING (event_n) WHERE e.dur_us <> c.dur_ns / 1000.0 OR e.end_ns <> c.start_ns + c.dur_ns OR e.dur_us <> (e.end_ns - e.start_ns) / 1000.0) = 0;
SELECT 'an event names its anchor, and the anchor its event', (SELECT count(*) FROM traceloom_event e JOIN traceloom_anchor a ON a.anchor_n = e.anchor_n WHERE a.event_n <> e.event_n) = 0 AND (SELECT count(*) FROM traceloom_event WHERE anchor_n IS NOT NULL) = (SELECT count(*) FROM traceloom_anchor);
SELECT 'an event''s launch call is the call of its supported relation', (SELECT count(*) FROM traceloom_event e WHERE e.launch_call_n IS NOT (SELECT r.call_n FROM traceloom_runtime_device_relation r WHERE r.event_n = e.event_n AND r.support_state IN ('supported_exact', 'supported_deterministic'))) = 0 AND (SELECT count(*) FROM traceloom_event WHERE launch_call_n IS NOT NULL) > 0;
SELECT 'an event records its relation, the supported one first', (SELECT count(*) FROM traceloom_event_core e WHERE e.relation_n IS NOT COALESCE((SELECT min(r.relation_n) FROM traceloom_runtime_device_relation r WHERE r.event_n = e.event_n AND r.support_state IN ('supported_exact', 'supported_deterministic')), (SELECT min(r.relation_n) FROM traceloom_runtime_device_relation r WHERE r.event_n = e.event_n))) = 0;
SELECT 'every relation of an event is found from it by key', (SELECT count(*) FROM traceloom_runtime_device_relation_core r WHERE r.event_n IS NOT NULL AND r.relation_n NOT IN (SELECT x.relation_n FROM traceloom_event_core e CROSS JOIN traceloom_runtime_device_relation_core x ON x.relation_n = e.relation_n OR (x.event_n = e.event_n AND x.runtime_candidate_count > 1) WHERE e.event_n = r.event_n)) = 0;
SELECT 'relations are call-major and a call records their range', (SELECT count(*) FROM traceloom_runtime_call c WHERE c.relation_count <> (SELECT count(*) FROM traceloom_runtime_device_relation r WHERE r.call_n = c.call_n) OR (c.relation_count > 0 AND (SELECT min(relation_n) || ',' || max(relation_n) FROM traceloom_runtime_device_relation r WHERE r.call_n = c.call_n) <> c.first_relation_n || ',' || (c.first_relation_n + c.relation_count - 1))) = 0;
SELECT 'anchor costs: us from ns', (SELECT count(*) FROM traceloom_anchor_core c JOIN traceloom_anchor a USING (anchor_n) WHERE a.compute_us <> c.compute_ns / 1000.0 OR a.comm_us <> c.comm_ns / 1000.0 OR a.idle_us <> c.idle_ns / 1000.0 OR a.self_us <> (SELECT e.dur_ns FROM traceloom_event_core e WHERE e.event_n = c.event_n) / 1000.0 OR a.aux_us <> c.aux_ns / 1000.0) = 0;
SELECT 'anchor total_us = compute + comm + idle', (SELECT count(*) FROM traceloom_anchor WHERE abs(total_us - (compute_us + comm_us + idle_us)) > 1e-9) = 0;

-- Nodes and occurrences: one integer row each; atoms store neither costs nor paths (their
-- anchor's values and their parent's path plus one step).
SELECT 'occurrences: one view row per core row', (SELECT count(*) FROM traceloom_position_occurrence) = (SELECT count(*) FROM traceloom_position_occurrence_core) AND (SELECT count(*) FROM traceloom_position_occurrence) > 0;
SELECT 'occurrences: atoms under a parent store no path and no cost, others store both', (SELECT count(*) FROM traceloom_position_occurrence_core o JOIN traceloom_node_core n USING (node_n) WHERE (n.node_kind = 1 AND o.parent_n IS NOT NULL) <> (o.occurrence_path IS NULL) OR (n.node_kind = 1) <> (o.compute_ns IS NULL)) = 0;
SELECT 'occurrences: a node''s occurrences are its range, in occurrence_idx order', (SELECT count(*) FROM traceloom_position_occurrence_core o JOIN traceloom_node_core n USING (node_n) WHERE o.occurrence_n <> n.first_occurrence_n + o.occurrence_idx - 1 OR o.occurrence_idx > n.occurrence_count) = 0 AND (SELECT sum(occurrence_count) FROM traceloom_node_core) = (SELECT count(*) FROM traceloom_position_occurrence_core);
SELECT 'occurrences: a child is found from its parent by arithmetic', (SELECT count(*) FROM traceloom_position_occurrence_core c JOIN traceloom_node_core cn ON cn.node_n = c.node_n JOIN traceloom_position_occurrence_core p ON p.occurrence_n = c.parent_n JOIN traceloom_node_core pn ON pn.node_n = p.node_n WHERE c.occurrence_idx <> (p.occurrence_idx - 1) * (CASE WHEN pn.node_kind = 3 THEN pn.repeat_count ELSE 1 END) + c.member_order) = 0;
SELECT 'occurrences: the parent ids name the parent row', (SELECT count(*) FROM traceloom_position_occurrence c JOIN traceloom_position_occurrence p ON p.occurrence_n = c.parent_n WHERE c.parent_occurrence_id IS NOT p.occurrence_id OR c.parent_position_id IS NOT p.position_id OR c.tree_id IS NOT p.tree_id) = 0;
SELECT 'occurrences: a child path extends its parent''s', (SELECT count(*) FROM traceloom_position_occurrence c JOIN traceloom_position_occurrence p ON p.occurrence_n = c.parent_n WHERE substr(c.occurrence_path, 1, length(p.occurrence_path) + 1) IS NOT p.occurrence_path || '/' OR substr(c.rooted_position_path, 1, length(p.rooted_position_path) + 1) IS NOT p.rooted_position_path || '/') = 0;
SELECT 'occurrences: costs in us are the stored ns / 1000 (an atom''s its anchor''s)', (SELECT count(*) FROM traceloom_position_occurrence_core c JOIN traceloom_position_occurrence o USING (occurrence_n) LEFT JOIN traceloom_anchor_core a ON a.anchor_n = c.anchor_first_n AND c.compute_ns IS NULL WHERE o.compute_us <> COALESCE(c.compute_ns, a.compute_ns) / 1000.0 OR o.total_us <> (COALESCE(c.compute_ns, a.compute_ns) + COALESCE(c.comm_ns, a.comm_ns) + COALESCE(c.idle_ns, a.idle_ns)) / 1000.0 OR o.linked_aux_us <> COALESCE(c.linked_aux_ns, a.linked_aux_ns) / 1000.0) = 0;
SELECT 'nodes: a node''s costs are the sum over its occurrences', (SELECT count(*) FROM traceloom_viz_node n WHERE abs(n.total_us - (SELECT sum(o.total_us) FROM traceloom_position_occurrence o WHERE o.node_n = n.node_n)) > 1e-6) = 0;
SELECT 'nodes: every non-root node has a parent in its tree, one row per slot', (SELECT count(*) FROM traceloom_node_core c JOIN traceloom_node_core p ON p.node_n = c.parent_n WHERE p.tree_n <> c.tree_n OR c.slot_ordinal < 1 OR c.slot_ordinal > p.child_count) = 0 AND (SELECT count(*) FROM (SELECT parent_n, slot_ordinal FROM traceloom_node_core WHERE parent_n IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1)) = 0;

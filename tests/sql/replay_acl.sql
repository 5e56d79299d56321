-- Exact ACL graph replay reconstruction on the real-schema Ascend fixtures (recovery.md 7.1).
--
-- exact_hlt: 14 MODEL_EXECUTE launches on stream 3 whose NOTIFY_RECORD modelIds name the
-- captured instances 10,11,12 (prefill head/layer/tail, streams 42-47) then 7,8,9 x 3 and
-- 7,8 (decode). Every launch's body is 2 KERNEL_AIVEC tasks on the instance's 2 streams.
-- Expected: a one-shot leading H+L+T composition (10,11,12), three periodic H+L+T
-- compositions (7,8,9), and an incomplete tail (7,8): 4 replay units, 12 promoted launches,
-- 24 exact members; 2 graph templates (prefill, decode).

SELECT 'exact_hlt mono', traceloom_analyze('fixtures/exact_hlt/mono') LIKE '%70 events%12 exact graph launch(es)%';
SELECT 'launches: 14, all completion-adjacent by record modelId',
  (SELECT count(*) FROM traceloom_graph_launch WHERE match_policy = 'notify_completion_adjacent'
     AND association_policy = 'record_model_id' AND graph_provider = 'aclgraph') = 14;
SELECT 'regions in order: one-shot leading, 3 periodic, incomplete tail',
  (SELECT group_concat(status || '/' || boundary_policy || '/' || observed_launch_count || '/' || coalesce(expected_launch_count, 'NULL'), ',')
     FROM (SELECT * FROM traceloom_aclgraph_reconstruction_region ORDER BY start_ns)) =
  'recognized_complete_pattern/exact_one_shot_leading_composition/3/3,recognized_complete_pattern/exact_periodic_suffix/3/3,recognized_complete_pattern/exact_periodic_suffix/3/3,recognized_complete_pattern/exact_periodic_suffix/3/3,unrecognized_incomplete_tail/exact_periodic_suffix/2/3';
-- The one-shot prefill (instances 10,11,12) is candidate 0 and the decode (7,8,9 x 3 and the
-- 7,8 tail) candidate 1; region_order counts a candidate's regions from 0, and the identity is
-- the captured instance the NOTIFY_RECORD modelId names (the reference's words).
SELECT 'regions: candidate/order/identity',
  (SELECT group_concat(substr(candidate_id, -1) || '/' || region_order || '/' || identity_policy, ',')
     FROM (SELECT * FROM traceloom_aclgraph_reconstruction_region ORDER BY start_ns))
  = '0/0/captured_graph_instance,1/0/captured_graph_instance,1/1/captured_graph_instance,'
    || '1/2/captured_graph_instance,1/3/captured_graph_instance';
-- A member carries its launch's columns (outputs.md section 5): launch k (MODEL_EXECUTE
-- connectionId 1000+k) is slot k mod 3 of its unit (head, layer, tail), so both kernels of it
-- (connectionIds 400+k and 450+k, their own) have member_order k mod 3 and correlation_id
-- 1000+k; launches 0..11 are promoted, 24 members.
SELECT 'members: member_order and correlation_id are the launch''s',
  (SELECT count(*) FROM traceloom_graph_body_member
    WHERE correlation_id = CAST(1000 + graph_launch_occurrence_id AS TEXT)
      AND member_order = graph_launch_occurrence_id % 3) = 24
  AND (SELECT count(*) FROM traceloom_v_node_graph_body_member
        WHERE correlation_id <> launch_correlation_id OR member_order <> node_member_order) = 0;
-- The 12 promoted launches are anchors with no event behind them (a unit's own event stands
-- for them): as tree members their terminal symbol, role and times are absent; the other
-- members' terminal role is their event's.
SELECT 'position members: a launch anchor has no terminal event, role or symbol',
  (SELECT count(*) FROM traceloom_v_position_member m JOIN traceloom_anchor a ON a.anchor_n = m.terminal_anchor_n
    WHERE a.role = 'graph' AND m.event_id IS NULL AND m.terminal_role IS NULL
      AND m.terminal_symbol IS NULL AND m.start_ns IS NULL) = 12
  AND (SELECT count(*) FROM traceloom_v_position_member m JOIN traceloom_event e ON e.event_id = m.event_id
        WHERE m.terminal_role IS NOT e.role) = 0;
-- (host submission order: every aclmdlRIExecuteAsync call of thread 1, 90 .. 1395, comes before
-- its aclrtSynchronizeStreamWithTimeout at 1490, so each launch is in that one host-blocking
-- sync activity, recovery.md 7.1 step 5)
SELECT 'shape is head + layer + tail in host submission order',
  (SELECT count(*) FROM traceloom_aclgraph_reconstruction_region WHERE shape_policy = 'head_repeated_layer_tail'
     AND order_policy = 'host_submission_order') = 5;
SELECT '4 replay units of 3 launches: head, layer, tail',
  (SELECT group_concat(roles, ';') FROM (SELECT replay_unit_id, group_concat(slot_role, ',') AS roles
     FROM (SELECT * FROM traceloom_graph_launch WHERE replay_unit_id IS NOT NULL ORDER BY graph_launch_occurrence_id)
     GROUP BY replay_unit_id ORDER BY min(graph_launch_occurrence_id))) = 'head,layer,tail;head,layer,tail;head,layer,tail;head,layer,tail';
SELECT 'two graph templates: prefill once, decode three times',
  (SELECT group_concat(n, ',') FROM (SELECT count(DISTINCT replay_unit_id) n FROM traceloom_graph_launch
     WHERE replay_unit_id IS NOT NULL GROUP BY graph_template_id ORDER BY n)) = '1,3';
SELECT 'the incomplete tail launches are not promoted and keep no anchor',
  (SELECT count(*) FROM traceloom_graph_launch WHERE replay_unit_id IS NULL AND anchor_id IS NULL
     AND reconstruction_status = 'not_promoted' AND graph_launch_occurrence_id IN (12, 13)) = 2;
SELECT '24 exact members, 2 per launch, one per captured stream',
  (SELECT count(*) FROM traceloom_graph_body_member) = 24
  AND (SELECT count(*) FROM (SELECT launch_id FROM traceloom_graph_body_member GROUP BY launch_id
        HAVING count(*) = 2 AND count(DISTINCT stream_id) = 2 AND count(DISTINCT lane_ordinal) = 2)) = 12;
SELECT 'members are the KERNEL_AIVEC tasks of the launch window, by identity',
  (SELECT count(*) FROM traceloom_graph_body_member m JOIN traceloom_event e ON e.event_id = m.event_id
     WHERE e.task_type = 'KERNEL_AIVEC' AND m.kind = 'compute' AND m.start_ns >= (SELECT start_ns FROM traceloom_graph_launch l WHERE l.launch_id = m.launch_id)
       AND m.end_ns <= (SELECT end_ns FROM traceloom_graph_launch l WHERE l.launch_id = m.launch_id)) = 24;
SELECT 'prefill head body: PrefillHeadOp + AuxGraphOp',
  (SELECT group_concat(identity, ',') FROM (SELECT identity FROM traceloom_graph_body_member
     WHERE launch_id = 'graph-launch-0' ORDER BY member_order)) = 'AuxGraphOp,PrefillHeadOp';
SELECT 'controls: execute, wait and record of all 14 launches',
  (SELECT count(*) FROM traceloom_graph_launch_control) = 42;
SELECT 'launch interval: execute start .. record end (100 .. 120)',
  (SELECT start_ns || '..' || end_ns FROM traceloom_graph_launch WHERE launch_id = 'graph-launch-0') = '100..120';
SELECT 'owned tasks are not anchors; launch anchors replace them',
  (SELECT count(*) FROM traceloom_anchor) = 16
  AND (SELECT group_concat(symbol || '=' || n, ',') FROM (SELECT symbol, count(*) n FROM traceloom_anchor WHERE role = 'graph' GROUP BY 1 ORDER BY 1)) = 'ACLH=4,ACLL=4,ACLT=4';
SELECT 'owned events are marked aux, owned by the exact replay unit',
  (SELECT count(*) FROM traceloom_event WHERE semantic_role_reason = 'owned_by_exact_replay_unit') = 12 * 3 + 24;
SELECT 'protected intervals: one supported interval of 3 launch anchors per unit',
  (SELECT count(*) FROM traceloom_protected_interval p JOIN traceloom_anchor f ON f.anchor_id = p.first_anchor_id
     JOIN traceloom_anchor l ON l.anchor_id = p.last_anchor_id
     WHERE p.support_state = 'supported' AND l.anchor_idx - f.anchor_idx = 2) = 4;
-- Each interval cites its evidence by the source registry's number: the fixture's msprof
-- database has 5 tables (CANN_API, COMMUNICATION_TASK_INFO, COMPUTE_TASK_INFO, STRING_IDS,
-- TASK: 0-4 by name), the capture-stream companion comes next (5), the replay units last (6).
SELECT 'protected intervals: no-cross boundaries citing the replay units (source ref 6)',
  (SELECT count(*) FROM traceloom_protected_interval
    WHERE boundary_policy = 'no_cross' AND evidence_source_ref_id = 6
      AND reason_code = 'exact_replay_anchor_bounds') = 4
  AND (SELECT source_table FROM traceloom_source_ref WHERE db_idx = 0 AND source_ref_id = 6)
      = 'ACLGRAPH_REPLAY_UNIT';
-- Protected boundaries: the 4 units span launches 1-3, 4-6, 7-9 and 10-12 of the fixture's 14
-- (each launch at 100 * k: MODEL_EXECUTE, NOTIFY_WAIT, NOTIFY_RECORD and 2 kernels, done by
-- 100 * k + 20): 100..320, 400..620, 700..920, 1000..1220. Every task of the 12 promoted
-- launches lies inside one (12 * 5 = 60: the 3 control tasks the rules call auxiliary, 36, and
-- the 2 kernels unknown_anchor, 24) and is decided protected_boundary, as are the 4 unit events;
-- the 2 unpromoted tail launches' 10 tasks (1300.., 1400..) keep the rules' decision.
SELECT 'protected intervals carry their unit spans',
  (SELECT group_concat(start_ns || '..' || end_ns, ',') FROM (SELECT * FROM traceloom_protected_interval
     ORDER BY start_ns)) = '100..320,400..620,700..920,1000..1220';
SELECT 'protected decisions: the 60 tasks inside a unit span and the 4 unit events',
  (SELECT group_concat(source_table || ':' || policy_role || ':' || n, ',') FROM (
     SELECT source_table, coalesce(policy_role, '-') AS policy_role, count(*) AS n
     FROM traceloom_evidence_role_decision WHERE final_role = 'protected_boundary'
     GROUP BY 1, 2 ORDER BY 1, 2)) = 'ACLGRAPH_REPLAY_UNIT:-:4,TASK:auxiliary:36,TASK:unknown_anchor:24'
  AND (SELECT count(*) FROM traceloom_evidence_role_decision WHERE final_role = 'protected_boundary'
         AND rule_id = 'system.protected_composite' AND rule_class = 'protected_membership'
         AND effective_structural_participation = 'atomic_boundary' AND support_state = 'supported'
         AND reason_code = 'provider_composite_membership' AND required_fields = 'replay_unit_membership'
         AND matched_rule = 1 AND priority = 0 AND declaration_order = 0
         AND cost_treatment = 'retained_for_attribution') = 64
  AND (SELECT count(*) FROM traceloom_evidence_role_decision WHERE final_role = 'protected_boundary'
         AND source_table = 'ACLGRAPH_REPLAY_UNIT' AND policy_structural_participation = 'not_applicable'
         AND input_provider_scope = 'any' AND available_fields = 'provider_scope,source_domain') = 4
  AND (SELECT count(*) FROM traceloom_evidence_role_decision WHERE final_role <> 'protected_boundary') = 10
  AND (SELECT min(start_ns) FROM traceloom_evidence_role_decision WHERE final_role <> 'protected_boundary') = 1300;
-- The source registry (traceloom_source_ref, the reference's numbering): an Ascend input
-- registers every table of msprof_0.db by name (CANN_API, COMMUNICATION_TASK_INFO,
-- COMPUTE_TASK_INFO, STRING_IDS, TASK), then its capture-stream companion's table, then the
-- analysis's replay units; each decision names its table's number.
SELECT 'source registry: the DB''s tables by name, the companion, the replay units',
  (SELECT group_concat(source_ref_id || ':' || source_table, ',')
     FROM (SELECT * FROM traceloom_source_ref ORDER BY db_idx, source_ref_id)) =
  '0:CANN_API,1:COMMUNICATION_TASK_INFO,2:COMPUTE_TASK_INFO,3:STRING_IDS,4:TASK,5:CaptureStreamInfo,6:ACLGRAPH_REPLAY_UNIT'
  AND (SELECT group_concat(source_table || ':' || source_ref_id || ':' || n, ',') FROM (
         SELECT source_table, source_ref_id, count(*) AS n FROM traceloom_evidence_role_decision
         GROUP BY 1, 2 ORDER BY 1, 2)) = 'ACLGRAPH_REPLAY_UNIT:6:4,TASK:4:70';
-- The 4 unit events are placed in their unit and its protected interval (as the reference)
SELECT 'unit events: normalized event, replay unit, protected interval owned by the unit',
  (SELECT count(*) FROM traceloom_evidence_role_decision d
     JOIN traceloom_evidence_role_placement u ON u.decision_id = d.decision_id
      AND u.placement_order = 1 AND u.placement_kind = 'replay_unit'
     JOIN traceloom_evidence_role_placement p ON p.decision_id = d.decision_id
      AND p.placement_order = 2 AND p.placement_kind = 'protected_interval'
      AND p.owner_id = u.placement_id
     JOIN traceloom_protected_interval i ON i.protected_interval_id = p.placement_id
      AND i.replay_unit_id = u.placement_id AND i.start_ns = d.start_ns AND i.end_ns = d.end_ns
     WHERE d.source_table = 'ACLGRAPH_REPLAY_UNIT') = 4
  AND (SELECT count(*) FROM traceloom_evidence_role_placement p
       JOIN traceloom_evidence_role_decision d ON d.decision_id = p.decision_id
       WHERE d.source_table = 'ACLGRAPH_REPLAY_UNIT') = 12;
SELECT 'cost coverage and summary count the protected boundaries apart, none identity-bearing',
  (SELECT group_concat(input_provider_scope || ':' || event_count || ':' || retained_duration_ns || ':' || identity_duration_ns, ',')
     FROM (SELECT * FROM traceloom_v_evidence_role_cost_coverage WHERE final_role = 'protected_boundary'
           ORDER BY 1, 2)) = 'any:4:880:0,ascend:60:228:0'
  AND (SELECT sum(event_count) FROM traceloom_v_evidence_role_summary WHERE final_role = 'protected_boundary') = 64;
SELECT 'tree: prefill unit, then Repeat x3 of the decode unit (units never split)',
  (SELECT count(*) FROM traceloom_v_position WHERE node_type = 'Repeat' AND repeat_count = 3) = 1
  AND (SELECT count(*) FROM traceloom_v_position WHERE label LIKE 'ReplayUnit T%') = 2;
-- Replay cost map: members run 1 ns each on two parallel streams, same start.
SELECT 'lenses: task_sum 2 ns, busy_union 1 ns, envelope 1 ns per launch',
  (SELECT count(*) FROM traceloom_replay_cost_launch WHERE task_sum_ns = 2 AND busy_union_ns = 1
     AND envelope_ns = 1 AND compute_ns = 2 AND member_count = 2 AND support_status = 'supported') = 12;
SELECT 'cost units: 4 supported', (SELECT count(*) FROM traceloom_replay_cost_unit WHERE support_status = 'supported' AND resolved_launch_count = 3) = 4;
SELECT 'member shares: 500000 ppm each', (SELECT count(*) FROM traceloom_replay_cost_member WHERE scheduled_work_share_ppm = 500000 AND scheduled_work_share_supported = 1) = 24;
SELECT 'aggregates: decode positions over 3 units, prefill over 1',
  (SELECT group_concat(replay_unit_count || 'x' || n, ',') FROM (SELECT replay_unit_count, count(*) n FROM traceloom_replay_cost_aggregate GROUP BY 1 ORDER BY 1)) = '1x6,3x6'
  AND (SELECT count(*) FROM traceloom_replay_cost_aggregate_member) = 24;
-- 4 replay units cut the root into the 2 x 4 + 1 coordinates X1 R1 U1 ... R4 X2 (0 .. 8). The
-- prefill unit's head is the root's first anchor and the units follow back to back, so X1 and
-- U1..U3 hold no anchor (kept, with no range and zero costs); the incomplete tail's 2 launches
-- and whatever else follows the last unit are X2. Together the segments are every anchor once.
SELECT 'partition: X1 R1 U1 .. R4 X2 in order 0..8, the empty ones kept without a range',
  (SELECT group_concat(segment_order || segment_label || ':' || anchor_count, ',')
     FROM (SELECT * FROM traceloom_v_exact_replay_partition ORDER BY segment_order))
    LIKE '0X1:0,1R1:3,2U1:0,3R2:3,4U2:0,5R3:3,6U3:0,7R4:3,8X2:%'
  AND (SELECT count(*) FROM traceloom_v_exact_replay_partition WHERE anchor_count = 0
        AND first_anchor_idx IS NULL AND last_anchor_idx IS NULL AND total_us = 0.0
        AND compute_us = 0.0 AND idle_us = 0.0) = 4
  AND (SELECT group_concat(coordinate_kind || coordinate_index, ',')
         FROM (SELECT * FROM traceloom_v_exact_replay_partition ORDER BY segment_order))
    = 'open_boundary0,replay0,between_replays0,replay1,between_replays1,replay2,between_replays2,replay3,open_boundary1'
  AND (SELECT sum(anchor_count) FROM traceloom_v_exact_replay_partition)
    = (SELECT count(*) FROM traceloom_anchor)
  AND (SELECT round(sum(total_us), 3) FROM traceloom_v_exact_replay_partition)
    = (SELECT round(sum(total_us), 3) FROM traceloom_anchor);
SELECT 'partition status: ordered disjoint exact replays',
  (SELECT reason_code FROM traceloom_v_exact_replay_partition_status) = 'ordered_disjoint_exact_replays';
SELECT 'node view: every member under the atom node of its launch anchor',
  (SELECT count(DISTINCT member_id) FROM traceloom_v_node_graph_body_member) = 24
  AND (SELECT count(*) FROM traceloom_v_node_replay_cost_member) = 24;
-- (4 units of 3 launches, each launch 2 members: 6 a unit; the prefill unit 100 .. 320. A
-- unit encloses every task of its interval on the device: per launch its MODEL_EXECUTE,
-- NOTIFY_WAIT and NOTIFY_RECORD and its 2 kernels, 15 tasks of which 6 kernels)
SELECT 'envelopes: one per replay unit, its event and interval, enclosing its launches'' tasks',
  (SELECT count(*) FROM traceloom_cuda_graph_replay WHERE graph_kind = 'aclgraph_graph_replay'
     AND enclosed_event_count = 15 AND enclosed_kernel_count = 6) = 4
  AND (SELECT count(*) FROM traceloom_cuda_graph_replay g JOIN traceloom_event e ON e.event_id = g.event_id
       WHERE e.source_table = 'ACLGRAPH_REPLAY_UNIT' AND e.start_ns = g.start_ns AND e.end_ns = g.end_ns) = 4
  AND (SELECT start_ns || '-' || end_ns FROM traceloom_cuda_graph_replay WHERE graph_event_idx = 0) = '100-320';
-- The replay ids as the reference writes them (docs/PARITY.md): bare integers from 0 in the
-- launch and cost relations. Units 0 (prefill: launches 0-2) and 1-3 (decode: 3-5, 6-8, 9-11);
-- graph templates in the order their units first run (prefill 0, decode 1); body templates in
-- the order bodies are first seen (the prefill H/L/T bodies 0-2, the decode ones 3-5, which
-- the two trailing unpromoted launches 12-13 replay as 3 and 4); a launch's body is its own
-- ordinal; composition candidates: the one-shot prefill composition 0, the periodic decode
-- composition 1, whose three units share its slots (composition slots 0-2, then 3-5).
SELECT 'replay ids: integers from 0, per unit, template, body, slot and candidate',
  (SELECT group_concat(launch_n || ':' || coalesce(replay_unit_id, '-') || '/'
                       || coalesce(graph_template_id, '-') || '/' || replay_body_template_id || '/'
                       || body_id, ' ')
     FROM (SELECT * FROM traceloom_graph_launch ORDER BY launch_n))
    = '0:0/0/0/0 1:0/0/1/1 2:0/0/2/2 3:1/1/3/3 4:1/1/4/4 5:1/1/5/5 6:2/1/3/6 7:2/1/4/7 8:2/1/5/8 '
      || '9:3/1/3/9 10:3/1/4/10 11:3/1/5/11 12:-/-/3/12 13:-/-/4/13'
  AND (SELECT group_concat(composition_slot_id, ',')
         FROM (SELECT composition_slot_id FROM traceloom_replay_cost_launch ORDER BY launch_n))
    = '0,1,2,3,4,5,3,4,5,3,4,5'
  AND (SELECT group_concat(replay_unit_id || '/' || graph_template_id, ',')
         FROM (SELECT * FROM traceloom_replay_cost_unit ORDER BY replay_unit_id)) = '0/0,1/1,2/1,3/1'
  AND (SELECT group_concat(DISTINCT typeof(replay_unit_id) || typeof(graph_template_id)
                           || typeof(replay_body_template_id) || typeof(body_id))
         FROM traceloom_graph_body_member) = 'integerintegerintegerinteger'
  AND (SELECT group_concat(candidate_id, ',')
         FROM (SELECT candidate_id FROM traceloom_aclgraph_reconstruction_region ORDER BY start_ns))
    = 'aclgraph-composition-candidate-0,aclgraph-composition-candidate-1,'
      || 'aclgraph-composition-candidate-1,aclgraph-composition-candidate-1,'
      || 'aclgraph-composition-candidate-1'
  -- ... and as text where the reference names a unit so: protected intervals, unit anchors
  AND (SELECT group_concat(replay_unit_id, ',')
         FROM (SELECT replay_unit_id FROM traceloom_protected_interval ORDER BY replay_unit_n))
    = 'replay-unit-0,replay-unit-1,replay-unit-2,replay-unit-3'
  AND (SELECT count(*) FROM traceloom_replay_unit_anchor WHERE replay_unit_id = 'replay-unit-1') = 3;
-- The unit envelopes: a unit's graph is its template, its execution the unit; it encloses
-- every task of its interval on the device but its own event (per launch MODEL_EXECUTE 10 ns,
-- NOTIFY_WAIT 5 ns, its 2 kernels 1 ns each and NOTIFY_RECORD 2 ns: 5 tasks, 19 ns; 3 launches:
-- 15 tasks, 57 ns, of which the 6 kernels, 6 ns, are device work); envelope rows are
-- numbered 1.. over all envelopes (unit 1's from 16).
SELECT 'replay envelopes: ids and what each unit encloses',
  (SELECT group_concat(graph_event_idx || ':' || graph_id || '/' || graph_exec_id || '/'
                       || enclosed_event_count || '/' || enclosed_event_us || '/'
                       || enclosed_kernel_count || '/' || enclosed_kernel_us, ' ')
     FROM (SELECT * FROM traceloom_cuda_graph_replay ORDER BY graph_event_idx))
    = '0:aclgraph-template-0/aclgraph-replay-unit-0/15/0.057/6/0.006 '
      || '1:aclgraph-template-1/aclgraph-replay-unit-1/15/0.057/6/0.006 '
      || '2:aclgraph-template-1/aclgraph-replay-unit-2/15/0.057/6/0.006 '
      || '3:aclgraph-template-1/aclgraph-replay-unit-3/15/0.057/6/0.006'
  AND (SELECT min(envelope_idx) || '-' || max(envelope_idx) || ' ' || min(envelope_id)
         FROM traceloom_cuda_graph_envelope WHERE graph_event_idx = 1)
    = '16-30 aclgraph-graph-envelope-16'
  AND (SELECT DISTINCT graph_step_idx FROM traceloom_cuda_graph_envelope WHERE graph_event_idx = 0)
    = (SELECT event_n FROM traceloom_cuda_graph_replay WHERE graph_event_idx = 0)
  AND (SELECT json_extract(raw_json, '$.graph_template_id') || '/'
              || json_extract(raw_json, '$.capture_group_size') || '/'
              || json_extract(raw_json, '$.replay_composition_region_id') || '/'
              || json_extract(raw_json, '$.launch_member_count')
         FROM traceloom_cuda_graph_replay WHERE graph_event_idx = 2) = '1/3/2/3';
-- include: structure_invariants.inc

-- The split layout reconstructs the same composition.
SELECT 'exact_hlt split', traceloom_analyze('fixtures/exact_hlt/split') LIKE '%12 exact graph launch(es)%';
SELECT 'split: same regions and 24 members',
  (SELECT group_concat(status, ',') FROM (SELECT status FROM traceloom_aclgraph_reconstruction_region ORDER BY start_ns))
   = 'recognized_complete_pattern,recognized_complete_pattern,recognized_complete_pattern,recognized_complete_pattern,unrecognized_incomplete_tail'
  AND (SELECT count(*) FROM traceloom_graph_body_member) = 24;

-- Without host API rows the composition follows device execution order.
SELECT 'device order', traceloom_analyze('fixtures/exact_hlt/mut_device_order_without_host_api') LIKE '%12 exact graph launch(es)%';
SELECT 'device order: all regions say so', (SELECT count(*) FROM traceloom_aclgraph_reconstruction_region WHERE order_policy = 'device_execution_order') = 5;

-- Missing identity schemas: body tasks cannot be named, so nothing is exact. Every launch
-- lacks body capability (recovery.md 7.1 step 3), a launch's own gate before composition: all
-- 5 regions of the 14 launches say so, the two-launch tail included (as the reference has it),
-- and the prefill prefix is no one-shot composition, which needs full capability (step 5):
-- leading launches (0 launches of the pattern expected) that lack capability. Without body
-- capability no region has a shape: instances 10,11,12 then 7,8,9 would read as head + layer +
-- tail, but the bodies that would confirm the roles cannot be read.
SELECT 'incomplete compute schema', traceloom_analyze('fixtures/exact_hlt/mut_incomplete_compute_schema') LIKE '%0 exact graph launch(es)%';
SELECT 'incomplete compute schema: all 5 regions lack body capability, the tail included',
  (SELECT group_concat(status || '=' || n, ',') FROM (SELECT status, count(*) n FROM traceloom_aclgraph_reconstruction_region GROUP BY 1 ORDER BY 1))
   = 'unrecognized_missing_body_capability=5'
  AND (SELECT group_concat(observed_launch_count || '/' || COALESCE(expected_launch_count, 'none') || '/' || boundary_policy, ',')
       FROM (SELECT * FROM traceloom_aclgraph_reconstruction_region ORDER BY start_ns))
   = '3/0/exact_periodic_suffix,3/3/exact_periodic_suffix,3/3/exact_periodic_suffix,3/3/exact_periodic_suffix,2/3/exact_periodic_suffix'
  AND (SELECT group_concat(DISTINCT shape_policy || '/' || candidate_id) FROM traceloom_aclgraph_reconstruction_region)
   = 'unclassified/aclgraph-composition-candidate-0'
  AND (SELECT count(*) FROM traceloom_graph_body_member) = 0 AND (SELECT count(*) FROM traceloom_protected_interval) = 0;
SELECT 'incomplete compute schema: body tasks stay eager anchors', (SELECT count(*) FROM traceloom_anchor WHERE role = 'graph') = 0;
SELECT 'incomplete split task info', traceloom_analyze('fixtures/exact_hlt/mut_incomplete_split_task_info') LIKE '%0 exact graph launch(es)%';
SELECT 'incomplete split task info: missing body capability', (SELECT count(*) FROM traceloom_aclgraph_reconstruction_region WHERE status = 'unrecognized_missing_body_capability') = 5;
SELECT 'missing communication schema (unnamed SDMA tasks)', traceloom_analyze('fixtures/exact_hlt/mut_missing_communication_schema') LIKE '%0 exact graph launch(es)%';
SELECT 'missing communication schema: missing body capability, with a reason',
  (SELECT count(*) FROM traceloom_aclgraph_reconstruction_region WHERE status = 'unrecognized_missing_body_capability'
     AND json_extract(raw_json, '$.detail') LIKE '%no compute or communication identity%') = 5;
SELECT 'cost issue: no replay units', (SELECT code FROM traceloom_replay_cost_issue) = 'no_replay_units';

-- body_mismatch: 7 launches of instance 7, each with one Add task: a periodic composition of
-- period 1, so 7 units of one generic slot (ACLG; the single_graph shape and ACLGraph are the
-- direct single-graph path's, recovery.md 7.1 step 5).
SELECT 'body_mismatch base', traceloom_analyze('fixtures/body_mismatch/mono') LIKE '%7 exact graph launch(es)%';
-- (its 7 aclmdlRIExecuteAsync calls have no synchronization after them: no host-blocking sync
-- activity, so the launches compose in device execution order, recovery.md 7.1 step 5)
SELECT 'base: composed in device order (no host synchronization)',
  (SELECT group_concat(DISTINCT order_policy) FROM traceloom_aclgraph_reconstruction_region) = 'device_execution_order'
  AND (SELECT count(*) FROM traceloom_graph_launch WHERE host_call_id IS NOT NULL) = 7;
SELECT 'base: 7 one-slot periodic regions and units',
  (SELECT count(*) FROM traceloom_aclgraph_reconstruction_region WHERE status = 'recognized_complete_pattern'
     AND boundary_policy = 'exact_periodic_suffix' AND shape_policy = 'unclassified' AND expected_launch_count = 1) = 7
  AND (SELECT count(*) FROM traceloom_anchor WHERE symbol = 'ACLG') = 7
  AND (SELECT count(*) FROM traceloom_replay_cost_launch WHERE slot_role = 'generic_slot') = 7;
SELECT 'base: 7 equal units fold into one Repeat x7', (SELECT count(*) FROM traceloom_v_position WHERE node_type = 'Repeat' AND repeat_count = 7) = 1;
-- Every unit is its own ReplayUnit Seq, also a unit of one launch: Rep x7 > Seq > Atom ACLG.
SELECT 'base: the repeat holds one ReplayUnit Seq holding the ACLG atom',
  (SELECT group_concat(node_type || ':' || label || ':' || COALESCE(category, ''), ' > ')
     FROM (SELECT node_type, label, category FROM traceloom_viz_node ORDER BY depth))
  = 'Seq:Seq: > Repeat:Rep x7: > Seq:ReplayUnit T1:graph_unit > Atom:ACLG:graph_template';
-- The mutation gives the 4th launch a Sub body: instance 7 captured Add (its first launch's
-- body), so the 4th launch alone is a mismatch and the other six are promoted; the Sub task
-- stays an eager anchor between two Rep x3 of the unit.
SELECT 'body sequence mismatch', traceloom_analyze('fixtures/body_mismatch/mut_body_sequence_mismatch') LIKE '%6 exact graph launch(es)%';
SELECT 'mismatch: only the odd launch and its region report it',
  (SELECT group_concat(status, ' ') FROM (SELECT status FROM traceloom_aclgraph_reconstruction_region ORDER BY start_ns))
    = 'recognized_complete_pattern recognized_complete_pattern recognized_complete_pattern unrecognized_body_mismatch recognized_complete_pattern recognized_complete_pattern recognized_complete_pattern'
  AND (SELECT group_concat(correlation_id) FROM traceloom_graph_launch WHERE reconstruction_status = 'body_template_mismatch') = '1003'
  AND (SELECT count(*) FROM traceloom_graph_body_member) = 6;
SELECT 'mismatch: the odd body keeps its member number, so the later members are numbered as in the reference',
  (SELECT group_concat(member_id, ' ') FROM (SELECT member_id FROM traceloom_graph_body_member ORDER BY start_ns))
    = 'graph-body-member-0 graph-body-member-1 graph-body-member-2 graph-body-member-4 graph-body-member-5 graph-body-member-6';
SELECT 'mismatch: Rep x3 unit, the eager Sub, Rep x3 unit',
  (SELECT group_concat(label, ' ') FROM (SELECT label FROM traceloom_viz_node WHERE depth = 1 ORDER BY local_node_id))
    = 'Rep x3 Sub Rep x3'
  AND (SELECT count(*) FROM traceloom_anchor WHERE symbol = 'ACLG') = 6;

-- aclgraph_smoke: MODEL_EXECUTE launches without NOTIFY_WAIT / NOTIFY_RECORD.
SELECT 'aclgraph_smoke', traceloom_analyze('fixtures/aclgraph_smoke/mono') LIKE '%0 exact graph launch(es)%';
SELECT 'smoke: 4 unmatched launches in one missing-completion region',
  (SELECT count(*) FROM traceloom_graph_launch WHERE match_policy = 'unmatched' AND reconstruction_status = 'missing_completion_evidence') = 4
  AND (SELECT status || '/' || observed_launch_count FROM traceloom_aclgraph_reconstruction_region) = 'unrecognized_missing_completion_evidence/4';
SELECT 'current schema (stream_id)', traceloom_analyze('fixtures/aclgraph_smoke/mut_current_schema') LIKE '%0 exact graph launch(es)%';
SELECT 'current schema: same status', (SELECT status FROM traceloom_aclgraph_reconstruction_region) = 'unrecognized_missing_completion_evidence';
SELECT 'single slot', traceloom_analyze('fixtures/aclgraph_smoke/mut_single_slot') LIKE '%0 exact graph launch(es)%';
SELECT 'single slot: same status', (SELECT status FROM traceloom_aclgraph_reconstruction_region) = 'unrecognized_missing_completion_evidence';

-- torch-npu capture directories: the companion lives in the one sibling PROF_* container.
SELECT 'torch-npu single sibling', traceloom_analyze('fixtures/torchnpu/single') LIKE '%12 exact graph launch(es)%';
SELECT 'torch-npu no sibling', traceloom_analyze('fixtures/torchnpu/none') LIKE '%0 exact graph launch(es)%';
SELECT 'no sibling: missing body capability with the msprof advice',
  (SELECT count(*) FROM traceloom_aclgraph_reconstruction_region WHERE status = 'unrecognized_missing_body_capability'
     AND json_extract(raw_json, '$.detail') LIKE '%msprof --parse=on%') = 5;
SELECT 'torch-npu two siblings', traceloom_analyze('fixtures/torchnpu/ambiguous') LIKE '%0 exact graph launch(es)%';
SELECT 'two siblings: refused explicitly',
  (SELECT count(*) FROM traceloom_aclgraph_reconstruction_region WHERE status = 'unrecognized_missing_body_capability'
     AND json_extract(raw_json, '$.detail') LIKE '%2 sibling PROF_* containers%') = 5;

-- Non-graph profiles still get the (empty) replay tables.
SELECT 'minimal smoke', traceloom_analyze('fixtures/minimal_smoke/mono') LIKE '%0 exact graph launch(es)%';
SELECT 'replay tables exist and are empty',
  (SELECT count(*) FROM traceloom_graph_launch) + (SELECT count(*) FROM traceloom_graph_body_member)
  + (SELECT count(*) FROM traceloom_replay_cost_launch) + (SELECT count(*) FROM traceloom_aclgraph_reconstruction_region) = 0;
SELECT 'partition status: no exact replays', (SELECT group_concat(DISTINCT reason_code) FROM traceloom_v_exact_replay_partition_status) = 'no_exact_replays';

-- {"graph_replay": false} leaves launches and their members as eager work: no launch is
-- reconstructed, no event is owned by a replay unit, and the KERNEL_AIVEC body tasks of all
-- 14 launches (2 each) are anchors of their own (exact_hlt mono has 70 reader events).
SELECT 'exact_hlt without graph replay', traceloom_analyze('fixtures/exact_hlt/mono', '{"graph_replay": false}') LIKE '%70 events%0 exact graph launch(es)%';
SELECT 'no launch rows, no launch events',
  (SELECT count(*) FROM traceloom_graph_launch) = 0 AND (SELECT count(*) FROM traceloom_event) = 70
  AND (SELECT value FROM traceloom_metadata WHERE key = 'event_count') = '70'
  AND (SELECT value FROM traceloom_metadata WHERE key = 'graph_launch_event_count') = '0';
SELECT 'no event is owned by a replay unit',
  (SELECT count(*) FROM traceloom_event WHERE semantic_role_reason = 'owned_by_exact_replay_unit') = 0;
SELECT 'the member tasks are anchors',
  (SELECT count(*) FROM traceloom_event WHERE task_type = 'KERNEL_AIVEC' AND semantic_role = 'anchor') = 14 * 2;

-- An input without any graph launch says so in one issue (the reference's row), on its lowest
-- device; a device whose launches were all left unpromoted has its own (above). With the
-- reconstruction switched off nothing was looked for, so there is no issue.
SELECT 'no launches', traceloom_analyze('fixtures/minimal_smoke/mono') LIKE '%3 events%';
-- (an issue of no replay unit names unit -1, as the reference writes it)
SELECT 'no launches: one input-level issue',
  coalesce((SELECT group_concat(db_idx || '/' || device_id || '/' || code || '/' || coalesce(replay_unit_id, 'null') || '/' || coalesce(launch_id, 'null') || '/' || detail, ';')
     FROM traceloom_replay_cost_issue), '')
  = '0/' || (SELECT min(device_id) FROM traceloom_event) || '/no_replay_units/-1/null/input contains no exact replay-unit occurrences';
SELECT 'no launches: nothing else about replays', (SELECT count(*) FROM traceloom_graph_launch) = 0 AND (SELECT count(*) FROM traceloom_replay_cost_unit) = 0;
SELECT 'reconstruction off', traceloom_analyze('fixtures/minimal_smoke/mono', '{"graph_replay": false}') LIKE '%3 events%';
SELECT 'reconstruction off: no issue', (SELECT count(*) FROM traceloom_replay_cost_issue) = 0;
SELECT 'launches, some promoted', traceloom_analyze('fixtures/exact_hlt/mono') LIKE '%70 events%';
SELECT 'launches, some promoted: no input-level issue', (SELECT count(*) FROM traceloom_replay_cost_issue WHERE detail LIKE 'input contains no%') = 0;

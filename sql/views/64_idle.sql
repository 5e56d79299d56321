-- Idle evidence (Ascend E1 to E4; ext/idle, docs/REPORTS.md "Idle evidence"): the public
-- relations over the integer cores of sql/schema/61_idle.sql. The run id and collection status
-- come from traceloom_run_metadata by db_idx (one run per Ascend input), names of codes from
-- traceloom_idle_name (written from ext/idle's tables) except in the two relations the audit
-- reads row by row in windows (explanations, stream states) and a link's relation (compared
-- per link): there a CASE over the same enums (idle_int.h, in order) costs no lookup per row,
-- and tests/python/test_idle_evidence.py checks each CASE against the table. The contract, rule and
-- attribution versions are the constants of ext/idle (TL_IDLE_CONTRACT, the semantic rules'
-- version, TL_IDLE_ATTRIBUTION; tests/sql/idle_views.sql checks them against the run's), as
-- literals: a literal costs nothing per row, a lookup does (the audit reads `s.*` of 2M
-- stream states). Names come from the codes
-- (the enums of ext/idle/idle_int.h, in order); the text ids are the cores', so a join on an
-- id (interval_id, state_id, idle_explanation_id) is a lookup of the core's primary key, on a
-- link's owner_id one in the index the idle stage builds; a link's trace_event_id, only ever
-- probed with, is computed from its event_n. An id computed here is CAST to TEXT: a join on an expression without affinity cannot use an
-- automatic index on a TEXT column.
-- A row's run id, collection status and source kind: when the analysis holds exactly one run
-- (one Ascend input, the usual case) and the row is that run's, the run's own columns through
-- uncorrelated subqueries, which SQLite evaluates once per statement; otherwise the lookup by
-- db_idx. Same values either way. The audit's windows and GROUP BYs compute the run id two or
-- three times per row over millions of rows (2M stream states, 2.5M links), and a seek per
-- evaluation was 15% of them (idle26, bench/RESULTS.md). Under SQLite 3.40 nothing cheaper
-- orders by the run id: a join in these views would stop their flattening under the audit's
-- LEFT JOINs (materialized with an automatic index), and a constant ORDER BY term still sorts.

-- @surface traceloom_device_interval | one productive or idle interval of a device | The exact partition of each device's analysis span into productive_active (the union of productive tasks and communication ops) and visible_productive_idle | SELECT interval_kind, count(*), sum(duration_ns) FROM traceloom_device_interval GROUP BY 1
CREATE VIEW traceloom_device_interval AS
SELECT d.interval_id,
       CASE WHEN d.db_idx = (SELECT CASE count(*) WHEN 1 THEN max(db_idx) END FROM traceloom_run_metadata)
         THEN (SELECT run_id FROM traceloom_run_metadata)
         ELSE (SELECT r.run_id FROM traceloom_run_metadata r WHERE r.db_idx = d.db_idx) END AS run_id,
       d.db_idx, d.device_id, d.interval_order, d.start_ns, d.start_ns + d.duration_ns AS end_ns,
       d.duration_ns, d.duration_ns / 1000.0 AS duration_us,
       CASE d.idle WHEN 0 THEN 'productive_active' ELSE 'visible_productive_idle' END AS interval_kind,
       d.source_count, 'device' AS clock_domain,
       'idle-evidence-contract-v4.4' AS contract_version,
       'idle-evidence-semantic-v1' AS semantic_rules_version,
       'host_device_projection_v2' AS attribution_rule_version
FROM traceloom_device_interval_core d;

-- @surface traceloom_stream_state | one observed state of one stream | Per stream, the mutually exclusive partition of the span into running_<role>, unknown, empty_observed and ambiguous_overlap states, with the observed stream universe | SELECT state, count(*), sum(duration_ns) FROM traceloom_stream_state GROUP BY 1
CREATE VIEW traceloom_stream_state AS
SELECT s.state_id,
       CASE WHEN s.db_idx = (SELECT CASE count(*) WHEN 1 THEN max(db_idx) END FROM traceloom_run_metadata)
         THEN (SELECT run_id FROM traceloom_run_metadata)
         ELSE (SELECT r.run_id FROM traceloom_run_metadata r WHERE r.db_idx = s.db_idx) END AS run_id,
       s.db_idx, s.device_id, s.stream_id, s.state_order, s.start_ns, s.start_ns + s.duration_ns AS end_ns,
       s.duration_ns, s.duration_ns / 1000.0 AS duration_us,
       CASE s.state WHEN 0 THEN 'running_compute' WHEN 1 THEN 'running_comm'
         WHEN 2 THEN 'running_data_move' WHEN 3 THEN 'running_wait'
         WHEN 4 THEN 'running_capture_control' WHEN 5 THEN 'running_record'
         WHEN 6 THEN 'running_runtime_control' WHEN 7 THEN 'unknown' WHEN 8 THEN 'empty_observed'
         ELSE 'ambiguous_overlap' END AS state,
       s.source_count, 'observed' AS stream_universe_kind, s.stream_count AS stream_universe_size,
       s.stream_count AS observed_stream_count, s.scan_complete AS observed_universe_scan_complete,
       CASE WHEN s.db_idx = (SELECT CASE count(*) WHEN 1 THEN max(db_idx) END FROM traceloom_run_metadata)
         THEN (SELECT collection_status FROM traceloom_run_metadata)
         ELSE (SELECT r.collection_status FROM traceloom_run_metadata r WHERE r.db_idx = s.db_idx) END AS collection_status,
       'device' AS clock_domain,
       'idle-evidence-contract-v4.4' AS contract_version,
       'idle-evidence-semantic-v1' AS semantic_rules_version,
       'host_device_projection_v2' AS attribution_rule_version
FROM traceloom_stream_state_core s;

-- @surface traceloom_idle_explanation | one explained slice of a visible idle gap | Each gap split into slices explained by priority (blocked_by_visible_wait, capture_control_present, runtime_control_present, queued_visible_task_delay, host_sync_api_present, no_observed_device_work, unattributed_visible_idle) with evidence level, relation and clock alignment | SELECT category, evidence_level, count(*), sum(duration_ns) FROM traceloom_idle_explanation GROUP BY 1, 2
CREATE VIEW traceloom_idle_explanation AS
SELECT x.idle_explanation_id,
       CASE WHEN x.db_idx = (SELECT CASE count(*) WHEN 1 THEN max(db_idx) END FROM traceloom_run_metadata)
         THEN (SELECT run_id FROM traceloom_run_metadata)
         ELSE (SELECT r.run_id FROM traceloom_run_metadata r WHERE r.db_idx = x.db_idx) END AS run_id,
       x.gap_interval_id,
       x.db_idx, x.device_id, x.explanation_order, x.start_ns, x.start_ns + x.duration_ns AS end_ns,
       x.duration_ns, x.duration_ns / 1000.0 AS duration_us,
       CASE x.category WHEN 0 THEN 'blocked_by_visible_wait' WHEN 1 THEN 'capture_control_present'
         WHEN 2 THEN 'runtime_control_present' WHEN 3 THEN 'queued_visible_task_delay'
         WHEN 4 THEN 'host_sync_api_present' WHEN 5 THEN 'no_observed_device_work'
         ELSE 'unattributed_visible_idle' END AS category,
       CASE x.level WHEN 0 THEN 'direct' WHEN 1 THEN 'correlated' ELSE 'none' END AS evidence_level,
       CASE x.relation WHEN 0 THEN 'device_event_coverage' WHEN 1 THEN 'complete_absence_observation'
         WHEN 2 THEN 'exact_connection_id' WHEN 3 THEN 'temporal_overlap' ELSE 'none' END
         AS evidence_relation,
       CASE x.alignment WHEN 0 THEN 'not_required' WHEN 1 THEN 'calibrated' WHEN 2 THEN 'synthetic_only'
         WHEN 3 THEN 'uncalibrated' ELSE 'invalid' END AS alignment_status,
       CASE WHEN x.db_idx = (SELECT CASE count(*) WHEN 1 THEN max(db_idx) END FROM traceloom_run_metadata)
         THEN (SELECT collection_status FROM traceloom_run_metadata)
         ELSE (SELECT r.collection_status FROM traceloom_run_metadata r WHERE r.db_idx = x.db_idx) END AS collection_status,
       CASE x.category
         WHEN 0 THEN 'profiler-visible wait task covers this interval'
         WHEN 1 THEN 'capture/control task covers this interval'
         WHEN 2 THEN 'record or runtime-control task covers this interval'
         WHEN 3 THEN 'validated unique enqueue-to-visible-task robust delay covers this interval'
         WHEN 4 THEN 'calibrated host-sync robust-overlap interval covers this interval'
         WHEN 5 THEN 'all observed streams are empty and collection completeness is attested'
         ELSE 'no stronger explanation evidence covers this interval' END AS reason,
       x.source_count, 'device' AS clock_domain,
       'idle-evidence-contract-v4.4' AS contract_version,
       'idle-evidence-semantic-v1' AS semantic_rules_version,
       'host_device_projection_v2' AS attribution_rule_version
FROM traceloom_idle_explanation_core x;

-- @surface traceloom_evidence_link | one source row cited by an interval, state, explanation, candidate or clock model | The lineage of every idle-evidence claim: the profiler row (table and rowid, or the marker id), the relation and level, and the overlap extent for temporal relations | SELECT owner_kind, relation, count(*) FROM traceloom_evidence_link GROUP BY 1, 2
CREATE VIEW traceloom_evidence_link AS
SELECT l.owner_kind, l.owner_id, l.evidence_ordinal,
       CASE l.owner_kind_n WHEN 4 THEN 'clock_marker_tsv'
         ELSE CASE WHEN l.db_idx = (SELECT CASE count(*) WHEN 1 THEN max(db_idx) END FROM traceloom_run_metadata)
         THEN (SELECT source_kind FROM traceloom_run_metadata)
         ELSE (SELECT r.source_kind FROM traceloom_run_metadata r WHERE r.db_idx = l.db_idx) END END AS source_kind,
       COALESCE(l.source_table,
                (SELECT s.source_table FROM traceloom_event_core c
                   JOIN traceloom_event_shape s ON s.shape_id = c.shape_id
                  WHERE c.event_n = l.event_n)) AS source_table,
       COALESCE(l.source_key,
                (SELECT CAST(COALESCE((SELECT so.source_rowid_offset FROM traceloom_event_shape so WHERE so.shape_id = c.shape_id) + c.event_n, (SELECT sk.source_key FROM traceloom_event_source_key sk WHERE sk.event_n = c.event_n)) AS TEXT) FROM traceloom_event_core c
                  WHERE c.event_n = l.event_n)) AS source_key,
       CASE l.relation WHEN 0 THEN 'device_event_coverage' WHEN 1 THEN 'complete_absence_observation'
         WHEN 2 THEN 'exact_connection_id' WHEN 3 THEN 'temporal_overlap' ELSE 'none' END AS relation,
       (SELECT u.name FROM traceloom_idle_name u WHERE u.kind = 'level' AND u.code = l.level)
         AS evidence_level,
       l.overlap_start_ns, l.overlap_end_ns, l.stream_id,
       (SELECT u.name FROM traceloom_idle_name u WHERE u.kind = 'state' AND u.code = l.state) AS state,
       CAST(CASE WHEN l.event_n IS NULL THEN '' ELSE 'event-' || l.event_n END AS TEXT) AS trace_event_id,
       (SELECT u.name FROM traceloom_idle_name u WHERE u.kind = 'rule' AND u.code = l.rule_n)
         AS matched_rule_id
FROM traceloom_evidence_link_core l;

-- @surface traceloom_anchor_idle_explanation | one (anchor, category, evidence level) | Explained idle inside each anchor's prelude window (the uncovered time before it); per level, never additive with other levels | SELECT category, count(*), sum(duration_ns) FROM traceloom_anchor_idle_explanation GROUP BY 1
CREATE VIEW traceloom_anchor_idle_explanation AS
SELECT CAST('anchor-' || i.anchor_n AS TEXT) AS anchor_id,
       CASE WHEN i.db_idx = (SELECT CASE count(*) WHEN 1 THEN max(db_idx) END FROM traceloom_run_metadata)
         THEN (SELECT run_id FROM traceloom_run_metadata)
         ELSE (SELECT r.run_id FROM traceloom_run_metadata r WHERE r.db_idx = i.db_idx) END AS run_id,
       i.db_idx, i.device_id, i.anchor_idx,
       (SELECT u.name FROM traceloom_idle_name u WHERE u.kind = 'category' AND u.code = i.category)
         AS category,
       (SELECT u.name FROM traceloom_idle_name u WHERE u.kind = 'level' AND u.code = i.level)
         AS evidence_level,
       i.slice_count, i.duration_ns, i.duration_ns / 1000.0 AS duration_us
FROM traceloom_anchor_idle_explanation_core i;

-- Idle evidence at the tree's nodes (docs/REPORTS.md "Idle evidence"): the explained idle of
-- the anchors each node covers. Levels are not additive: a node's figure already contains its
-- descendants' (a root holds every anchor's). The sums are the idle stage's
-- (traceloom_node_idle_explanation_core: a join of occurrences to anchors reads anchors x
-- depth rows), named here.

-- @surface traceloom_node_idle_explanation | one (tree node, category, evidence level) | Explained idle in the prelude windows of the anchors a node covers, summed per category and level (nested nodes repeat their descendants' time) | SELECT node_id, category, slice_count, duration_ns FROM traceloom_node_idle_explanation ORDER BY duration_ns DESC LIMIT 20
CREATE VIEW traceloom_node_idle_explanation AS
SELECT (SELECT n.node_id FROM traceloom_node_core n WHERE n.node_n = g.node_n) AS node_id,
       CASE WHEN g.db_idx = (SELECT CASE count(*) WHEN 1 THEN max(db_idx) END FROM traceloom_run_metadata)
         THEN (SELECT run_id FROM traceloom_run_metadata)
         ELSE (SELECT r.run_id FROM traceloom_run_metadata r WHERE r.db_idx = g.db_idx) END AS run_id,
       g.db_idx, g.device_id, 'native_report_tree' AS view_name,
       (SELECT u.name FROM traceloom_idle_name u WHERE u.kind = 'category' AND u.code = g.category)
         AS category,
       (SELECT u.name FROM traceloom_idle_name u WHERE u.kind = 'level' AND u.code = g.level)
         AS evidence_level,
       g.slice_count, g.duration_ns, g.duration_ns / 1000.0 AS duration_us
FROM traceloom_node_idle_explanation_core g;

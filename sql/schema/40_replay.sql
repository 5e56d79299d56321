-- Exact graph replays (outputs.md section 5, recovery.md section 7). Tables are always
-- created; rows exist only where replay evidence exists. Membership comes from provider
-- identities (ACL graph controls and capture streams, CUDA correlationId + graphNodeId),
-- never from time containment. Task-sum, busy-union and envelope are separate lenses.

-- @surface traceloom_protected_interval | one exact replay unit protected from splitting | Spans of launch anchors that repeat recovery keeps whole (kind graph_replay_unit) | SELECT kind, support_state, count(*) FROM traceloom_protected_interval GROUP BY 1, 2
CREATE TABLE traceloom_protected_interval(
  protected_interval_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  kind TEXT NOT NULL,              -- graph_replay_unit
  replay_unit_id TEXT,              -- replay-unit-<n>, as the reference names it here
  support_state TEXT NOT NULL,     -- supported | split_by_eager_work (each launch atomic)
  first_anchor_id TEXT,
  last_anchor_id TEXT,
  first_anchor_n INTEGER,          -- the same anchors as integers (traceloom_anchor_core)
  last_anchor_n INTEGER,
  start_ns INTEGER NOT NULL,       -- the unit's span: its event's interval (first launch's start
  end_ns INTEGER NOT NULL,         -- to last launch's end); every event wholly inside it on the
                                   -- device is a protected boundary of the unit
  replay_unit_n INTEGER NOT NULL,  -- the unit as traceloom_graph_launch.replay_unit_id names it
  -- the source registry's number of the replay units' table of the input (traceloom_source_ref:
  -- ACLGRAPH_REPLAY_UNIT / CUDA_GRAPH_REPLAY_UNIT, the analysis's own table, numbered last),
  -- the evidence the interval rests on; set with the registry (sql/views/20_classify.sql)
  evidence_source_ref_id INTEGER,
  -- recovery keeps a unit whole: repeat recovery never cuts through its span
  boundary_policy TEXT GENERATED ALWAYS AS
    (CASE kind WHEN 'graph_replay_unit' THEN 'no_cross' END) VIRTUAL,
  -- why the state holds: the span's bounds are the anchors of one exact replay unit, or eager
  -- anchors sit between its launch anchors (each launch then an atomic token of its own)
  reason_code TEXT GENERATED ALWAYS AS
    (CASE support_state WHEN 'supported' THEN 'exact_replay_anchor_bounds'
                        WHEN 'split_by_eager_work' THEN 'eager_anchors_between_launches' END)
    VIRTUAL
);

-- @surface traceloom_aclgraph_reconstruction_region | one stretch of ACL graph launches and what the evidence supports | recognized_complete_pattern regions become replay units; unrecognized_* rows are auditable negative results | SELECT device_id, status, count(*), sum(observed_launch_count) FROM traceloom_aclgraph_reconstruction_region GROUP BY 1, 2
CREATE TABLE traceloom_aclgraph_reconstruction_region(
  region_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  graph_provider TEXT NOT NULL,    -- aclgraph
  candidate_id TEXT,               -- the periodic composition candidate, NULL when none
  region_order INTEGER NOT NULL,   -- 0-based per candidate (per (db_idx, device_id) without one)
  status TEXT NOT NULL,
  boundary_policy TEXT NOT NULL,   -- exact_periodic_suffix, exact_one_shot_leading_composition,
                                   -- direct_observed_graph_launch, launch_segment
  order_policy TEXT NOT NULL,      -- host_submission_order | device_execution_order
  identity_policy TEXT NOT NULL,   -- captured_graph_instance | graph_connection
  shape_policy TEXT NOT NULL,      -- head_repeated_layer_tail | single_graph | unclassified
  first_launch_occurrence_id INTEGER,
  last_launch_occurrence_id INTEGER,
  observed_launch_count INTEGER NOT NULL,
  expected_launch_count INTEGER,   -- NULL when no pattern length is claimed
  start_ns INTEGER, end_ns INTEGER, dur_us REAL,
  raw_json TEXT
);

-- The envelopes' own facts; the view traceloom_cuda_graph_replay (sql/views/62_replay_reports.sql)
-- adds what each encloses, counted from its children (traceloom_graph_envelope_child_run_core).
-- @surface traceloom_cuda_graph_replay_core | one graph replay envelope (storage) | Storage behind traceloom_cuda_graph_replay: each envelope's provider, kind, event, stream, ids and interval | SELECT graph_provider, graph_kind, count(*) FROM traceloom_cuda_graph_replay_core GROUP BY 1, 2
CREATE TABLE traceloom_cuda_graph_replay_core(
  graph_event_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  graph_provider TEXT NOT NULL,    -- cuda | aclgraph
  graph_kind TEXT NOT NULL,        -- aclgraph_graph_replay, cuda_graph_replay (a promoted unit),
                                   -- cuda_graph_trace (a graph-level GRAPH_TRACE row)
  graph_event_idx INTEGER NOT NULL,
  event_id TEXT,
  step_idx INTEGER,
  stream_id INTEGER,
  correlation_id TEXT,
  -- a replay unit's graph and execution as the reference names them (ACL: aclgraph-template-<n>
  -- and aclgraph-replay-unit-<n>; CUDA: its node set's ordinal and native-graph-template-<n>);
  -- a graph-level row's CUDA graphId and graphExecId. No declared type: text or integer.
  graph_id, graph_exec_id, context_id INTEGER,
  start_ns INTEGER, end_ns INTEGER, dur_us REAL,
  raw_json TEXT,
  event_n INTEGER                  -- event_id as an integer (traceloom_event_core)
);

-- @surface traceloom_graph_launch | one graph launch (exact) | Every observed graph launch with its match and association evidence; promoted launches carry their anchor, replay unit and body | SELECT graph_provider, match_policy, reconstruction_status, count(*) FROM traceloom_graph_launch GROUP BY 1, 2, 3
CREATE TABLE traceloom_graph_launch(
  launch_id TEXT NOT NULL,         -- graph-launch-<n>
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  graph_provider TEXT NOT NULL,
  graph_event_id TEXT,
  anchor_id TEXT,                  -- NULL when not promoted
  -- the replay unit, its graph template, the body template and the body (the launch's own:
  -- its graph_launch_occurrence_id) as bare integers from 0, as the reference writes them
  replay_unit_id INTEGER,
  graph_template_id INTEGER,
  graph_launch_occurrence_id INTEGER NOT NULL,
  replay_body_template_id INTEGER,
  body_id INTEGER,
  member_order INTEGER,
  slot_order INTEGER,
  correlation_id TEXT,
  match_policy TEXT NOT NULL,
  association_policy TEXT NOT NULL,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, dur_us REAL NOT NULL,
  evidence_level TEXT NOT NULL,    -- exact_direct
  slot_role TEXT,                  -- head, layer, tail, single, generic_slot
  reconstruction_status TEXT NOT NULL, -- exact_replay_member or why not
  region_id TEXT,
  host_call_id TEXT,
  member_count INTEGER NOT NULL,
  first_member_n INTEGER,          -- its members: traceloom_graph_member_core.member_n range
  launch_n INTEGER PRIMARY KEY,    -- n of graph-launch-<n>
  anchor_n INTEGER,                -- anchor_id as an integer (traceloom_anchor_core)
  graph_event_n INTEGER,           -- graph_event_id as an integer (traceloom_event_core)
  relation_n INTEGER               -- its graph_launch relation (traceloom_runtime_device_relation_core)
);

-- @surface traceloom_graph_launch_control | one control task a launch owns | MODEL_EXECUTE, NOTIFY_WAIT and NOTIFY_RECORD tasks of ACL graph launches, by identity | SELECT control_kind, count(*) FROM traceloom_graph_launch_control GROUP BY 1
CREATE TABLE traceloom_graph_launch_control(
  launch_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  control_kind TEXT NOT NULL,      -- execute | wait | record
  launch_n INTEGER NOT NULL,       -- the launch and the event as integers
  event_n INTEGER NOT NULL
);

-- The exact members of promoted launches are not stored one row each (2.46M rows on the 3M-row
-- ACL graph bench): a member is a slot of its launch's body, and the launches of one body
-- template share the slots of the first of them. traceloom_graph_member_core
-- (sql/views/40_replay.sql) is the view of launches x slots that gives every member back:
--   member_n = traceloom_graph_launch.first_member_n + k (k = member_order, the slot's index)
--   event_n  = the launch's first_event_n + the slot's event_offset
--   aggregate_n = first_aggregate_n + the slot's aggregate_offset (aggregates are numbered by
--     stream, ext/replay/costmap.c, so member k's is not always member 0's + k: a lane whose
--     stream id is below an earlier lane's comes first); contributor_order = the launch's;
--   scheduled_work_share_ppm = trunc(dur * 10^6 / the launch's task_sum).
-- A launch whose members these rules do not give (ext/replay/publish_replay.c checks every
-- member) has slots of its own, whose correction columns hold what differs.
-- @surface traceloom_graph_slot_core | one member slot of a body | The storage behind traceloom_graph_member_core: per body template (or per launch that needs its own) its members' lane and task ordinals, kind, CUDA node, and event and aggregate offsets from the first member's | SELECT kind, count(*) FROM traceloom_graph_slot_core GROUP BY 1
CREATE TABLE traceloom_graph_slot_core(
  slot_n INTEGER PRIMARY KEY,      -- a body's slots are a range (first_slot_n + member_order)
  lane_ordinal INTEGER NOT NULL,
  task_ordinal INTEGER NOT NULL,
  kind TEXT NOT NULL,              -- compute | communication | data_move
  original_graph_node_id INTEGER,  -- CUDA: NULL when missing or ambiguous
  event_offset INTEGER NOT NULL,   -- event_n - event_n of member 0, in the launch that made it
  aggregate_offset INTEGER NOT NULL, -- aggregate_n - aggregate_n of member 0, the same way
  -- corrections, in a launch's own slots only (NULL: the rule above gives the value)
  aggregate_n INTEGER, contributor_order INTEGER, scheduled_work_share_ppm INTEGER
);

-- @surface traceloom_graph_member_range_core | one promoted launch with members | The storage behind traceloom_graph_member_core: where a launch's members come from (its slots, its first member's event, its first aggregate and its contributor order) | SELECT count(*), count(DISTINCT first_slot_n) FROM traceloom_graph_member_range_core
CREATE TABLE traceloom_graph_member_range_core(
  launch_n INTEGER PRIMARY KEY,    -- traceloom_graph_launch.launch_n (first_member_n, member_count)
  first_slot_n INTEGER NOT NULL,   -- traceloom_graph_slot_core.slot_n of member 0
  first_event_n INTEGER NOT NULL,  -- the event of member 0
  first_aggregate_n INTEGER NOT NULL, -- the aggregate of member 0 (member k: + its offset)
  contributor_order INTEGER NOT NULL  -- its members' 0-based time order within their aggregates
);

-- @surface traceloom_graph_unpromoted_member_core | one task of a collected body whose launch was not promoted | The members of the bodies collected for launches left unpromoted (traceloom_graph_launch.reconstruction_status says why: a body that differs from its instance's, a launch a composition leaves out), which no graph-body relation lists; the operator audit counts them as graph-body members | SELECT l.reconstruction_status, count(*) FROM traceloom_graph_unpromoted_member_core u JOIN traceloom_graph_launch l ON l.launch_n = u.launch_n GROUP BY 1
CREATE TABLE traceloom_graph_unpromoted_member_core(
  launch_n INTEGER NOT NULL,       -- traceloom_graph_launch (anchor_id NULL: not promoted)
  member_order INTEGER NOT NULL,   -- 0-based, in the collected body's order
  event_n INTEGER NOT NULL,        -- the member task (traceloom_event_core)
  PRIMARY KEY (launch_n, member_order)
) WITHOUT ROWID;

-- The replay cost map (outputs.md 3.3, recovery.md 7.3), computed by ext/replay/costmap.c.
-- Lenses stay separate: task_sum_ns, busy_union_ns, envelope_ns are never added together.
-- Per-member rows (traceloom_replay_cost_member, _aggregate_member) are views.

-- @surface traceloom_replay_cost_unit | one exact replay unit | Whether every launch of the unit has a resolved exact body | SELECT support_status, count(*), sum(launch_member_count) FROM traceloom_replay_cost_unit GROUP BY 1
CREATE TABLE traceloom_replay_cost_unit(
  cost_unit_id TEXT NOT NULL, db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL,
  replay_unit_id INTEGER NOT NULL, graph_template_id INTEGER, launch_member_count INTEGER NOT NULL,
  resolved_launch_count INTEGER NOT NULL, support_status TEXT NOT NULL, reason_codes TEXT
);

-- @surface traceloom_replay_cost_launch | one launch of an exact replay unit | Task-sum, busy-union and envelope of the launch's members, split into compute, communication and data movement | SELECT slot_role, count(*), sum(task_sum_ns), sum(busy_union_ns), sum(envelope_ns) FROM traceloom_replay_cost_launch GROUP BY 1
CREATE TABLE traceloom_replay_cost_launch(
  launch_id TEXT NOT NULL, cost_unit_id TEXT NOT NULL, db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL, member_order INTEGER, graph_launch_occurrence_id INTEGER,
  -- composition_slot_id: one per (composition, slot order) from 0 (a composition: an ACL
  -- composition candidate, whose units share its slots, or a CUDA unit), as the reference
  composition_slot_id INTEGER, slot_role TEXT, slot_order INTEGER, replay_body_template_id INTEGER,
  body_id INTEGER, support_status TEXT NOT NULL, reason_code TEXT, member_count INTEGER NOT NULL,
  task_sum_ns INTEGER, busy_union_ns INTEGER, envelope_ns INTEGER, compute_ns INTEGER,
  communication_ns INTEGER, data_move_ns INTEGER, replay_unit_id INTEGER, graph_template_id INTEGER,
  first_member_start_ns INTEGER,
  launch_n INTEGER PRIMARY KEY
);

-- @surface traceloom_replay_cost_stream | one stream lane of one exact launch | Per-lane task-sum and busy-union of a launch | SELECT lane_ordinal, count(*), sum(task_sum_ns), sum(busy_union_ns) FROM traceloom_replay_cost_stream GROUP BY 1
CREATE TABLE traceloom_replay_cost_stream(
  launch_id TEXT NOT NULL, db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL, stream_id INTEGER,
  lane_ordinal INTEGER NOT NULL, lane_consistent INTEGER NOT NULL, member_count INTEGER NOT NULL,
  task_sum_ns INTEGER, busy_union_ns INTEGER, compute_ns INTEGER, communication_ns INTEGER,
  data_move_ns INTEGER
);

-- @surface traceloom_replay_cost_aggregate | one body position across all launches of a template slot | Duration distribution (p25, median, p75) of one member position over every replay of the same graph template, slot and body | SELECT slot_role, identity, member_occurrence_count, duration_median_ns FROM traceloom_replay_cost_aggregate ORDER BY duration_median_ns DESC LIMIT 10
CREATE TABLE traceloom_replay_cost_aggregate(
  aggregate_id TEXT NOT NULL, db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL,
  graph_template_id INTEGER, slot_role TEXT, aggregation_scope TEXT NOT NULL,
  replay_body_template_id INTEGER, stream_id INTEGER, task_ordinal INTEGER, identity TEXT, kind TEXT,
  member_occurrence_count INTEGER NOT NULL, replay_unit_count INTEGER NOT NULL,
  launch_member_count INTEGER NOT NULL, kind_consistent INTEGER NOT NULL,
  lane_consistent INTEGER NOT NULL, distribution_supported INTEGER NOT NULL,
  duration_p25_ns INTEGER, duration_median_ns INTEGER, duration_p75_ns INTEGER,
  scheduled_work_share_p25_ppm INTEGER, scheduled_work_share_median_ppm INTEGER,
  scheduled_work_share_p75_ppm INTEGER,
  lane_ordinal INTEGER,
  slot_order INTEGER,
  -- the aggregate's share of scheduled work: floor(1e6 x its members' summed durations /
  -- the summed body task-sums of their launches), with its support and denominator
  scheduled_work_share_ppm INTEGER,
  scheduled_work_share_supported INTEGER,
  scheduled_work_denominator_body_task_sum_ns INTEGER
);

-- @surface traceloom_replay_cost_issue | one reason the replay cost map is incomplete | Typed issues (no_replay_units, empty_replay_unit, missing_graph_launch_body, ...) | SELECT code, count(*) FROM traceloom_replay_cost_issue GROUP BY 1
CREATE TABLE traceloom_replay_cost_issue(
  issue_id TEXT NOT NULL, db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL, code TEXT NOT NULL,
  replay_unit_id INTEGER, launch_id TEXT, detail TEXT
);

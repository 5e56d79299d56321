-- Repeats inside exact replay bodies (ext/bodypattern, docs/PARITY.md). Written by
-- tl_replay_body_patterns(), which the analysis calls once the replay relations are published
-- once the replay cost map exists. A domain is one stream lane of one replay body (graph
-- template, slot role, body template, stream); its positions are the body's aggregates in
-- task order; a pattern is one structural place of the tree recovered over them (like a
-- tree node), with its occurrences. Small: rows per body position, not per replay.

-- @surface traceloom_replay_body_pattern_run | one recovery run per input | Whether body patterns were recovered, from which relation, over how many positions and domains, and why not | SELECT run_id, db_idx, support_status, reason_codes, position_count, supported_domain_count FROM traceloom_replay_body_pattern_run
CREATE TABLE traceloom_replay_body_pattern_run(
  run_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  support_status TEXT NOT NULL,      -- supported | unsupported
  reason_codes TEXT,                 -- no_replay_units, no_replay_cost_aggregates, no_supported_domain
  grammar_mode TEXT NOT NULL,
  source_relation TEXT NOT NULL,     -- traceloom_replay_cost_aggregate
  position_count INTEGER NOT NULL,   -- positions of the supported domains
  supported_domain_count INTEGER NOT NULL,
  rejected_domain_count INTEGER NOT NULL,
  run_n INTEGER PRIMARY KEY
);

-- @surface traceloom_replay_body_pattern_domain | one stream lane of one replay body | The domains of body-pattern recovery: graph template, slot, body template and stream, support, positions, the recovery's counts and the patterns and occurrences found | SELECT domain_id, slot_role, stream_id, support_status, position_count, pattern_definition_count, pattern_occurrence_count FROM traceloom_replay_body_pattern_domain
CREATE TABLE traceloom_replay_body_pattern_domain(
  domain_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  graph_template_id INTEGER,
  slot_role TEXT,
  aggregation_scope TEXT,
  replay_body_template_id INTEGER,
  stream_id INTEGER,                 -- NULL: rejected (no order is claimed across streams)
  support_status TEXT NOT NULL,
  reason_code TEXT,
  position_count INTEGER NOT NULL,
  grammar_mode TEXT NOT NULL,
  grammar_stop_reason TEXT NOT NULL, -- done | rejected
  grammar_live_node_count INTEGER NOT NULL,  -- elements under the root
  grammar_macro_def_count INTEGER NOT NULL,  -- repeat patterns
  grammar_description_element_count INTEGER NOT NULL, -- patterns below the root
  grammar_description_ratio REAL NOT NULL,   -- positions per element of that description
  grammar_step_count INTEGER NOT NULL,
  pattern_definition_count INTEGER NOT NULL,
  pattern_occurrence_count INTEGER NOT NULL,
  domain_n INTEGER PRIMARY KEY,
  run_n INTEGER NOT NULL,
  first_position_n INTEGER NOT NULL, -- its positions: [first_position_n, + position_count)
  first_pattern_n INTEGER NOT NULL,  -- its patterns and occurrences likewise
  first_occurrence_n INTEGER NOT NULL
);

-- @surface traceloom_replay_body_position_core | one body position of a domain (integers) | Storage behind traceloom_replay_body_position: the domain, ordinal, aggregate and the two sides of the scheduled-work share | SELECT domain_n, position_ordinal, aggregate_n, scheduled_work_share_ppm FROM traceloom_replay_body_position_core LIMIT 20
CREATE TABLE traceloom_replay_body_position_core(
  position_n INTEGER PRIMARY KEY,
  domain_n INTEGER NOT NULL,
  position_ordinal INTEGER NOT NULL, -- 0-based, task order
  aggregate_rowid INTEGER NOT NULL,  -- traceloom_replay_cost_aggregate.rowid
  aggregate_n INTEGER NOT NULL,      -- n of replay-cost-aggregate-<n> (graph members' aggregate_n)
  member_ns INTEGER NOT NULL,        -- summed duration of its exact members
  launch_task_sum_ns INTEGER NOT NULL, -- summed task-sums of their launches
  scheduled_work_share_ppm INTEGER NOT NULL, -- floor(10^6 member_ns / launch_task_sum_ns)
  scheduled_work_share_supported INTEGER NOT NULL
);

-- @surface traceloom_replay_body_pattern_definition | one pattern (structural place) of a domain | The tree of each replay body: seq root, repeats and atoms in preorder, with depth, loop depth, occurrences and positions per occurrence | SELECT pattern_id, local_pattern_id, node_kind, label, repeat_count, occurrence_count, positions_per_occurrence FROM traceloom_replay_body_pattern_definition LIMIT 20
CREATE TABLE traceloom_replay_body_pattern_definition(
  pattern_id TEXT NOT NULL,
  domain_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  local_pattern_id TEXT NOT NULL,    -- N001 = the root, preorder
  node_kind TEXT NOT NULL,           -- seq, repeat, atom
  label TEXT,                        -- an atom's identity; Rep xN; Seq
  category TEXT,                     -- an atom's kind (compute, communication, data_move)
  repeat_count INTEGER,
  display_depth INTEGER NOT NULL,
  loop_depth INTEGER NOT NULL,       -- repeat patterns from the root, itself included
  occurrence_count INTEGER NOT NULL,
  positions_per_occurrence INTEGER NOT NULL,
  visibility_reason TEXT NOT NULL,
  pattern_n INTEGER PRIMARY KEY,
  domain_n INTEGER NOT NULL,
  parent_pattern_n INTEGER,          -- NULL for the root
  slot_ordinal INTEGER NOT NULL,     -- slot in the parent (0 for the root)
  first_occurrence_n INTEGER NOT NULL
);

-- @surface traceloom_replay_body_pattern_occurrence | one occurrence of a pattern | Each realization of a pattern over the body positions: parent, iteration, position span and the summed duration quantiles and scheduled-work shares of its positions | SELECT occurrence_id, pattern_id, repeat_iteration, position_start, position_end_exclusive, duration_median_sum_ns FROM traceloom_replay_body_pattern_occurrence LIMIT 20
CREATE TABLE traceloom_replay_body_pattern_occurrence(
  occurrence_id TEXT NOT NULL,
  pattern_id TEXT NOT NULL,
  domain_id TEXT NOT NULL,
  parent_occurrence_id TEXT,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  occurrence_index INTEGER NOT NULL, -- 0-based per pattern, walk order
  edge_order INTEGER NOT NULL,       -- its place among the parent occurrence's children
  repeat_iteration INTEGER NOT NULL, -- 1..N under a repeat, 0 otherwise
  position_start INTEGER NOT NULL,
  position_end_exclusive INTEGER NOT NULL,
  position_count INTEGER NOT NULL,
  duration_p25_sum_ns INTEGER NOT NULL,
  duration_median_sum_ns INTEGER NOT NULL,
  duration_p75_sum_ns INTEGER NOT NULL,
  scheduled_work_share_ppm_sum INTEGER NOT NULL,
  scheduled_work_share_supported INTEGER NOT NULL,
  occurrence_n INTEGER PRIMARY KEY,
  domain_n INTEGER NOT NULL,
  pattern_n INTEGER NOT NULL,
  parent_n INTEGER,
  slot_ordinal INTEGER NOT NULL,
  member_order INTEGER NOT NULL      -- 1 under a seq, the iteration under a repeat, 0 root
);

-- @surface traceloom_replay_body_pattern_issue | one reason body patterns are missing | Typed issues of body-pattern recovery (no_replay_units, no_replay_cost_aggregates, missing_stream_id, ...) | SELECT code, count(*) FROM traceloom_replay_body_pattern_issue GROUP BY 1
CREATE TABLE traceloom_replay_body_pattern_issue(
  issue_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  domain_id TEXT,
  db_idx INTEGER NOT NULL,
  device_id INTEGER,
  code TEXT NOT NULL,
  detail TEXT NOT NULL
);

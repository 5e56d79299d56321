-- Idle evidence (Ascend E1 to E4; ext/idle, docs/REPORTS.md "Idle evidence"). Written only
-- with the analyze option "idle_evidence"; empty otherwise. Nanosecond columns are
-- authoritative, *_us readable copies. One run per Ascend input (db_idx); run_id is the
-- SHA-256 of the run's canonical metadata JSON.

-- @surface traceloom_run_metadata | one idle-evidence run (one per Ascend input) | Status, analysis span, contract and rule-set versions and digests, the attested collection status and source of each run | SELECT run_id, analysis_status, collection_status, span_start_ns, span_end_ns FROM traceloom_run_metadata
CREATE TABLE traceloom_run_metadata(
  run_id TEXT PRIMARY KEY,
  analysis_status TEXT NOT NULL,        -- ok, no_productive_span, empty_input, invalid_input
  span_start_ns INTEGER, span_end_ns INTEGER,
  contract_version TEXT NOT NULL,
  semantic_rules_version TEXT NOT NULL, semantic_rules_sha256 TEXT NOT NULL,
  attribution_rule_version TEXT NOT NULL,
  host_api_rules_version TEXT NOT NULL, host_api_rules_sha256 TEXT NOT NULL,
  collection_status TEXT NOT NULL,      -- complete, incomplete, unknown, invalid (attested by the caller)
  db_idx INTEGER NOT NULL,
  source_kind TEXT NOT NULL, source_path TEXT NOT NULL,
  metadata_json TEXT NOT NULL           -- canonical JSON (sorted keys) whose SHA-256 is run_id
);
-- The views look a row's run up by db_idx (one run per Ascend input): covering, so a lookup is
-- one seek (the audit makes millions: 1.2 s of its evidence checks on the 1M profile).
CREATE INDEX traceloom_run_metadata_db ON traceloom_run_metadata(db_idx, run_id, collection_status);

-- The four large relations (device intervals, stream states, explanations, evidence links)
-- and the per-anchor attribution are stored as *_core rows of integers, codes and their text
-- ids: what is constant per run (run id, versions, collection status, clock domain) lives
-- once in traceloom_run_metadata, names are small codes (the enums of ext/idle/idle_int.h).
-- The public relations of the same names are views (sql/views/64_idle.sql).
-- Intervals, stream states and explanations are WITHOUT ROWID tables keyed by their text id,
-- written by the idle stage in key order (ext/idle/publish_idle.c): the idle-evidence-audit
-- report looks owners and gaps up by id millions of times (each evidence link's owner, twice
-- or three times), and a key lookup is one B-tree descent where a rowid table with a unique
-- index on the id takes two (the index, then the row); the id index itself (166 MB on the 1M
-- profile) is gone. The ids stay stored text: SQLite 3.40 rebuilds a VIRTUAL id at each read
-- and treats no index touching a generated column as covering (measured on the 1M-task
-- profile: the audit took 40 s CPU with virtual ids, 25 s with text). A link's event id, only
-- ever probed with (never looked up, grouped or sorted by), is computed.

-- Each extent is its start and its duration (the views add them up to end_ns): a duration takes
-- 2 to 4 bytes where an end timestamp takes 8 (19 MB over the three cores at a million tasks),
-- and the views' duration_ns is then the stored column.

-- @surface traceloom_device_interval_core | one productive or idle interval of a device (integers only) | Storage behind traceloom_device_interval: device, order, extent, idle flag and source count | SELECT device_id, idle, count(*), sum(duration_ns) FROM traceloom_device_interval_core GROUP BY 1, 2
CREATE TABLE traceloom_device_interval_core(
  db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL,
  interval_order INTEGER NOT NULL,      -- 0-based per device, in time order
  start_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  idle INTEGER NOT NULL,                -- 0 productive_active, 1 visible_productive_idle
  source_count INTEGER NOT NULL,
  interval_id TEXT NOT NULL,            -- 'device-interval-d<db_idx>-dev<device_id>-<interval_order>'
  PRIMARY KEY (interval_id)
) WITHOUT ROWID;

-- @surface traceloom_stream_state_core | one observed state of one stream (integers only) | Storage behind traceloom_stream_state: stream, order, extent, state code, source count and the device's stream scan | SELECT state, count(*), sum(duration_ns) FROM traceloom_stream_state_core GROUP BY 1
CREATE TABLE traceloom_stream_state_core(
  db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL, stream_id INTEGER NOT NULL,
  state_order INTEGER NOT NULL,         -- 0-based per stream, in time order
  start_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  state INTEGER NOT NULL,               -- tl_idle_state: 0-6 running_<role>, 7 unknown,
                                        -- 8 empty_observed, 9 ambiguous_overlap
  source_count INTEGER NOT NULL,
  stream_count INTEGER NOT NULL,        -- the device's observed streams
  scan_complete INTEGER NOT NULL,       -- every event of the device had a stream
  state_id TEXT NOT NULL,               -- 'stream-state-d<db_idx>-dev<device_id>-s<stream_id>-<state_order>'
  PRIMARY KEY (state_id)
) WITHOUT ROWID;

-- @surface traceloom_idle_explanation_core | one explained slice of a visible idle gap (integers only) | Storage behind traceloom_idle_explanation: gap, order, extent and the codes of category, evidence level, relation and alignment | SELECT category, count(*), sum(duration_ns) FROM traceloom_idle_explanation_core GROUP BY 1
CREATE TABLE traceloom_idle_explanation_core(
  db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL,
  explanation_order INTEGER NOT NULL,   -- 0-based per device
  gap_order INTEGER NOT NULL,           -- interval_order of its gap
  start_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  category INTEGER NOT NULL,            -- tl_idle_category, in priority order
  level INTEGER NOT NULL,               -- 0 direct, 1 correlated, 2 none
  relation INTEGER NOT NULL,            -- 0 device_event_coverage, 1 complete_absence_observation,
                                        -- 2 exact_connection_id, 3 temporal_overlap, 4 none
  alignment INTEGER NOT NULL,           -- tl_alignment
  source_count INTEGER NOT NULL,
  idle_explanation_id TEXT NOT NULL,    -- 'idle-explanation-d<db_idx>-dev<device_id>-<explanation_order>'
  gap_interval_id TEXT NOT NULL,        -- its gap's interval_id (stored: the audit groups and
                                        -- windows 760k explanations by it, and spelling it in
                                        -- the view cost 1 s CPU there on the 1M profile)
  PRIMARY KEY (idle_explanation_id)
) WITHOUT ROWID;

-- @surface traceloom_idle_candidate | one diagnostic host hypothesis for a gap | Host overlaps that exist only inside the clock uncertainty (possible_only) and enqueue delays that are not robustly positive (non_robust_delay); never part of an explanation | SELECT candidate_category, candidate_status, count(*) FROM traceloom_idle_candidate GROUP BY 1, 2
CREATE TABLE traceloom_idle_candidate(
  candidate_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, gap_interval_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL, candidate_category TEXT NOT NULL,
  candidate_level TEXT NOT NULL, candidate_relation TEXT NOT NULL, candidate_status TEXT NOT NULL,
  reason TEXT NOT NULL, alignment_status TEXT NOT NULL, start_ns INTEGER, end_ns INTEGER
);

-- @surface traceloom_clock_model | one host-to-device clock model of a device | The affine fit on explicit markers (Theil-Sen, every fifth marker held out), its residuals and uncertainty, and the alignment it supports (uncalibrated without markers) | SELECT device_id, alignment_status, scale, offset_ns, epsilon_ns, reason FROM traceloom_clock_model
CREATE TABLE traceloom_clock_model(
  clock_model_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL, source_clock_domain TEXT NOT NULL,
  intermediate_clock_domain TEXT NOT NULL, target_clock_domain TEXT NOT NULL,
  mapping_kind TEXT NOT NULL, scale TEXT, offset_ns REAL, reference_host_ns REAL,
  reference_device_ns REAL, drift_ppm REAL, fit_method TEXT NOT NULL,
  fit_method_version TEXT NOT NULL, fit_random_seed INTEGER NOT NULL,
  input_marker_count INTEGER NOT NULL, inlier_marker_count INTEGER NOT NULL,
  rejected_marker_count INTEGER NOT NULL, fit_marker_count INTEGER NOT NULL,
  validation_marker_count INTEGER NOT NULL, absolute_residual_p50_ns REAL,
  absolute_residual_p95_ns REAL, absolute_residual_max_ns REAL,
  bracket_uncertainty_p95_ns REAL, epsilon_ns INTEGER, alignment_status TEXT NOT NULL,
  has_profiler_host_mapping INTEGER NOT NULL, profiler_caller_observation_kind TEXT NOT NULL,
  marker_device_observation_kind TEXT NOT NULL, reason TEXT NOT NULL
);

-- @surface traceloom_clock_marker | one clock marker the caller supplied | The marker TSV rows: host bracket, device timestamp and identity, with whether the fit used them | SELECT device_id, count(*), sum(marker_status = 'accepted') FROM traceloom_clock_marker GROUP BY 1
CREATE TABLE traceloom_clock_marker(
  run_id TEXT NOT NULL, marker_id TEXT NOT NULL, source_kind TEXT NOT NULL,
  source_table TEXT NOT NULL, source_key TEXT NOT NULL, host_before_ns INTEGER,
  host_after_ns INTEGER, device_timestamp_ns INTEGER, host_pid INTEGER, host_tid INTEGER,
  device_id INTEGER, stream_id INTEGER, connection_id INTEGER, call_site TEXT,
  return_status INTEGER, marker_status TEXT NOT NULL
);
-- The audit checks each evidence link without an event against the markers by source row, a
-- correlated EXISTS per link (no automatic index there): without this index every such link
-- scans the markers.
CREATE INDEX traceloom_clock_marker_source ON traceloom_clock_marker(source_table, source_key);

-- @surface traceloom_host_api_event | one allowlisted host API call | Runtime calls of the host-API allowlist (host_sync and enqueue families) with their connection id and device | SELECT api_family, api_name, count(*) FROM traceloom_host_api_event GROUP BY 1, 2
CREATE TABLE traceloom_host_api_event(
  api_event_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, db_idx INTEGER NOT NULL,
  source_kind TEXT NOT NULL, source_table TEXT NOT NULL, source_key TEXT NOT NULL,
  runtime_call_id TEXT NOT NULL, api_name TEXT, api_family TEXT NOT NULL, api_pattern TEXT NOT NULL,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, connection_id INTEGER, device_id INTEGER,
  clock_domain TEXT NOT NULL, contract_version TEXT NOT NULL
);
CREATE INDEX traceloom_host_api_event_source ON traceloom_host_api_event(source_table, source_key);

-- @surface traceloom_task_api_link | one (host API call, device task) connection link | Connection-id joins of host API calls to device tasks with their status: unique, one_to_many, ambiguous, unresolved | SELECT link_status, count(*) FROM traceloom_task_api_link GROUP BY 1
CREATE TABLE traceloom_task_api_link(
  run_id TEXT NOT NULL, api_event_id TEXT NOT NULL, trace_event_id TEXT, device_id INTEGER,
  connection_id INTEGER, link_status TEXT NOT NULL
);
-- The audit finds a queued explanation's task link from its host call: without this index
-- SQLite builds an automatic one over every link at each run.
CREATE INDEX traceloom_task_api_link_api ON traceloom_task_api_link(api_event_id);

-- @surface traceloom_evidence_link_core | one source row cited by an idle-evidence owner (integers where it can) | Storage behind traceloom_evidence_link: the owner, the cited event (event_n) or host/marker row, relation and level codes, overlap extent | SELECT owner_kind, relation, count(*) FROM traceloom_evidence_link_core GROUP BY 1, 2
CREATE TABLE traceloom_evidence_link_core(
  owner_kind_n INTEGER NOT NULL,        -- 0 device_interval, 1 stream_state, 2 explanation,
                                        -- 3 candidate, 4 clock_model
  owner_id TEXT NOT NULL,               -- the owner's id
  db_idx INTEGER NOT NULL,
  evidence_ordinal INTEGER NOT NULL,
  event_n INTEGER,                      -- the cited device event; NULL: a host call or marker
  source_table TEXT, source_key TEXT,   -- the cited row when it is not an event
  relation INTEGER NOT NULL,            -- as traceloom_idle_explanation_core.relation
  level INTEGER NOT NULL,               -- as traceloom_idle_explanation_core.level
  overlap_start_ns INTEGER, overlap_end_ns INTEGER,
  stream_id INTEGER,
  state INTEGER,                        -- tl_idle_state of a stream state's source
  rule_n INTEGER,                       -- the event's semantic rule (traceloom_idle_name 'rule')
  owner_kind TEXT GENERATED ALWAYS AS (CASE owner_kind_n WHEN 0 THEN 'device_interval'
    WHEN 1 THEN 'stream_state' WHEN 2 THEN 'explanation' WHEN 3 THEN 'candidate'
    ELSE 'clock_model' END) VIRTUAL   -- a column: the partial owner index's WHERE names it
);
-- A link's trace_event_id ('event-' || event_n), only ever probed with (the event's id index),
-- is the view's expression, not a generated column here: SQLite computes every generated
-- column, VIRTUAL ones too, at each INSERT (a text concatenation per link, 2.5M at a million
-- tasks), and no index or constraint reads it.

-- @surface traceloom_idle_name | one name of an idle-evidence code | The names of the codes the idle cores store (kind category, level, relation, state: ext/idle's enums; rule: the E1 semantic rule ids), written by the idle stage from its own tables | SELECT kind, count(*) FROM traceloom_idle_name GROUP BY kind
CREATE TABLE traceloom_idle_name(
  kind TEXT NOT NULL, code INTEGER NOT NULL, name TEXT NOT NULL,
  PRIMARY KEY (kind, code)
) WITHOUT ROWID;

-- @surface traceloom_anchor_idle_explanation_core | one (anchor, category, evidence level) (integers only) | Storage behind traceloom_anchor_idle_explanation: explained idle in each anchor's prelude window by category and level code | SELECT category, count(*), sum(duration_ns) FROM traceloom_anchor_idle_explanation_core GROUP BY 1
-- Keyed (and written) in (anchor_n, category, level) order: a lookup by anchor is a key prefix.
CREATE TABLE traceloom_anchor_idle_explanation_core(
  anchor_n INTEGER NOT NULL,            -- traceloom_anchor_core
  db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL, anchor_idx INTEGER NOT NULL,
  category INTEGER NOT NULL, level INTEGER NOT NULL,
  slice_count INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  PRIMARY KEY (anchor_n, category, level)
) WITHOUT ROWID;

-- @surface traceloom_node_idle_explanation_core | one (tree node, category, evidence level) (integers only) | Storage behind traceloom_node_idle_explanation: the anchors' explained idle summed over each node's occurrences, by category and level code | SELECT category, level, count(*), sum(duration_ns) FROM traceloom_node_idle_explanation_core GROUP BY 1, 2
-- Stored, not a view over traceloom_viz_node_anchor: a node repeats its descendants' anchors (a
-- root holds all of them), so the join reads anchors x depth rows (3.5 s CPU at a million
-- anchors); the idle stage sums each occurrence's anchor range from running sums
-- (ext/idle/publish_idle.c write_nodes).
CREATE TABLE traceloom_node_idle_explanation_core(
  node_n INTEGER NOT NULL,              -- traceloom_node_core
  category INTEGER NOT NULL, level INTEGER NOT NULL,
  db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL,
  slice_count INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  PRIMARY KEY (node_n, category, level)
) WITHOUT ROWID;

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

-- @surface traceloom_device_interval | one productive or idle interval of a device | The exact partition of each device's analysis span into productive_active (the union of productive tasks and communication ops) and visible_productive_idle | SELECT interval_kind, count(*), sum(duration_ns) FROM traceloom_device_interval GROUP BY 1
CREATE TABLE traceloom_device_interval(
  interval_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL, interval_order INTEGER NOT NULL,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  duration_us REAL NOT NULL,
  interval_kind TEXT NOT NULL,          -- productive_active, visible_productive_idle
  source_count INTEGER NOT NULL, clock_domain TEXT NOT NULL,
  contract_version TEXT NOT NULL, semantic_rules_version TEXT NOT NULL,
  attribution_rule_version TEXT NOT NULL
);

-- @surface traceloom_stream_state | one observed state of one stream | Per stream, the mutually exclusive partition of the span into running_<role>, unknown, empty_observed and ambiguous_overlap states, with the observed stream universe | SELECT state, count(*), sum(duration_ns) FROM traceloom_stream_state GROUP BY 1
CREATE TABLE traceloom_stream_state(
  state_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL, stream_id INTEGER NOT NULL, state_order INTEGER NOT NULL,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  duration_us REAL NOT NULL, state TEXT NOT NULL, source_count INTEGER NOT NULL,
  stream_universe_kind TEXT NOT NULL, stream_universe_size INTEGER NOT NULL,
  observed_stream_count INTEGER NOT NULL, observed_universe_scan_complete INTEGER NOT NULL,
  collection_status TEXT NOT NULL, clock_domain TEXT NOT NULL, contract_version TEXT NOT NULL,
  semantic_rules_version TEXT NOT NULL, attribution_rule_version TEXT NOT NULL
);

-- @surface traceloom_idle_explanation | one explained slice of a visible idle gap | Each gap split into slices explained by priority (blocked_by_visible_wait, capture_control_present, runtime_control_present, queued_visible_task_delay, host_sync_api_present, no_observed_device_work, unattributed_visible_idle) with evidence level, relation and clock alignment | SELECT category, evidence_level, count(*), sum(duration_ns) FROM traceloom_idle_explanation GROUP BY 1, 2
CREATE TABLE traceloom_idle_explanation(
  idle_explanation_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, gap_interval_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL, explanation_order INTEGER NOT NULL,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  duration_us REAL NOT NULL, category TEXT NOT NULL,
  evidence_level TEXT NOT NULL,         -- direct, correlated, none
  evidence_relation TEXT NOT NULL,      -- device_event_coverage, complete_absence_observation,
                                        -- exact_connection_id, temporal_overlap, none
  alignment_status TEXT NOT NULL,       -- not_required, calibrated, synthetic_only, uncalibrated, invalid
  collection_status TEXT NOT NULL, reason TEXT NOT NULL, source_count INTEGER NOT NULL,
  clock_domain TEXT NOT NULL, contract_version TEXT NOT NULL, semantic_rules_version TEXT NOT NULL,
  attribution_rule_version TEXT NOT NULL
);
CREATE INDEX traceloom_idle_explanation_gap ON traceloom_idle_explanation(gap_interval_id);

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

-- @surface traceloom_evidence_link | one source row cited by an interval, state, explanation, candidate or clock model | The lineage of every idle-evidence claim: the profiler row (table and rowid, or the marker id), the relation and level, and the overlap extent for temporal relations | SELECT owner_kind, relation, count(*) FROM traceloom_evidence_link GROUP BY 1, 2
CREATE TABLE traceloom_evidence_link(
  owner_kind TEXT NOT NULL,             -- device_interval, stream_state, explanation, candidate, clock_model
  owner_id TEXT NOT NULL, evidence_ordinal INTEGER NOT NULL, source_kind TEXT NOT NULL,
  source_table TEXT NOT NULL, source_key TEXT NOT NULL, relation TEXT NOT NULL,
  evidence_level TEXT NOT NULL, overlap_start_ns INTEGER, overlap_end_ns INTEGER,
  stream_id INTEGER, state TEXT, trace_event_id TEXT NOT NULL, matched_rule_id TEXT
);
CREATE INDEX traceloom_evidence_link_owner ON traceloom_evidence_link(owner_kind, owner_id);

-- @surface traceloom_anchor_idle_explanation | one (anchor, category, evidence level) | Explained idle inside each anchor's prelude window (the uncovered time before it); per level, never additive with other levels | SELECT category, count(*), sum(duration_ns) FROM traceloom_anchor_idle_explanation GROUP BY 1
CREATE TABLE traceloom_anchor_idle_explanation(
  anchor_id TEXT NOT NULL, run_id TEXT NOT NULL, db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL, anchor_idx INTEGER NOT NULL, category TEXT NOT NULL,
  evidence_level TEXT NOT NULL, slice_count INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  duration_us REAL NOT NULL
);
CREATE INDEX traceloom_anchor_idle_explanation_anchor ON traceloom_anchor_idle_explanation(anchor_id);

-- Facts behind the report surfaces (docs/REPORTS.md) that need C: written by
-- tl_reports_publish (ext/reports/) inside the analysis savepoint. Integers only; the readable
-- relations are the views of sql/views/60_*.sql and later.

-- @surface traceloom_anchor_host_window_rejected | one host window with both endpoints that is not supported | Storage behind traceloom_anchor_host_window.state: the windows whose endpoint calls differ in input, provider or clock domain (3) or are out of order (4), by left anchor | SELECT state, count(*) FROM traceloom_anchor_host_window_rejected GROUP BY 1
CREATE TABLE traceloom_anchor_host_window_rejected(
  left_anchor_n INTEGER PRIMARY KEY,  -- traceloom_anchor_host_window
  state INTEGER NOT NULL              -- 3 incompatible_host_domain, 4 nonmonotonic_host_order
);

-- @surface traceloom_anchor_host_window | one pair of adjacent anchors of a device | Storage-level host window (integers): the left anchor, each side's runtime endpoint (traceloom_anchor_core.host_call_n), the endpoint counts and the typed support state and scope as codes (traceloom_anchor_host_window_code) | SELECT state, scope, count(*) FROM traceloom_anchor_host_window GROUP BY 1, 2
-- One rule (ext/reports/host_window.c, whose decide() applies it to find the observed calls):
-- missing_endpoint (1) when a side has no endpoint, incompatible_host_domain (3) when the two
-- calls' input, provider or clock domain differ, nonmonotonic_host_order (4) when the left
-- call ends after the right one starts, else supported_ordered (0); the scope is same_thread
-- (0) for one process (or none on both) and one thread, same_process (1), else
-- provider_clock_domain (2). An anchor has at most one endpoint: ambiguous_endpoint (2) is
-- never derived. The windows with both endpoints that the rule rejects (3 or 4) are few and
-- stored by decide() (traceloom_anchor_host_window_rejected): a window's state is then its
-- endpoints' presence and one key probe, not a read of both endpoint calls (1.1 s over the
-- 741k windows of the 1M bench profile); tests/sql/reports_host_window_state.sql checks the
-- stored list against the rule worked out from the calls.
CREATE VIEW traceloom_anchor_host_window AS
SELECT l.anchor_n AS left_anchor_n, l.host_call_n AS left_call_n, r.host_call_n AS right_call_n,
       l.host_call_n IS NOT NULL AS left_endpoint_count,
       r.host_call_n IS NOT NULL AS right_endpoint_count,
       CASE WHEN l.host_call_n IS NULL OR r.host_call_n IS NULL THEN 1
            ELSE COALESCE((SELECT x.state FROM traceloom_anchor_host_window_rejected x
                           WHERE x.left_anchor_n = l.anchor_n), 0) END AS state,
       -- process and thread are shape columns: two calls of one shape (the usual case) share
       -- them, and the shapes are looked up only when they differ. The calls are read here,
       -- by key, only when the scope is: as LEFT JOINs of the view, SQLite searched both for
       -- every window of an aggregate over the windows that never reads the scope (it keeps
       -- every LEFT JOIN of an aggregate query), 741k windows at a million anchors.
       CASE WHEN l.host_call_n IS NULL OR r.host_call_n IS NULL THEN 2
            ELSE COALESCE((
              SELECT CASE WHEN lc.shape_id = rc.shape_id
                THEN (SELECT CASE WHEN s.thread_id IS NOT NULL THEN 0
                                  WHEN s.process_id IS NOT NULL THEN 1 ELSE 2 END
                      FROM traceloom_runtime_call_shape s WHERE s.shape_id = lc.shape_id)
                ELSE (SELECT CASE WHEN ls.thread_id IS NOT NULL AND ls.thread_id = rs.thread_id
                                   AND (ls.process_id = rs.process_id
                                        OR (ls.process_id IS NULL AND rs.process_id IS NULL))
                                    THEN 0
                                  WHEN ls.process_id = rs.process_id THEN 1
                                  ELSE 2 END
                      FROM traceloom_runtime_call_shape ls, traceloom_runtime_call_shape rs
                      WHERE ls.shape_id = lc.shape_id AND rs.shape_id = rc.shape_id) END
              FROM traceloom_runtime_call_core lc, traceloom_runtime_call_core rc
              WHERE lc.call_n = l.host_call_n AND rc.call_n = r.host_call_n), 2)
       END AS scope
FROM traceloom_anchor_core l
JOIN traceloom_anchor_core r ON r.anchor_n = l.anchor_n + 1 AND r.db_idx = l.db_idx
 AND r.device_id = l.device_id;

-- @surface traceloom_anchor_host_window_code | one code of a host window's state or scope | The names of the state and scope codes of traceloom_anchor_host_window (kind state or scope), written from the descriptor table of ext/reports/host_window.c | SELECT kind, code, name FROM traceloom_anchor_host_window_code ORDER BY 1, 2
CREATE TABLE traceloom_anchor_host_window_code(
  kind TEXT NOT NULL,                 -- state, scope
  code INTEGER NOT NULL,
  name TEXT NOT NULL,
  PRIMARY KEY(kind, code)
) WITHOUT ROWID;

-- @surface traceloom_anchor_host_window_call | one runtime call observed inside a supported host window | Storage behind traceloom_anchor_host_activity: calls of the window's scope (same thread, same process or the provider clock domain) that overlap it, in (start, end, call) order | SELECT left_anchor_n, count(*) FROM traceloom_anchor_host_window_call GROUP BY 1 ORDER BY 2 DESC LIMIT 10
CREATE TABLE traceloom_anchor_host_window_call(
  left_anchor_n INTEGER NOT NULL,     -- traceloom_anchor_host_window
  observed_order INTEGER NOT NULL,    -- 0-based, by (start_ns, end_ns, call_n)
  call_n INTEGER NOT NULL,            -- traceloom_runtime_call
  PRIMARY KEY(left_anchor_n, observed_order)
) WITHOUT ROWID;

-- An envelope's children are stored as runs of consecutive event numbers (one or a few per
-- envelope: 171k runs for 2.97M children on the 3M-row ACL graph bench), each a key range of
-- traceloom_event_core.
-- @surface traceloom_graph_envelope_child_run_core | one run of consecutive events inside a graph replay envelope | Storage behind traceloom_graph_envelope_child: child orders first_child_order + i are events first_event_n + i, i < run_length | SELECT count(*), sum(run_length) FROM traceloom_graph_envelope_child_run_core
CREATE TABLE traceloom_graph_envelope_child_run_core(
  graph_event_idx INTEGER NOT NULL,  -- traceloom_cuda_graph_replay_core.graph_event_idx
  first_child_order INTEGER NOT NULL, -- 1-based over every envelope's children, in envelope
                                      -- order (the reference's envelope_idx)
  first_event_n INTEGER NOT NULL,    -- traceloom_event.event_n
  run_length INTEGER NOT NULL,
  PRIMARY KEY(graph_event_idx, first_child_order)
) WITHOUT ROWID;

-- @surface traceloom_graph_envelope_child | one device event inside a graph replay envelope | Storage behind traceloom_cuda_graph_envelope: the events of the envelope's device that lie wholly inside its interval, in (start, event) order; temporal evidence, never membership | SELECT graph_event_idx, count(*) FROM traceloom_graph_envelope_child GROUP BY 1 LIMIT 10
CREATE VIEW traceloom_graph_envelope_child AS
SELECT r.graph_event_idx, r.first_child_order + e.event_n - r.first_event_n AS child_order,
       e.event_n AS child_event_n
FROM traceloom_graph_envelope_child_run_core r
JOIN traceloom_event_core e ON e.event_n >= r.first_event_n
 AND e.event_n < r.first_event_n + r.run_length;

-- @surface traceloom_graph_envelope_anchor | one graph replay envelope whose event is an anchor | The anchor (anchor_n) of each envelope event that is one, so the envelope views reach anchor_idx by key | SELECT count(*) FROM traceloom_graph_envelope_anchor
CREATE TABLE traceloom_graph_envelope_anchor(
  graph_event_idx INTEGER PRIMARY KEY,
  anchor_n INTEGER NOT NULL
);

-- The tasks one communication op represents are mostly consecutive events, so they are stored
-- as runs of consecutive event numbers with one anchor (about 127k runs for 381k tasks on the
-- 1M-task Ascend bench), each a key range of traceloom_event_core. Keyed by anchor first: the
-- structure view walks anchors and looks their tasks up.
-- @surface traceloom_represented_event_run_core | one run of consecutive communication tasks represented by one communication-op anchor | Storage behind traceloom_represented_event: the events first_event_n..last_event_n (inclusive) are all represented by anchor_n | SELECT count(*), sum(last_event_n - first_event_n + 1) FROM traceloom_represented_event_run_core
CREATE TABLE traceloom_represented_event_run_core(
  anchor_n INTEGER NOT NULL,         -- the communication-op anchor (traceloom_anchor.anchor_n)
  first_event_n INTEGER NOT NULL,    -- the run's first and last task (traceloom_event.event_n)
  last_event_n INTEGER NOT NULL,
  PRIMARY KEY (anchor_n, first_event_n)
) WITHOUT ROWID;

-- @surface traceloom_represented_event | one communication task represented by a communication-op anchor | Which anchor stands for each task that a communication op on the same (db, device, connection) overlaps, for the evidence-role placement of tasks that are not anchors themselves | SELECT count(*), count(DISTINCT anchor_n) FROM traceloom_represented_event
-- Each run expanded over the event key (the events are dense, so the range holds exactly the
-- run's tasks), in (anchor_n, event_n) order as the runs are read by their key.
CREATE VIEW traceloom_represented_event AS
SELECT r.anchor_n, e.event_n
FROM traceloom_represented_event_run_core r
JOIN traceloom_event_core e ON e.event_n >= r.first_event_n AND e.event_n <= r.last_event_n;

-- @surface traceloom_structural_unit | one unit of a device's anchor sequence | The partition of each device's anchors into exact graph units (one per replay, identical adjacent ones folded with run_count), the structural units between them and the open trace prefix and suffix, with costs, fingerprints, families and the tree occurrences that expand each unit | SELECT unit_order, unit_id, kind, run_count, family_id, anchor_count, evidence_status FROM traceloom_structural_unit ORDER BY db_idx, device_id, unit_order
CREATE TABLE traceloom_structural_unit(
  unit_id TEXT NOT NULL,               -- G<n> graph units, U<n> structural units, X<n> unrecognized
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  unit_order INTEGER NOT NULL,         -- 0-based per (db_idx, device_id)
  kind TEXT NOT NULL,                  -- graph_unit, structural_unit, unrecognized
  run_count INTEGER NOT NULL,          -- adjacent identical units folded into this row
  family_id TEXT NOT NULL,             -- one per (kind, body_fingerprint): GF<n>, UF<n>, XF<n>
  body_fingerprint TEXT NOT NULL,      -- 'H' + 16 hex digits of SHA-256 over the body's tokens
  token_start_ordinal INTEGER NOT NULL,-- 0-based anchor positions in the device sequence
  token_end_ordinal INTEGER NOT NULL,  -- exclusive
  first_anchor_n INTEGER NOT NULL,     -- traceloom_anchor.anchor_n of the first and last anchor
  last_anchor_n INTEGER NOT NULL,
  first_anchor_idx INTEGER NOT NULL,
  last_anchor_idx INTEGER NOT NULL,
  anchor_count INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  span_us REAL NOT NULL,
  compute_us REAL NOT NULL,            -- the anchors' cost packets, summed
  comm_us REAL NOT NULL,
  idle_us REAL NOT NULL,
  total_us REAL NOT NULL,
  aux_events INTEGER NOT NULL,
  aux_us REAL NOT NULL,
  evidence_status TEXT NOT NULL,       -- exact, complete, unrecognized_open_prefix, unrecognized_open_suffix
  boundary_policy TEXT NOT NULL,       -- direct_exact_graph_unit, bounded_by_adjacent_exact_graph_units,
                                       -- open_trace_prefix, open_trace_suffix
  shape_signature TEXT NOT NULL,       -- the graph template of a graph unit; 'unavailable' otherwise
  expansion_nodes TEXT NOT NULL,       -- the outermost tree occurrences inside the unit
                                       -- (position_id#occurrence_idx, comma-separated, in order)
  PRIMARY KEY(db_idx, device_id, unit_order)
);

-- @surface traceloom_event_reconciliation_decision_core | one reconciliation decision (integers) | Storage behind traceloom_event_reconciliation_decision: the rule, the status and reason as codes, the canonical and envelope events and the contained fraction | SELECT status, count(*) FROM traceloom_event_reconciliation_decision_core GROUP BY 1
CREATE TABLE traceloom_event_reconciliation_decision_core(
  decision_n INTEGER PRIMARY KEY,     -- reconciliation-decision-<n>
  db_idx INTEGER NOT NULL,
  rule_id TEXT NOT NULL,              -- traceloom_event_reconciliation_rule
  status INTEGER NOT NULL,            -- 0 reconciled, 1 independent, 2 ambiguous, 3 conflict
  reason INTEGER NOT NULL,            -- index into the reason codes of the decision view
  canonical_event_n INTEGER,          -- reconciled: the canonical observation
  envelope_event_n INTEGER,           -- reconciled: the one whose interval is charged
  contained_ppm INTEGER,              -- contained fraction of the inner observation, ppm
  member_count INTEGER NOT NULL,
  canonical_anchor_n INTEGER          -- the anchor the canonical observation is, NULL when none
);

-- @surface traceloom_event_reconciliation_member_core | one observation of a reconciliation decision (integers) | Storage behind traceloom_event_reconciliation_member: the event, its role as a code and what it contributes | SELECT member_role, count(*) FROM traceloom_event_reconciliation_member_core GROUP BY 1
CREATE TABLE traceloom_event_reconciliation_member_core(
  decision_n INTEGER NOT NULL,
  member_order INTEGER NOT NULL,
  event_n INTEGER NOT NULL,
  member_role INTEGER NOT NULL,       -- 0 timing_envelope, 1 semantic_detail, 2 provider_detail,
                                      -- 3 independent_candidate, 4 conflicting_candidate
  contributes_timing INTEGER NOT NULL,
  contributes_symbol INTEGER NOT NULL,
  contributes_cost INTEGER NOT NULL,
  PRIMARY KEY(decision_n, member_order)
) WITHOUT ROWID;

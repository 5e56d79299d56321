-- What a PyTorch user asks HTA, computed on the structure: the launch delay of every kernel and
-- per structural node, the host-bound share of each profiler step (time the device waits for
-- the host), and the kernel / operator breakdown of each step. Joins go through integers only
-- (event_n, call_n, anchor_n, occurrence_n, node_n).

-- The relation's state and the event's symbol are read by join on their shape's key, not one
-- scalar subquery each (a subquery opens its cursor per evaluation): the example, grouping
-- every launched event (741k at a million tasks), 1.38 -> 1.10 s CPU. The CROSS JOINs keep
-- the events outer (a shape table is a handful of rows). The API name stays a subquery, run
-- only when read: joined, the call shape's few rows were scanned per event under some
-- statistics.
-- @surface traceloom_v_launch_delay | one device event with a launching runtime call | The launch delay of every kernel: from its runtime call's start to its own start (HTA's launch delay), with the call's duration | SELECT symbol, count(*), avg(launch_delay_us), max(launch_delay_us) FROM traceloom_v_launch_delay GROUP BY symbol ORDER BY 3 DESC LIMIT 10
CREATE VIEW traceloom_v_launch_delay AS
SELECT e.event_n, e.anchor_n, e.db_idx, e.device_id, c.call_n,
       es.symbol,
       (SELECT s.api_name FROM traceloom_runtime_call_shape s WHERE s.shape_id = c.shape_id) AS api_name,
       c.start_ns AS call_start_ns, e.start_ns,
       (e.start_ns - c.start_ns) / 1000.0 AS launch_delay_us,
       c.dur_ns / 1000.0 AS call_us
FROM traceloom_event_core e
CROSS JOIN traceloom_runtime_device_relation_core r ON r.relation_n = e.relation_n
CROSS JOIN traceloom_runtime_device_relation_shape rs ON rs.shape_id = r.shape_id
CROSS JOIN traceloom_runtime_call_core c ON c.call_n = r.call_n
LEFT JOIN traceloom_event_shape es ON es.shape_id = e.shape_id
WHERE e.relation_n IS NOT NULL
  AND rs.support_state IN ('supported_exact', 'supported_deterministic');

-- @surface traceloom_v_node_launch_delay | one structural node with launched anchors | Launch delay per position of the loop tree over the anchors it covers (all its occurrences): count, average, min and max | SELECT local_node_id, label, launched_anchors, avg_launch_delay_us, max_launch_delay_us FROM traceloom_v_node_launch_delay ORDER BY avg_launch_delay_us DESC LIMIT 10
-- Per node (428k with launched anchors at a million tasks), the label is read by a LEFT JOIN
-- on the node's shape and the local id is the node's generated column (a concatenation from
-- N100 on, the same text as the printf(); unary plus keeps the column without a declared type,
-- as it was). Both are read once per node, after the aggregate: the delays are summed per
-- node_n over its (occurrence, anchor) pairs (1.8M at a million anchors) in a subquery that
-- reads integers only. A column of the node or its shape in the same aggregate is copied for
-- every pair, not every node: the generated id's printf() and the label text 1.8M times (the
-- example 2.40 -> 1.44 s CPU).
CREATE VIEW traceloom_v_node_launch_delay AS
SELECT n.node_n, n.db_idx, n.device_id, +n.local_node_id AS local_node_id, sh.label,
       d.launched_anchors, d.avg_launch_delay_us, d.min_launch_delay_us, d.max_launch_delay_us
FROM (SELECT n.node_n,
             count(*) AS launched_anchors,
             round(avg(e.start_ns - c.start_ns) / 1000.0, 3) AS avg_launch_delay_us,
             min(e.start_ns - c.start_ns) / 1000.0 AS min_launch_delay_us,
             max(e.start_ns - c.start_ns) / 1000.0 AS max_launch_delay_us
      FROM traceloom_node_core n
      CROSS JOIN traceloom_position_occurrence_core o
        ON o.occurrence_n >= n.first_occurrence_n
       AND o.occurrence_n < n.first_occurrence_n + n.occurrence_count
      CROSS JOIN traceloom_anchor_core a
        ON a.anchor_n >= o.anchor_first_n AND a.anchor_n < o.anchor_first_n + n.token_len
      -- The launching call is the anchor's runtime endpoint (traceloom_anchor_core.host_call_n):
      -- the call of its event's supported relation, which is the relation the event's row
      -- names (traceloom_event_core.relation_n: its supported one where it has one), or, for
      -- the launch anchor of a graph replay, a derived event without a relation, its launch's
      -- host call, which the condition on relation_n leaves out as the relation's state did.
      -- No relation and no relation shape to search per (node, anchor) pair.
      CROSS JOIN traceloom_event_core e ON e.event_n = a.event_n
      CROSS JOIN traceloom_runtime_call_core c ON c.call_n = a.host_call_n
      WHERE e.relation_n IS NOT NULL
      GROUP BY n.node_n) d
CROSS JOIN traceloom_node_core n ON n.node_n = d.node_n
LEFT JOIN traceloom_node_shape sh ON sh.shape_id = n.shape_id;

-- @surface traceloom_v_profiler_step | one profiler step on one device | Each step's device span, busy and idle time of its anchors, and its host-bound share: the idle time before anchors whose launching call started only after the previous anchor had ended (the device waited for the host), over the step's time; NULL on a CPU operator plane (no launches) | SELECT step_n, name, anchor_count, device_span_us, busy_us, idle_us, host_wait_us, host_bound_share FROM traceloom_v_profiler_step ORDER BY step_n
CREATE VIEW traceloom_v_profiler_step AS
SELECT s.step_n, s.db_idx, s.device_id, s.name, s.ordinal, s.process_id, s.thread_id,
       s.host_start_ns, s.host_end_ns, (s.host_end_ns - s.host_start_ns) / 1000.0 AS host_us,
       s.anchor_count, min(e.start_ns) AS device_start_ns,
       max(e.start_ns + e.dur_ns) AS device_end_ns,
       (max(e.start_ns + e.dur_ns) - min(e.start_ns)) / 1000.0 AS device_span_us,
       sum(a.compute_ns + a.comm_ns) / 1000.0 AS busy_us, sum(a.idle_ns) / 1000.0 AS idle_us,
       count(c.call_n) AS launched_anchors,
       CASE WHEN count(c.call_n) > 0
            THEN sum(CASE WHEN c.start_ns >= pe.start_ns + pe.dur_ns THEN a.idle_ns ELSE 0 END)
                 / 1000.0 END AS host_wait_us,
       CASE WHEN count(c.call_n) > 0 AND sum(a.compute_ns + a.comm_ns + a.idle_ns) > 0
            THEN round(1.0 * sum(CASE WHEN c.start_ns >= pe.start_ns + pe.dur_ns
                                      THEN a.idle_ns ELSE 0 END)
                       / sum(a.compute_ns + a.comm_ns + a.idle_ns), 4) END AS host_bound_share
FROM traceloom_profiler_step s
LEFT JOIN traceloom_anchor_core a ON a.anchor_n >= s.first_anchor_n AND a.anchor_n < s.end_anchor_n
LEFT JOIN traceloom_event_core e ON e.event_n = a.event_n
LEFT JOIN traceloom_runtime_call_core c ON c.call_n = (SELECT r.call_n FROM traceloom_runtime_device_relation_core r
                     JOIN traceloom_runtime_device_relation_shape rs ON rs.shape_id = r.shape_id
                    WHERE r.relation_n = e.relation_n
                      AND rs.support_state IN ('supported_exact', 'supported_deterministic'))
LEFT JOIN traceloom_anchor_core p
  ON p.anchor_n = a.anchor_n - 1 AND p.db_idx = a.db_idx AND p.device_id = a.device_id
LEFT JOIN traceloom_event_core pe ON pe.event_n = p.event_n
GROUP BY s.rowid;

-- @surface traceloom_v_profiler_step_symbol | one structural symbol in one profiler step | The kernel breakdown of each step (the operator breakdown on a CPU operator plane): anchors, busy time (their own duration), total with idle, and share of the step's total | SELECT step_n, symbol, anchors, busy_us, total_us, share FROM traceloom_v_profiler_step_symbol WHERE step_n = 2 ORDER BY total_us DESC LIMIT 10
CREATE VIEW traceloom_v_profiler_step_symbol AS
SELECT t.step_n, t.db_idx, t.device_id, t.name,
       (SELECT h.symbol FROM traceloom_anchor_shape h WHERE h.shape_id = a.shape_id) AS symbol,
       count(*) AS anchors, sum(e.dur_ns) / 1000.0 AS busy_us,
       sum(a.compute_ns + a.comm_ns + a.idle_ns) / 1000.0 AS total_us,
       round(1.0 * sum(a.compute_ns + a.comm_ns + a.idle_ns)
             / (SELECT sum(b.compute_ns + b.comm_ns + b.idle_ns) FROM traceloom_anchor_core b
                 WHERE b.anchor_n >= t.first_anchor_n AND b.anchor_n < t.end_anchor_n), 4) AS share
FROM traceloom_profiler_step t
-- (CROSS JOIN: the steps, each one's anchors by key range, each anchor's event by key. The
-- anchors have no sqlite_stat1 row, sql/views/00_indexes.sql, so SQLite takes them for a
-- million rows and, left free, walks the events and indexes the anchors by event_n.)
CROSS JOIN traceloom_anchor_core a ON a.anchor_n >= t.first_anchor_n AND a.anchor_n < t.end_anchor_n
CROSS JOIN traceloom_event_core e ON e.event_n = a.event_n
GROUP BY t.step_n, t.device_id, symbol;

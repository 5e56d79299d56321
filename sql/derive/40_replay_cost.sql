-- The replay cost map (outputs.md 3.3 and 5, recovery.md 7.3), derived in SQL from the
-- exact launches and members just published. Lenses stay separate: task_sum_ns (sum of
-- member durations), busy_union_ns (union of member intervals), envelope_ns (last end -
-- first start). Nothing here adds a launch envelope to member durations.

-- @surface traceloom_replay_cost_unit | one exact replay unit | Whether every launch of the unit has a resolved exact body | SELECT support_status, count(*), sum(launch_member_count) FROM traceloom_replay_cost_unit GROUP BY 1
CREATE TABLE traceloom_replay_cost_unit(
  cost_unit_id TEXT NOT NULL, db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL,
  replay_unit_id TEXT NOT NULL, graph_template_id TEXT, launch_member_count INTEGER NOT NULL,
  resolved_launch_count INTEGER NOT NULL, support_status TEXT NOT NULL, reason_codes TEXT
);
INSERT INTO traceloom_replay_cost_unit
SELECT 'replay-cost-unit-' || substr(replay_unit_id, 13), db_idx, device_id, replay_unit_id,
       graph_template_id, count(*), sum(member_count > 0),
       CASE WHEN sum(member_count > 0) = count(*) THEN 'supported' ELSE 'unsupported' END,
       CASE WHEN sum(member_count > 0) = count(*) THEN NULL ELSE 'missing_graph_launch_body' END
FROM traceloom_graph_launch WHERE replay_unit_id IS NOT NULL
GROUP BY replay_unit_id ORDER BY min(graph_launch_occurrence_id);

-- @surface traceloom_replay_cost_launch | one launch of an exact replay unit | Task-sum, busy-union and envelope of the launch's members, split into compute, communication and data movement | SELECT slot_role, count(*), sum(task_sum_ns), sum(busy_union_ns), sum(envelope_ns) FROM traceloom_replay_cost_launch GROUP BY 1
CREATE TABLE traceloom_replay_cost_launch(
  launch_id TEXT NOT NULL, cost_unit_id TEXT NOT NULL, db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL, member_order INTEGER, graph_launch_occurrence_id INTEGER,
  composition_slot_id TEXT, slot_role TEXT, slot_order INTEGER, replay_body_template_id TEXT,
  body_id TEXT, support_status TEXT NOT NULL, reason_code TEXT, member_count INTEGER NOT NULL,
  task_sum_ns INTEGER, busy_union_ns INTEGER, envelope_ns INTEGER, compute_ns INTEGER,
  communication_ns INTEGER, data_move_ns INTEGER, replay_unit_id TEXT, graph_template_id TEXT
);
INSERT INTO traceloom_replay_cost_launch
WITH m AS (
  SELECT launch_id, kind, start_ns, end_ns,
         max(end_ns) OVER (PARTITION BY launch_id ORDER BY start_ns, end_ns, member_n
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
  FROM traceloom_graph_body_member),
agg AS (
  SELECT launch_id, count(*) AS n, sum(end_ns - start_ns) AS task_sum,
         sum(CASE WHEN prev_end IS NULL THEN end_ns - start_ns WHEN end_ns <= prev_end THEN 0
                  ELSE end_ns - max(start_ns, prev_end) END) AS busy,
         max(end_ns) - min(start_ns) AS envelope,
         sum(CASE kind WHEN 'compute' THEN end_ns - start_ns ELSE 0 END) AS compute,
         sum(CASE kind WHEN 'communication' THEN end_ns - start_ns ELSE 0 END) AS comm,
         sum(CASE kind WHEN 'data_move' THEN end_ns - start_ns ELSE 0 END) AS data_move
  FROM m GROUP BY launch_id)
SELECT l.launch_id, 'replay-cost-unit-' || substr(l.replay_unit_id, 13), l.db_idx, l.device_id,
       l.member_order, l.graph_launch_occurrence_id,
       l.graph_template_id || ':slot-' || l.slot_order, l.slot_role, l.slot_order,
       l.replay_body_template_id, l.body_id,
       CASE WHEN a.n > 0 THEN 'supported' ELSE 'unsupported' END,
       CASE WHEN a.n > 0 THEN NULL ELSE 'missing_graph_launch_body' END,
       coalesce(a.n, 0), a.task_sum, a.busy, a.envelope, a.compute, a.comm, a.data_move,
       l.replay_unit_id, l.graph_template_id
FROM traceloom_graph_launch l LEFT JOIN agg a USING (launch_id)
WHERE l.replay_unit_id IS NOT NULL ORDER BY l.graph_launch_occurrence_id;

-- @surface traceloom_replay_cost_stream | one stream lane of one exact launch | Per-lane task-sum and busy-union of a launch | SELECT lane_ordinal, count(*), sum(task_sum_ns), sum(busy_union_ns) FROM traceloom_replay_cost_stream GROUP BY 1
CREATE TABLE traceloom_replay_cost_stream(
  launch_id TEXT NOT NULL, db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL, stream_id INTEGER,
  lane_ordinal INTEGER NOT NULL, lane_consistent INTEGER NOT NULL, member_count INTEGER NOT NULL,
  task_sum_ns INTEGER, busy_union_ns INTEGER, compute_ns INTEGER, communication_ns INTEGER,
  data_move_ns INTEGER
);
INSERT INTO traceloom_replay_cost_stream
WITH m AS (
  SELECT launch_id, db_idx, device_id, stream_id, lane_ordinal, kind, start_ns, end_ns,
         max(end_ns) OVER (PARTITION BY launch_id, lane_ordinal ORDER BY start_ns, end_ns, member_n
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
  FROM traceloom_graph_body_member)
SELECT launch_id, db_idx, device_id, min(stream_id), lane_ordinal,
       count(DISTINCT coalesce(stream_id, -1)) = 1, count(*), sum(end_ns - start_ns),
       sum(CASE WHEN prev_end IS NULL THEN end_ns - start_ns WHEN end_ns <= prev_end THEN 0
                ELSE end_ns - max(start_ns, prev_end) END),
       sum(CASE kind WHEN 'compute' THEN end_ns - start_ns ELSE 0 END),
       sum(CASE kind WHEN 'communication' THEN end_ns - start_ns ELSE 0 END),
       sum(CASE kind WHEN 'data_move' THEN end_ns - start_ns ELSE 0 END)
FROM m GROUP BY launch_id, lane_ordinal ORDER BY launch_id, lane_ordinal;

-- @surface traceloom_replay_cost_member | one exact member with its share of the body | Member timing relative to its launch and its scheduled-work share (ppm of the body task-sum) | SELECT identity, count(*), avg(duration_ns), avg(scheduled_work_share_ppm) FROM traceloom_replay_cost_member GROUP BY 1 ORDER BY 3 DESC LIMIT 10
CREATE TABLE traceloom_replay_cost_member(
  member_id TEXT NOT NULL, launch_id TEXT NOT NULL, cost_unit_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL, composition_slot_id TEXT, slot_role TEXT,
  slot_order INTEGER, replay_body_template_id TEXT, body_id TEXT, stream_id INTEGER,
  lane_ordinal INTEGER, task_ordinal INTEGER, kind TEXT, event_id TEXT, identity TEXT,
  raw_task_id INTEGER, start_ns INTEGER, end_ns INTEGER, duration_ns INTEGER,
  relative_start_ns INTEGER, relative_end_ns INTEGER, scheduled_work_share_ppm INTEGER,
  scheduled_work_share_supported INTEGER, scheduled_work_denominator_body_task_sum_ns INTEGER
);
INSERT INTO traceloom_replay_cost_member
SELECT m.member_id, m.launch_id, c.cost_unit_id, m.db_idx, m.device_id, c.composition_slot_id,
       c.slot_role, c.slot_order, m.replay_body_template_id, m.body_id, m.stream_id,
       m.lane_ordinal, m.task_ordinal, m.kind, m.event_id, m.identity, m.raw_task_id,
       m.start_ns, m.end_ns, m.end_ns - m.start_ns,
       m.start_ns - f.first_start, m.end_ns - f.first_start,
       CASE WHEN c.task_sum_ns > 0 THEN (m.end_ns - m.start_ns) * 1000000 / c.task_sum_ns ELSE 0 END,
       c.task_sum_ns > 0, c.task_sum_ns
FROM traceloom_graph_body_member m
JOIN traceloom_replay_cost_launch c USING (launch_id)
JOIN (SELECT launch_id, min(start_ns) AS first_start FROM traceloom_graph_body_member
      GROUP BY launch_id) f USING (launch_id)
ORDER BY m.member_n;

-- @surface traceloom_replay_cost_aggregate | one body position across all launches of a template slot | Duration distribution (p25, median, p75) of one member position over every replay of the same graph template, slot and body | SELECT slot_role, identity, member_occurrence_count, duration_median_ns FROM traceloom_replay_cost_aggregate ORDER BY duration_median_ns DESC LIMIT 10
CREATE TABLE traceloom_replay_cost_aggregate(
  aggregate_id TEXT NOT NULL, db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL,
  graph_template_id TEXT, slot_role TEXT, aggregation_scope TEXT NOT NULL,
  replay_body_template_id TEXT, stream_id INTEGER, task_ordinal INTEGER, identity TEXT, kind TEXT,
  member_occurrence_count INTEGER NOT NULL, replay_unit_count INTEGER NOT NULL,
  launch_member_count INTEGER NOT NULL, kind_consistent INTEGER NOT NULL,
  lane_consistent INTEGER NOT NULL, distribution_supported INTEGER NOT NULL,
  duration_p25_ns INTEGER, duration_median_ns INTEGER, duration_p75_ns INTEGER,
  scheduled_work_share_p25_ppm INTEGER, scheduled_work_share_median_ppm INTEGER,
  scheduled_work_share_p75_ppm INTEGER,
  lane_ordinal INTEGER
);
-- @surface traceloom_replay_cost_aggregate_member | one member contributing to an aggregate | Which exact members make up each aggregate, in contributor order | SELECT aggregate_id, count(*) FROM traceloom_replay_cost_aggregate_member GROUP BY 1 LIMIT 10
CREATE TABLE traceloom_replay_cost_aggregate_member(
  aggregate_id TEXT NOT NULL, member_id TEXT NOT NULL, db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL, contributor_order INTEGER NOT NULL
);
INSERT INTO traceloom_replay_cost_aggregate_member
SELECT 'replay-cost-aggregate-' || dense_rank() OVER (ORDER BY db_idx, device_id, graph_template_id,
         slot_order, replay_body_template_id, lane_ordinal, task_ordinal, identity),
       member_id, db_idx, device_id,
       row_number() OVER (PARTITION BY db_idx, device_id, graph_template_id, slot_order,
                          replay_body_template_id, lane_ordinal, task_ordinal, identity
                          ORDER BY start_ns, member_id)
FROM (SELECT m.*, l.graph_template_id, c.slot_order AS slot_order_c
      FROM traceloom_replay_cost_member m JOIN traceloom_graph_launch l USING (launch_id)
      JOIN traceloom_replay_cost_launch c USING (launch_id));
INSERT INTO traceloom_replay_cost_aggregate
WITH x AS (
  SELECT a.aggregate_id, m.*, l.graph_template_id AS gt,
         row_number() OVER (PARTITION BY a.aggregate_id ORDER BY m.duration_ns, m.member_id) AS rn_d,
         row_number() OVER (PARTITION BY a.aggregate_id ORDER BY m.scheduled_work_share_ppm, m.member_id) AS rn_s,
         count(*) OVER (PARTITION BY a.aggregate_id) AS cnt
  FROM traceloom_replay_cost_aggregate_member a
  JOIN traceloom_replay_cost_member m USING (member_id)
  JOIN traceloom_graph_launch l ON l.launch_id = m.launch_id)
SELECT aggregate_id, min(db_idx), min(device_id), min(gt), min(slot_role), 'role_collapsed',
       min(replay_body_template_id), min(stream_id), min(task_ordinal), min(identity), min(kind),
       count(*), count(DISTINCT cost_unit_id), count(DISTINCT launch_id),
       count(DISTINCT kind) = 1, count(DISTINCT lane_ordinal) = 1,
       count(DISTINCT kind) = 1 AND count(DISTINCT lane_ordinal) = 1,
       -- nearest-rank percentiles; NULL when kinds or lanes disagree
       CASE WHEN count(DISTINCT kind) = 1 THEN max(CASE WHEN rn_d = max(1, (cnt * 25 + 99) / 100) THEN duration_ns END) END,
       CASE WHEN count(DISTINCT kind) = 1 THEN max(CASE WHEN rn_d = max(1, (cnt * 50 + 99) / 100) THEN duration_ns END) END,
       CASE WHEN count(DISTINCT kind) = 1 THEN max(CASE WHEN rn_d = max(1, (cnt * 75 + 99) / 100) THEN duration_ns END) END,
       CASE WHEN count(DISTINCT kind) = 1 THEN max(CASE WHEN rn_s = max(1, (cnt * 25 + 99) / 100) THEN scheduled_work_share_ppm END) END,
       CASE WHEN count(DISTINCT kind) = 1 THEN max(CASE WHEN rn_s = max(1, (cnt * 50 + 99) / 100) THEN scheduled_work_share_ppm END) END,
       CASE WHEN count(DISTINCT kind) = 1 THEN max(CASE WHEN rn_s = max(1, (cnt * 75 + 99) / 100) THEN scheduled_work_share_ppm END) END,
       min(lane_ordinal)
FROM x GROUP BY aggregate_id ORDER BY min(member_id);

-- @surface traceloom_replay_cost_issue | one reason the replay cost map is incomplete | Typed issues (no_replay_units, empty_replay_unit, missing_graph_launch_body, ...) | SELECT code, count(*) FROM traceloom_replay_cost_issue GROUP BY 1
CREATE TABLE traceloom_replay_cost_issue(
  issue_id TEXT NOT NULL, db_idx INTEGER NOT NULL, device_id INTEGER NOT NULL, code TEXT NOT NULL,
  replay_unit_id TEXT, launch_id TEXT, detail TEXT
);
INSERT INTO traceloom_replay_cost_issue
SELECT 'replay-cost-issue-' || row_number() OVER (ORDER BY db_idx, device_id, code, launch_id),
       db_idx, device_id, code, replay_unit_id, launch_id, detail FROM (
  SELECT db_idx, device_id, 'no_replay_units' AS code, NULL AS replay_unit_id, NULL AS launch_id,
         count(*) || ' graph launch(es) observed, none promoted to an exact replay unit' AS detail
  FROM traceloom_graph_launch GROUP BY db_idx, device_id HAVING count(replay_unit_id) = 0
  UNION ALL
  SELECT db_idx, device_id, 'missing_graph_launch_body', replay_unit_id, launch_id,
         'promoted launch without exact members'
  FROM traceloom_replay_cost_launch WHERE member_count = 0);

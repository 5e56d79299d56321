-- Host windows over runtime calls that the profile lists as a few ascending runs
-- (tests/fixtures/reports/mutations/host_activity_runs.sql): ext/reports/host_window.c merges
-- the runs of each scope group, stably; the observed calls are those worked out by brute
-- force, in (start, end, call) order, the ties included.
SELECT 'analyze', traceloom_analyze('fixtures/reports/host_activity_runs') LIKE '%4 anchors%';
-- include: host_window_states.inc
-- include: host_window_observed.inc
-- the three calls between the first MatMul and Add launches; the 100 calls, the ten with
-- the same times as the first ten and the stream wait between the first Add and the second
-- MatMul
SELECT 'observed counts', (SELECT group_concat(n, ',') FROM (SELECT count(*) AS n
  FROM traceloom_anchor_host_window_call GROUP BY left_anchor_n ORDER BY left_anchor_n)) = '3,111';
-- a tie: the first call at 1260 is listed before its twin, so it comes first
SELECT 'ties in call order', (SELECT group_concat(c.correlation_id, ',') FROM
  (SELECT call_n FROM traceloom_anchor_host_window_call ORDER BY left_anchor_n, observed_order) o
  JOIN traceloom_runtime_call c ON c.call_n = o.call_n WHERE c.start_ns = 1260) = '100,200';

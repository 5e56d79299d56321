-- Host windows over runtime calls that the profile lists out of time order
-- (tests/fixtures/reports/mutations/host_activity_unordered.sql): ext/reports/host_window.c sorts each
-- scope group by (start, end, call) by insertion while that is cheap and by radix passes when
-- it gives up; the observed calls are those worked out by brute force, in the same order.
SELECT 'analyze', traceloom_analyze('fixtures/reports/host_activity_unordered') LIKE '%4 anchors%';
-- include: host_window_states.inc
-- include: host_window_observed.inc
-- the three calls between the first MatMul and Add launches; the 100 reversed calls and the
-- stream wait between the first Add and the second MatMul
SELECT 'observed counts', (SELECT group_concat(n, ',') FROM (SELECT count(*) AS n
  FROM traceloom_anchor_host_window_call GROUP BY left_anchor_n ORDER BY left_anchor_n)) = '3,101';

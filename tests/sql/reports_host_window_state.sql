-- The state of a host window (traceloom_anchor_host_window.state) is read from its endpoints'
-- presence and the windows ext/reports/host_window.c stores as rejected
-- (traceloom_anchor_host_window_rejected); here the rule is worked out again from the two
-- endpoint calls: incompatible_host_domain (3) when their input, provider or clock domain
-- differ, nonmonotonic_host_order (4) when the left call ends after the right one starts. The
-- Kineto trace's launches overlap the previous kernel's, so it has nonmonotonic windows.
SELECT 'analyze', traceloom_analyze('fixtures/kineto/gpu_basic.pt.trace.json') LIKE '%anchors%';
CREATE TEMP VIEW rule AS
SELECT l.anchor_n AS left_anchor_n,
       CASE WHEN l.host_call_n IS NULL OR r.host_call_n IS NULL THEN 1
            WHEN lc.db_idx <> rc.db_idx OR lc.provider IS NOT rc.provider
              OR lc.clock_domain IS NOT rc.clock_domain THEN 3
            WHEN lc.end_ns > rc.start_ns THEN 4
            ELSE 0 END AS state
FROM traceloom_anchor_core l
JOIN traceloom_anchor_core r ON r.anchor_n = l.anchor_n + 1 AND r.db_idx = l.db_idx
 AND r.device_id = l.device_id
LEFT JOIN traceloom_runtime_call lc ON lc.call_n = l.host_call_n
LEFT JOIN traceloom_runtime_call rc ON rc.call_n = r.host_call_n;
SELECT 'some windows are nonmonotonic', (SELECT count(*) FROM rule WHERE state = 4) > 0;
SELECT 'the view''s states are the rule''s', (SELECT count(*) FROM rule u
  JOIN traceloom_anchor_host_window w ON w.left_anchor_n = u.left_anchor_n
  WHERE w.state IS NOT u.state) = 0
  AND (SELECT count(*) FROM rule) = (SELECT count(*) FROM traceloom_anchor_host_window);
SELECT 'rejected: exactly the rule''s 3 and 4', (SELECT count(*) FROM (
  SELECT left_anchor_n, state FROM rule WHERE state IN (3, 4)
  EXCEPT SELECT left_anchor_n, state FROM traceloom_anchor_host_window_rejected)) = 0
  AND (SELECT count(*) FROM traceloom_anchor_host_window_rejected)
    = (SELECT count(*) FROM rule WHERE state IN (3, 4));

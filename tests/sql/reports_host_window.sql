-- Host windows between adjacent anchors (ext/reports/host_window.c, the view
-- traceloom_anchor_host_window over traceloom_anchor_core.host_call_n): the view's state and
-- scope rule and the observed calls C computes with the same rule agree, worked out again here
-- by brute force from the published calls. The fixture (tests/fixtures/reports/host_activity.sql)
-- has two host threads, launch calls, calls between the anchors and a stream wait.
SELECT 'analyze', traceloom_analyze('fixtures/reports/host_activity') LIKE '%4 anchors%';

-- An anchor's endpoint is the call of its event's supported relation.
SELECT 'endpoint = the supported relation''s call', (SELECT count(*) FROM traceloom_anchor_core a
  WHERE a.host_call_n IS NOT (SELECT r.call_n FROM traceloom_runtime_device_relation r
                               WHERE r.event_n = a.event_n
                                 AND r.support_state IN ('supported_exact', 'supported_deterministic'))) = 0;
SELECT 'every anchor here has one', (SELECT count(*) FROM traceloom_anchor_core WHERE host_call_n IS NULL) = 0;

-- One window per adjacent pair of a device; all supported and ordered here.
SELECT 'one window per adjacent pair', (SELECT count(*) FROM traceloom_anchor_host_window)
  = (SELECT count(*) - count(DISTINCT db_idx || '/' || device_id) FROM traceloom_anchor_core);
SELECT 'states', (SELECT group_concat(support_state || ':' || scope_policy, ',') FROM
  (SELECT support_state, scope_policy FROM traceloom_anchor_host_interval ORDER BY left_anchor_n))
  = 'supported_ordered:same_thread,supported_ordered:same_thread,supported_ordered:same_thread';

-- include: host_window_observed.inc
SELECT 'some are observed', (SELECT count(*) FROM traceloom_anchor_host_window_call) > 0;
-- The other thread's calls are outside every same_thread window.
SELECT 'only the window''s thread', (SELECT count(*) FROM traceloom_v_anchor_host_activity
  WHERE observed_thread_id IS NOT thread_id) = 0;

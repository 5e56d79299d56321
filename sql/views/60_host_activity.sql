-- Host activity between adjacent anchors, synchronization calls and the runtime relations
-- seen from anchors and tree nodes (docs/REPORTS.md "Host activity"). The facts are
-- traceloom_anchor_host_window(_call) (ext/reports/host_window.c); everything here reads the
-- public relations and joins on integer keys (anchor_n, call_n, event_n).
--
-- Host context is an observation next to the structure: it never assigns a cause to a device
-- gap and never charges host time to a node.

-- An event's relations: the one its row records (traceloom_event_core.relation_n, a key), and
-- the further ones of an event with several candidate calls (a synchronization call under a
-- reused correlation id: one row per candidate), few, through this partial index. The views
-- below find both with one OR join, which SQLite answers by the two keys (MULTI-INDEX OR).
CREATE INDEX traceloom_runtime_device_relation_candidates
  ON traceloom_runtime_device_relation_core(event_n)
  WHERE runtime_candidate_count > 1 AND event_n IS NOT NULL;

-- @surface traceloom_anchor_runtime_relation | one (anchor, runtime relation) endpoint | The supported and unsupported runtime relations of each anchor's device event (endpoint_kind event), and the graph_launch relation of the launch an exact replay anchor stands for, with its call where one was matched (endpoint_kind graph_launch) | SELECT endpoint_kind, count(*) FROM traceloom_anchor_runtime_relation GROUP BY 1
CREATE VIEW traceloom_anchor_runtime_relation AS
SELECT a.anchor_id, r.relation_id, r.runtime_call_id, r.device_work_id, 'event' AS endpoint_kind,
       a.anchor_n, r.relation_n
FROM traceloom_anchor a
CROSS JOIN traceloom_event_core e ON e.event_n = a.event_n
CROSS JOIN traceloom_runtime_device_relation r
  ON r.relation_n = e.relation_n OR (r.event_n = a.event_n AND r.runtime_candidate_count > 1)
UNION ALL
SELECT l.anchor_id, 'runtime-device-relation-' || l.relation_n AS relation_id,
       l.host_call_id AS runtime_call_id,
       'device-work-graph-launch-' || l.launch_n AS device_work_id,
       'graph_launch' AS endpoint_kind, a.anchor_n, l.relation_n
FROM traceloom_graph_launch l
JOIN traceloom_anchor a ON a.anchor_n = l.anchor_n;

-- @surface traceloom_anchor_host_interval | one pair of adjacent anchors of a device | The ordered host interval between the left anchor's runtime endpoint (its end) and the right anchor's (its start), with a typed support state: supported_ordered, missing_endpoint, ambiguous_endpoint, incompatible_host_domain, nonmonotonic_host_order | SELECT support_state, scope_policy, count(*) FROM traceloom_anchor_host_interval GROUP BY 1, 2
-- The endpoint calls' columns are read in the columns that name them, by the call's key (and
-- its shape's), not by a LEFT JOIN of traceloom_runtime_call per side: SQLite keeps every LEFT
-- JOIN of an aggregate query and runs it for every row, so a count per state or per node
-- (this relation's and traceloom_v_node_host_interval's catalog examples, 741k windows at a
-- million anchors) searched both calls of every window without reading them; a LIMIT query
-- filtered on the state reads them only for its rows.
CREATE VIEW traceloom_anchor_host_interval AS
SELECT 'anchor-host-interval-' || l.anchor_id || '-anchor-' || (w.left_anchor_n + 1) AS interval_id,
       l.db_idx, l.device_id, l.anchor_id AS left_anchor_id,
       'anchor-' || (w.left_anchor_n + 1) AS right_anchor_id,
       'runtime-call-' || w.left_call_n AS left_runtime_call_id,
       'runtime-call-' || w.right_call_n AS right_runtime_call_id,
       w.left_endpoint_count, w.right_endpoint_count,
       (SELECT s.provider FROM traceloom_runtime_call_core c CROSS JOIN traceloom_runtime_call_shape s ON s.shape_id = c.shape_id
         WHERE c.call_n = w.left_call_n) AS provider,
       (SELECT s.clock_domain FROM traceloom_runtime_call_core c CROSS JOIN traceloom_runtime_call_shape s ON s.shape_id = c.shape_id
         WHERE c.call_n = w.left_call_n) AS clock_domain,
       (SELECT c.start_ns + c.dur_ns FROM traceloom_runtime_call_core c
         WHERE c.call_n = w.left_call_n) AS host_start_ns,
       (SELECT c.start_ns FROM traceloom_runtime_call_core c
         WHERE c.call_n = w.right_call_n) AS host_end_ns,
       (SELECT k.name FROM traceloom_anchor_host_window_code k
         WHERE k.kind = 'scope' AND k.code = w.scope) AS scope_policy,
       CASE WHEN w.scope IN (0, 1) THEN (SELECT s.process_id FROM traceloom_runtime_call_core c CROSS JOIN traceloom_runtime_call_shape s ON s.shape_id = c.shape_id
         WHERE c.call_n = w.left_call_n) END AS process_id,
       CASE WHEN w.scope = 0 THEN (SELECT s.thread_id FROM traceloom_runtime_call_core c CROSS JOIN traceloom_runtime_call_shape s ON s.shape_id = c.shape_id
         WHERE c.call_n = w.left_call_n) END AS thread_id,
       (SELECT k.name FROM traceloom_anchor_host_window_code k
         WHERE k.kind = 'state' AND k.code = w.state) AS support_state,
       w.left_anchor_n, w.left_anchor_n + 1 AS right_anchor_n
FROM traceloom_anchor_host_window w
-- after the window (CROSS JOIN), by key: a view that walks to the windows from its own tables
-- (traceloom_v_node_host_interval) does not start from this anchor table instead
CROSS JOIN traceloom_anchor l ON l.anchor_n = w.left_anchor_n;

-- @surface traceloom_v_anchor_host_interval | one pair of adjacent anchors of a device | Every host interval, supported or not (audit the unsupported ones with WHERE support_state <> 'supported_ordered') | SELECT * FROM traceloom_v_anchor_host_interval WHERE support_state <> 'supported_ordered' LIMIT 10
CREATE VIEW traceloom_v_anchor_host_interval AS
SELECT * FROM traceloom_anchor_host_interval;

-- @surface traceloom_anchor_host_activity | one runtime call observed inside a supported host interval | The narrow interval-to-call link, in observed (start, end, call) order | SELECT interval_id, count(*) FROM traceloom_anchor_host_activity GROUP BY 1 ORDER BY 2 DESC LIMIT 10
CREATE VIEW traceloom_anchor_host_activity AS
SELECT 'anchor-host-interval-anchor-' || o.left_anchor_n || '-anchor-' || (o.left_anchor_n + 1)
         AS interval_id,
       'runtime-call-' || o.call_n AS runtime_call_id, o.observed_order, o.left_anchor_n, o.call_n
FROM traceloom_anchor_host_window_call o;

-- @surface traceloom_v_anchor_host_activity | one runtime call observed inside a supported host interval | Each profiler-visible runtime call overlapping the host interval after an anchor: full duration, the clipped overlap and whether it is contained; not a cause of any device gap | SELECT left_anchor_id, api_name, count(*), round(sum(observed_overlap_us), 3) FROM traceloom_v_anchor_host_activity GROUP BY 1, 2 ORDER BY 4 DESC LIMIT 10
CREATE VIEW traceloom_v_anchor_host_activity AS
SELECT i.*, c.runtime_call_id AS observed_runtime_call_id, c.api_name, c.api_type,
       c.start_ns AS observed_start_ns, c.end_ns AS observed_end_ns, c.dur_us AS observed_dur_us,
       ROUND((MIN(c.end_ns, i.host_end_ns) - MAX(c.start_ns, i.host_start_ns)) / 1000.0, 3)
         AS observed_overlap_us,
       CASE WHEN c.start_ns >= i.host_start_ns AND c.end_ns <= i.host_end_ns THEN 'contained'
            ELSE 'boundary_overlap' END AS interval_relation,
       c.process_id AS observed_process_id, c.thread_id AS observed_thread_id,
       c.source_table AS observed_source_table, c.source_key AS observed_source_key,
       o.observed_order, o.call_n AS observed_call_n
-- the observed calls, then their window and call by key, each after the one before (CROSS
-- JOIN): a view that joins this one after its own tables (traceloom_v_node_host_activity)
-- reads them last, by key, rather than starting from them
FROM traceloom_anchor_host_window_call o
CROSS JOIN traceloom_anchor_host_interval i ON i.left_anchor_n = o.left_anchor_n
CROSS JOIN traceloom_runtime_call c ON c.call_n = o.call_n;

-- @surface traceloom_v_runtime_call_family | one runtime call | Each runtime call with its API layer (public acl*/cuda*/hip* or provider internal) and family (launch, graph_launch, memory, synchronize, wait, query, event_record, event_lifecycle, graph_control, other), by name | SELECT api_layer, api_family, count(*) FROM traceloom_v_runtime_call_family GROUP BY 1, 2
-- The layer and family are a chain of name tests: made once per call shape (a handful of
-- rows, grouped so that they are computed before the join), then each call takes its shape's.
CREATE VIEW traceloom_v_runtime_call_family AS
SELECT c.*, f.api_layer, f.api_family
FROM traceloom_runtime_call c
CROSS JOIN traceloom_runtime_call_core k ON k.call_n = c.call_n
JOIN (SELECT s.shape_id,
             CASE WHEN lower(coalesce(s.api_name, '')) GLOB 'acl*' OR lower(coalesce(s.api_name, '')) GLOB 'cuda*'
                    OR lower(coalesce(s.api_name, '')) GLOB 'hip*' THEN 'public'
                  ELSE 'provider_internal_or_unknown' END AS api_layer,
             CASE WHEN lower(coalesce(s.api_name, '')) LIKE '%wait%' THEN 'wait'
                  WHEN lower(coalesce(s.api_name, '')) LIKE '%synchronize%' THEN 'synchronize'
                  WHEN lower(coalesce(s.api_name, '')) LIKE '%query%' THEN 'query'
                  WHEN lower(coalesce(s.api_name, '')) LIKE '%eventrecord%'
                    OR lower(coalesce(s.api_name, '')) LIKE '%recordevent%' THEN 'event_record'
                  WHEN lower(coalesce(s.api_name, '')) LIKE '%eventcreate%'
                    OR lower(coalesce(s.api_name, '')) LIKE '%createevent%'
                    OR lower(coalesce(s.api_name, '')) LIKE '%eventdestroy%'
                    OR lower(coalesce(s.api_name, '')) LIKE '%destroyevent%' THEN 'event_lifecycle'
                  WHEN lower(coalesce(s.api_name, '')) LIKE '%graphlaunch%'
                    OR lower(coalesce(s.api_name, '')) LIKE '%aclmdlriexecuteasync%' THEN 'graph_launch'
                  WHEN lower(coalesce(s.api_name, '')) LIKE '%launch%' THEN 'launch'
                  WHEN lower(coalesce(s.api_name, '')) LIKE '%memcpy%'
                    OR lower(coalesce(s.api_name, '')) LIKE '%memset%'
                    OR lower(coalesce(s.api_name, '')) LIKE '%inplacecopy%' THEN 'memory'
                  WHEN lower(coalesce(s.api_name, '')) LIKE '%capture%'
                    OR lower(coalesce(s.api_name, '')) LIKE '%graph%' THEN 'graph_control'
                  ELSE 'other' END AS api_family
      FROM traceloom_runtime_call_shape s GROUP BY s.shape_id) f ON f.shape_id = k.shape_id;

-- @surface traceloom_anchor_host_api_summary | one (host interval, API family) with observed calls | Per supported host interval, the number of public API calls of each family, distinct names, summed call durations and clipped overlaps (scheduled measures: calls may overlap) | SELECT api_family, count(*), sum(call_count) FROM traceloom_anchor_host_api_summary GROUP BY 1
CREATE VIEW traceloom_anchor_host_api_summary AS
SELECT a.interval_id, f.api_family, count(*) AS call_count,
       count(DISTINCT a.api_name) AS distinct_api_name_count,
       ROUND(SUM(a.observed_dur_us), 3) AS scheduled_call_us,
       ROUND(SUM(a.observed_overlap_us), 3) AS scheduled_overlap_us
FROM traceloom_v_anchor_host_activity a
JOIN traceloom_v_runtime_call_family f ON f.call_n = a.observed_call_n
WHERE f.api_layer = 'public'
GROUP BY a.interval_id, f.api_family;

-- @surface traceloom_v_node_host_interval | one (node occurrence, covered anchor) with the host interval after that anchor | Host intervals placed after each anchor of a tree node occurrence (placement_semantics after_anchor_interval: context following a structural position, not CPU cost owned by the node) | SELECT node_id, support_state, count(*) FROM traceloom_v_node_host_interval WHERE coverage_kind = 'self' GROUP BY 1, 2 LIMIT 20
-- The anchor's own columns come from the pair's anchor_n (its index by the tree's first anchor,
-- the right anchor's symbol and role by key when asked for): joining traceloom_anchor for the
-- anchor and for its right neighbour searched two more anchor rows for every (occurrence,
-- anchor) pair, 741k of them for the node-level example at a million anchors. The right
-- neighbour exists wherever the window does (its right anchor is the next one on the device).
-- The rows of traceloom_tree_node_anchor (each node occurrence with the anchors it covers),
-- walked from the storage (traceloom_node_anchor_walk, a chain of CROSS JOINs), then the
-- window after each anchor, also after it (CROSS JOIN): a query that picks a node by its text
-- id filters the node table once and reads that node's rows by key. Through the readable
-- view, SQLite started from every anchor or from the observed calls on the 1M bench profile
-- and built automatic indexes on the node ids and occurrences (2 to 5 s a query).
CREATE VIEW traceloom_v_node_host_interval AS
SELECT w.node_id, w.local_node_id, 'native_report_tree' AS view_name, w.occurrence_idx,
       w.anchor_n - w.anchor_first_n + 1 AS anchor_order,
       CASE WHEN w.node_kind = 1 THEN 'self' ELSE 'body' END AS coverage_kind,
       (SELECT p.repeat_context FROM traceloom_position_occurrence p
         WHERE p.occurrence_n = w.occurrence_n) AS repeat_context,
       w.anchor_n - (SELECT t.first_anchor_n FROM traceloom_tree_core t
                      WHERE t.tree_n = w.tree_n) + 1 AS anchor_idx,
       w.anchor_n - (SELECT t.first_anchor_n FROM traceloom_tree_core t
                      WHERE t.tree_n = w.tree_n) + 2 AS right_anchor_idx,
       (SELECT s.symbol FROM traceloom_anchor_core x
          JOIN traceloom_anchor_shape s ON s.shape_id = x.shape_id
         WHERE x.anchor_n = w.anchor_n + 1) AS right_anchor_symbol,
       (SELECT s.role FROM traceloom_anchor_core x
          JOIN traceloom_anchor_shape s ON s.shape_id = x.shape_id
         WHERE x.anchor_n = w.anchor_n + 1) AS right_anchor_role,
       ROUND((h.host_end_ns - h.host_start_ns) / 1000.0, 3) AS host_interval_us,
       'after_anchor_interval' AS placement_semantics, w.node_n, w.occurrence_n, h.*
FROM traceloom_node_anchor_walk w
CROSS JOIN traceloom_anchor_host_interval h ON h.left_anchor_n = w.anchor_n;

-- @surface traceloom_v_node_host_activity | one runtime call observed after an anchor of a node occurrence | The runtime calls inside the host interval after each anchor of a tree node occurrence; sum observed_overlap_us per API for a scheduled-call distribution, never a host busy union | SELECT node_id, api_name, count(*), round(sum(observed_overlap_us), 3) FROM traceloom_v_node_host_activity WHERE coverage_kind = 'self' GROUP BY 1, 2 ORDER BY 4 DESC LIMIT 10
-- The node's columns of traceloom_v_node_host_interval, then the anchor's host activity.
CREATE VIEW traceloom_v_node_host_activity AS
SELECT i.node_id, i.local_node_id, i.view_name, i.occurrence_idx, i.anchor_order,
       i.coverage_kind, i.repeat_context, i.anchor_idx, i.right_anchor_idx,
       i.right_anchor_symbol, i.right_anchor_role, i.host_interval_us, i.placement_semantics,
       i.node_n, i.occurrence_n, a.*
FROM traceloom_v_node_host_interval i
CROSS JOIN traceloom_v_anchor_host_activity a ON a.left_anchor_n = i.left_anchor_n
-- implied by the join; tested as soon as the window's left anchor is read, it spares the rest
-- of the window (its right anchor and endpoint calls) for the many anchors with no observed
-- call, when the walk covers many nodes
WHERE EXISTS (SELECT 1 FROM traceloom_anchor_host_window_call x
              WHERE x.left_anchor_n = i.left_anchor_n);

-- @surface traceloom_v_sync_runtime_call | one relation of a synchronization action | Profiler-visible synchronization actions with their runtime endpoints (CUDA synchronization records; Ascend EVENT_RECORD / EVENT_WAIT tasks), open and ambiguous outcomes included; action-level evidence, not record/wait pairing or causality | SELECT sync_kind, support_state, count(*) FROM traceloom_v_sync_runtime_call GROUP BY 1, 2
-- Which device work is a synchronization action is a property of its event shape (source table
-- and symbol: device_source_table and device_symbol, the event shape's columns where the
-- relation has an event), tested on the view's columns as soon as the event and its shape are
-- joined, which traceloom_v_runtime_device does before the relation's state, the call and its
-- shape: those are searched only for the synchronization actions (a quarter of 1M relations
-- at a million tasks), whose provider (the call shape's) is compared last. Through a subquery
-- on the event and its shape, tested with the provider after the call's joins, every relation
-- was joined to its state and call first (synchronization-actions 7.58 -> 6.20 G instructions).
CREATE VIEW traceloom_v_sync_runtime_call AS
SELECT device_work_id AS sync_action_id, device_symbol AS sync_kind, *
FROM traceloom_v_runtime_device
WHERE event_n IS NOT NULL
  AND (device_source_table = 'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION'
       OR (device_source_table IN ('TASK', 'AscendTask')
           AND device_symbol IN ('EVENT_RECORD', 'EVENT_WAIT')))
  AND provider = CASE WHEN device_source_table = 'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION'
                      THEN 'cuda' ELSE 'ascend' END;

-- @surface traceloom_v_anchor_runtime_call | one (anchor, runtime relation) endpoint | Each anchor's runtime endpoints with the full relation, call and work columns (an exact replay anchor's graph_launch relation as endpoint_kind graph_launch) | SELECT anchor_symbol, api_name, support_state, count(*) FROM traceloom_v_anchor_runtime_call GROUP BY 1, 2, 3 ORDER BY 4 DESC LIMIT 10
-- An exact replay anchor's launch: its event has no relation of its own, so its launch's
-- graph_launch relation (traceloom_anchor_runtime_relation's graph_launch endpoint) takes the
-- event's place in the one join, looked up by the anchor key only where the event has none
-- (as traceloom_v_node_runtime_call does), not a UNION ALL arm: a compound view is read as a
-- co-routine that computes every column of every row, 2.5x the CPU of the example at a
-- million tasks (3.4-4.5 s against 1.3-1.4).
CREATE VIEW traceloom_v_anchor_runtime_call AS
SELECT a.anchor_id, a.db_idx, a.device_id, a.anchor_idx, a.symbol AS anchor_symbol,
       a.role AS anchor_role, a.start_ns AS anchor_start_ns, a.end_ns AS anchor_end_ns,
       CASE WHEN d.event_n IS NULL THEN 'graph_launch' ELSE 'event' END AS endpoint_kind, d.*
FROM traceloom_anchor a
CROSS JOIN traceloom_event_core e ON e.event_n = a.event_n
CROSS JOIN traceloom_v_runtime_device d
  ON d.relation_n = COALESCE(e.relation_n, (SELECT l.relation_n FROM traceloom_graph_launch l
                                              WHERE l.anchor_n = a.anchor_n))
  OR (d.event_n = a.event_n AND d.runtime_candidate_count > 1);

-- @surface traceloom_v_node_runtime_call | one (node occurrence, covered anchor, runtime relation) | Walk from a tree node to the runtime calls of its anchors (an exact replay anchor's graph_launch relation included), or from one call back to every structural placement | SELECT node_id, occurrence_idx, anchor_order, runtime_call_id, api_name, support_state FROM traceloom_v_node_runtime_call WHERE coverage_kind = 'self' LIMIT 20
CREATE VIEW traceloom_v_node_runtime_call AS
SELECT na.node_id,
       na.local_node_id,
       na.view_name, na.occurrence_idx, na.anchor_order, na.coverage_kind, na.repeat_context,
       a.anchor_idx, na.node_n, na.occurrence_n, d.*
FROM traceloom_tree_node_anchor na
CROSS JOIN traceloom_anchor a ON a.anchor_n = na.anchor_n
CROSS JOIN traceloom_event_core e ON e.event_n = a.event_n
-- an exact replay anchor's launch (traceloom_anchor_runtime_relation's graph_launch endpoint):
-- a launch anchor's event has no relation of its own, so where the event has none its launch
-- is looked up by the anchor key (traceloom_graph_launch_anchor_n, only then: COALESCE reads
-- its arguments in turn) and the launch's graph_launch relation takes the event's place in
-- the one OR join. The node anchors cannot be searched by anchor, so a UNION ALL arm from the
-- launches is not possible, and one from the node anchors walks them all twice. A third OR
-- term with a LEFT JOIN of the launches cost +24% VM steps on a full read at 1M anchors.
CROSS JOIN traceloom_v_runtime_device d
  ON d.relation_n = coalesce(e.relation_n, (SELECT l.relation_n FROM traceloom_graph_launch l
                                            WHERE l.anchor_n = a.anchor_n))
  OR (d.event_n = a.event_n AND d.runtime_candidate_count > 1);

-- @surface traceloom_v_aux_runtime_call | one (auxiliary link, runtime relation) | The runtime calls behind the auxiliary work linked to each anchor | SELECT anchor_id, aux_kind, api_name, support_state FROM traceloom_v_aux_runtime_call LIMIT 20
CREATE VIEW traceloom_v_aux_runtime_call AS
SELECT l.anchor_id, l.aux_event_id, l.aux_order, l.aux_kind, l.aux_dur_us, d.*
FROM traceloom_aux_link l
CROSS JOIN traceloom_event_core e ON e.event_n = l.aux_event_n
CROSS JOIN traceloom_v_runtime_device d
  ON d.relation_n = e.relation_n OR (d.event_n = l.aux_event_n AND d.runtime_candidate_count > 1);

-- Bubbles joined to their host context (outputs.md section 7): the runtime calls observed in
-- the host interval delimited by the adjacent anchors' runtime endpoints, and their API-family
-- distribution per structural position. Contextual distributions, never a bubble's cause.

-- @surface traceloom_v_structure_bubble_runtime_call | one runtime call observed in a bubble's host interval | Each bubble with the profiler-visible runtime calls of its supported host interval, their overlap, layer and family | SELECT bubble_id, api_family, api_name, observed_overlap_us FROM traceloom_v_structure_bubble_runtime_call ORDER BY bubble_id, observed_order LIMIT 20
CREATE VIEW traceloom_v_structure_bubble_runtime_call AS
SELECT bubble.*, call.runtime_call_id, call.api_name, call.api_type,
       call.start_ns AS runtime_start_ns, call.end_ns AS runtime_end_ns,
       call.dur_us AS runtime_dur_us,
       ROUND((MIN(call.end_ns, bubble.host_end_ns) - MAX(call.start_ns, bubble.host_start_ns)) / 1000.0, 3)
         AS observed_overlap_us,
       CASE WHEN call.start_ns >= bubble.host_start_ns AND call.end_ns <= bubble.host_end_ns
            THEN 'contained' ELSE 'boundary_overlap' END AS interval_relation,
       call.process_id AS runtime_process_id, call.thread_id AS runtime_thread_id,
       call.source_table AS runtime_source_table, call.source_key AS runtime_source_key,
       o.observed_order, call.api_layer, call.api_family
-- from the observed calls (few), each to its bubble (the window's right anchor) and call by key
FROM traceloom_anchor_host_window_call o
CROSS JOIN traceloom_structure_bubble_occurrence bubble ON bubble.right_anchor_n = o.left_anchor_n + 1
CROSS JOIN traceloom_v_runtime_call_family call ON call.call_n = o.call_n;

-- @surface traceloom_v_structure_bubble_api_occurrence | one (bubble, public API family) | Per bubble, the public runtime calls of each family in its host interval: count, distinct names, summed call and overlap durations (scheduled measures) | SELECT api_family, count(*), sum(call_count) FROM traceloom_v_structure_bubble_api_occurrence GROUP BY 1
CREATE VIEW traceloom_v_structure_bubble_api_occurrence AS
SELECT bubble_id, api_family, COUNT(*) AS call_count, COUNT(DISTINCT api_name) AS distinct_api_name_count,
       ROUND(SUM(runtime_dur_us), 3) AS scheduled_call_us,
       ROUND(SUM(observed_overlap_us), 3) AS scheduled_overlap_us
FROM traceloom_v_structure_bubble_runtime_call
WHERE api_layer = 'public'
GROUP BY bubble_id, api_family;

-- @surface traceloom_v_structure_bubble_host_context | one (structural position, API family or none) | Every structural position with bubbles, its typed host-observation support counts, and the public API families observed upstream of its bubbles (a NULL family keeps unsupported-only or supported-but-empty positions) | SELECT right_local_node_id, bubble_occurrence_count, host_observation_coverage, api_family, presence_count FROM traceloom_v_structure_bubble_host_context ORDER BY total_bubble_us DESC LIMIT 20
-- The families are summed from the observed calls (traceloom_anchor_host_window_call, few)
-- outwards: per bubble, then per position; the positions are computed once.
CREATE VIEW traceloom_v_structure_bubble_host_context AS
WITH bubble_family AS (
  SELECT oc.node_n, f.api_family, COUNT(*) AS call_count,
         COUNT(DISTINCT f.api_name) AS distinct_api_name_count,
         SUM(f.dur_us) AS scheduled_call_us,
         SUM(ROUND((MIN(f.end_ns, hr.start_ns) - MAX(f.start_ns, hl.end_ns)) / 1000.0, 3))
           AS scheduled_overlap_us
  FROM traceloom_anchor_host_window_call o
  CROSS JOIN traceloom_anchor_core r ON r.anchor_n = o.left_anchor_n + 1
  CROSS JOIN traceloom_position_occurrence_core oc ON oc.occurrence_n = r.occurrence_n
  CROSS JOIN traceloom_anchor_host_window w ON w.left_anchor_n = o.left_anchor_n
  CROSS JOIN traceloom_v_runtime_call_family f ON f.call_n = o.call_n
  LEFT JOIN traceloom_runtime_call hl ON hl.call_n = w.left_call_n
  LEFT JOIN traceloom_runtime_call hr ON hr.call_n = w.right_call_n
  WHERE ROUND(r.idle_ns / 1000.0, 3) > 0 AND f.api_layer = 'public'
  GROUP BY o.left_anchor_n, f.api_family
), api_population AS (
  SELECT node_n, api_family, COUNT(*) AS presence_count,
         SUM(call_count) AS total_call_count,
         SUM(distinct_api_name_count) AS summed_distinct_api_names,
         ROUND(SUM(scheduled_call_us), 3) AS total_scheduled_call_us,
         ROUND(SUM(scheduled_overlap_us), 3) AS total_scheduled_overlap_us
  FROM bubble_family
  GROUP BY node_n, api_family
)
SELECT p.*, api.api_family, api.presence_count,
       ROUND(api.presence_count * 1.0 / p.bubble_occurrence_count, 6)
         AS presence_fraction_of_all_bubbles,
       ROUND(api.presence_count * 1.0 / p.supported_host_occurrence_count, 6)
         AS presence_fraction_of_observable_bubbles,
       api.total_call_count,
       ROUND(api.total_call_count * 1.0 / p.bubble_occurrence_count, 3) AS avg_calls_per_bubble,
       api.summed_distinct_api_names,
       ROUND(api.total_call_count * 1.0 / p.supported_host_occurrence_count, 3)
         AS avg_calls_per_observable_bubble,
       api.total_scheduled_call_us,
       ROUND(api.total_scheduled_call_us / p.bubble_occurrence_count, 3)
         AS avg_scheduled_call_us_per_bubble,
       api.total_scheduled_overlap_us,
       ROUND(api.total_scheduled_overlap_us / p.bubble_occurrence_count, 3)
         AS avg_scheduled_overlap_us_per_bubble,
       CASE WHEN api.api_family IS NOT NULL
            THEN 'call durations may overlap; counts and scheduled durations are observations, not device-cause attribution'
            ELSE 'no compatible host API-family observation; inspect typed host support counts'
       END AS interpretation_note
FROM traceloom_structure_bubble_position p
LEFT JOIN api_population api ON api.node_n = p.right_node_n;

-- @surface traceloom_v_structure_bubble_api_stats | one (structural position, API family) observed upstream of its bubbles | How often each public API family is present upstream of a position's bubbles, per bubble and per observable bubble | SELECT right_local_node_id, api_family, presence_count, presence_fraction_of_all_bubbles FROM traceloom_v_structure_bubble_api_stats ORDER BY total_bubble_us DESC LIMIT 20
CREATE VIEW traceloom_v_structure_bubble_api_stats AS
SELECT db_idx, device_id, view_name, structural_position_id, right_node_id, right_local_node_id,
       right_node_symbol, bubble_occurrence_count,
       supported_host_occurrence_count AS host_observable_occurrence_count, total_bubble_us,
       avg_bubble_us, min_bubble_us, max_bubble_us, api_family, presence_count,
       presence_fraction_of_all_bubbles, presence_fraction_of_observable_bubbles,
       host_observation_coverage, total_call_count, avg_calls_per_bubble,
       summed_distinct_api_names, avg_calls_per_observable_bubble, total_scheduled_call_us,
       avg_scheduled_call_us_per_bubble, total_scheduled_overlap_us,
       avg_scheduled_overlap_us_per_bubble, interpretation_note
FROM traceloom_v_structure_bubble_host_context
WHERE api_family IS NOT NULL;

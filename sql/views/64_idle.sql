-- Idle evidence at the tree's nodes (docs/REPORTS.md "Idle evidence"): the explained idle of
-- the anchors each node covers. Levels are not additive: a node's figure already contains its
-- descendants' (a root holds every anchor's).

-- @surface traceloom_node_idle_explanation | one (tree node, category, evidence level) | Explained idle in the prelude windows of the anchors a node covers, summed per category and level (nested nodes repeat their descendants' time) | SELECT node_id, category, slice_count, duration_ns FROM traceloom_node_idle_explanation ORDER BY duration_ns DESC LIMIT 20
CREATE VIEW traceloom_node_idle_explanation AS
SELECT na.node_id, i.run_id, na.db_idx, na.device_id, na.view_name, i.category, i.evidence_level,
       SUM(i.slice_count) AS slice_count, SUM(i.duration_ns) AS duration_ns,
       SUM(i.duration_ns) / 1000.0 AS duration_us
FROM traceloom_viz_node_anchor na
CROSS JOIN traceloom_anchor_idle_explanation i ON i.anchor_id = na.anchor_id
 AND i.db_idx = na.db_idx AND i.device_id = na.device_id
GROUP BY na.node_id, i.run_id, na.db_idx, na.device_id, na.view_name, i.category, i.evidence_level;

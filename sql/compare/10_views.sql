-- Views over the comparison tables (00_tables.sql): per-iteration figures, deltas and
-- ratios, every effect, the symbol summary under each node, and the summary a person reads
-- first. Every join is on a primary key (node_key, pair_id) or a range of node_key.

-- @surface traceloom_compare_node_cost | one node of the merged tree with per-unit figures | Per iteration (Repeat) or per occurrence: total, compute, comm and idle of both runs, their delta and ratio, with the node's effects and noise status | SELECT path, base_avg_total_us, new_avg_total_us, delta_avg_total_us, ratio_avg_total, noise FROM traceloom_compare_node_cost WHERE status = 'matched' ORDER BY abs(delta_total_us) DESC LIMIT 10
CREATE VIEW traceloom_compare_node_cost AS
SELECT x.*,
       ROUND(x.new_avg_total_us - x.base_avg_total_us, 3) AS delta_avg_total_us,
       ROUND(x.new_avg_compute_us - x.base_avg_compute_us, 3) AS delta_avg_compute_us,
       ROUND(x.new_avg_comm_us - x.base_avg_comm_us, 3) AS delta_avg_comm_us,
       ROUND(x.new_avg_idle_us - x.base_avg_idle_us, 3) AS delta_avg_idle_us,
       ROUND(x.new_avg_total_us / NULLIF(x.base_avg_total_us, 0), 6) AS ratio_avg_total,
       ROUND(COALESCE(x.new_total_us, 0) - COALESCE(x.base_total_us, 0), 3) AS delta_total_us
FROM (
  SELECT n.node_key, n.pair_id, n.parent_key, n.depth,
         CASE WHEN n.alignment IN ('added', 'removed') THEN n.alignment ELSE 'matched' END AS status,
         n.alignment, n.node_type, n.label, n.path, n.family, n.base_symbol, n.new_symbol,
         n.base_occurrences, n.new_occurrences, n.base_units, n.new_units,
         CASE WHEN n.node_type = 'Repeat' THEN n.base_units / NULLIF(n.base_occurrences, 0) END AS base_repeat_count,
         CASE WHEN n.node_type = 'Repeat' THEN n.new_units / NULLIF(n.new_occurrences, 0) END AS new_repeat_count,
         (n.base_compute_ns + n.base_comm_ns + n.base_idle_ns) / 1000.0 AS base_total_us,
         (n.new_compute_ns + n.new_comm_ns + n.new_idle_ns) / 1000.0 AS new_total_us,
         ROUND((n.base_compute_ns + n.base_comm_ns + n.base_idle_ns) / 1000.0 / NULLIF(n.base_units, 0), 3) AS base_avg_total_us,
         ROUND(n.base_compute_ns / 1000.0 / NULLIF(n.base_units, 0), 3) AS base_avg_compute_us,
         ROUND(n.base_comm_ns / 1000.0 / NULLIF(n.base_units, 0), 3) AS base_avg_comm_us,
         ROUND(n.base_idle_ns / 1000.0 / NULLIF(n.base_units, 0), 3) AS base_avg_idle_us,
         ROUND((n.new_compute_ns + n.new_comm_ns + n.new_idle_ns) / 1000.0 / NULLIF(n.new_units, 0), 3) AS new_avg_total_us,
         ROUND(n.new_compute_ns / 1000.0 / NULLIF(n.new_units, 0), 3) AS new_avg_compute_us,
         ROUND(n.new_comm_ns / 1000.0 / NULLIF(n.new_units, 0), 3) AS new_avg_comm_us,
         ROUND(n.new_idle_ns / 1000.0 / NULLIF(n.new_units, 0), 3) AS new_avg_idle_us,
         n.base_unit_stddev_ns / 1000.0 AS base_unit_stddev_us,
         n.new_unit_stddev_ns / 1000.0 AS new_unit_stddev_us,
         n.rate_ns / 1000.0 AS rate_us, n.count_ns / 1000.0 AS count_us,
         n.structure_ns / 1000.0 AS structure_us, n.noise,
         n.noise_threshold_ns / 1000.0 AS noise_threshold_us
  FROM traceloom_compare_node n
) x;

-- @surface traceloom_compare_effect | one effect of one node | Every contribution to the end-to-end delta, unranked: per-unit changes (slower / faster), iteration counts (more / fewer), added and removed subtrees; they sum to the delta | SELECT effect, path, contribution_ns, noise FROM traceloom_compare_effect ORDER BY abs(contribution_ns) DESC LIMIT 20
CREATE VIEW traceloom_compare_effect AS
SELECT pair_id, node_key, CASE WHEN rate_ns > 0 THEN 'slower' ELSE 'faster' END AS effect,
       rate_ns AS contribution_ns, path, label, noise
FROM traceloom_compare_node WHERE rate_ns <> 0
UNION ALL
SELECT pair_id, node_key, CASE WHEN count_ns > 0 THEN 'more_iterations' ELSE 'fewer_iterations' END,
       count_ns, path, label, NULL
FROM traceloom_compare_node WHERE count_ns <> 0
UNION ALL
SELECT pair_id, node_key, alignment, structure_ns, path, label, NULL
FROM traceloom_compare_node WHERE structure_ns IS NOT NULL;

-- @surface traceloom_compare_symbol | one (node, symbol) | The kernel summary under each node of both runs: occurrences and total per structural symbol (matched atoms keyed by the new run's symbol), delta and ratio | SELECT symbol, base_symbols, base_total_us, new_total_us, delta_total_us FROM traceloom_compare_symbol WHERE node_key = 1 ORDER BY abs(delta_total_us) DESC LIMIT 10
CREATE VIEW traceloom_compare_symbol AS
SELECT p.pair_id, p.node_key, p.path AS under_path,
       COALESCE(l.new_symbol, l.base_symbol) AS symbol,
       group_concat(DISTINCT l.base_symbol) AS base_symbols,
       max(l.family) AS family,
       count(*) AS nodes,
       COALESCE(sum(l.base_occurrences), 0) AS base_occurrences,
       COALESCE(sum(l.new_occurrences), 0) AS new_occurrences,
       ROUND(COALESCE(sum(l.base_compute_ns + l.base_comm_ns + l.base_idle_ns), 0) / 1000.0, 3) AS base_total_us,
       ROUND(COALESCE(sum(l.new_compute_ns + l.new_comm_ns + l.new_idle_ns), 0) / 1000.0, 3) AS new_total_us,
       ROUND((COALESCE(sum(l.new_compute_ns + l.new_comm_ns + l.new_idle_ns), 0) -
              COALESCE(sum(l.base_compute_ns + l.base_comm_ns + l.base_idle_ns), 0)) / 1000.0, 3) AS delta_total_us,
       ROUND(1.0 * sum(l.new_compute_ns + l.new_comm_ns + l.new_idle_ns) /
             NULLIF(sum(l.base_compute_ns + l.base_comm_ns + l.base_idle_ns), 0), 6) AS ratio_total
FROM traceloom_compare_node p
JOIN traceloom_compare_node l ON l.node_key >= p.node_key AND l.node_key < p.end_key
WHERE l.node_type = 'Atom'
GROUP BY p.node_key, COALESCE(l.new_symbol, l.base_symbol);

-- @surface traceloom_compare_summary | one line of the comparison summary | Read this first: the end-to-end delta of each tree pair (rank 0), then its top changes with their path, per-iteration figures, share of the delta and noise status | SELECT rank, change, path, base_per_unit_us, new_per_unit_us, delta_us, share_of_delta, noise FROM traceloom_compare_summary
CREATE VIEW traceloom_compare_summary AS
SELECT t.pair_id, 0 AS rank, 'end_to_end' AS change,
       printf('db %s device %s -> db %s device %s', COALESCE(t.base_db_idx, '-'),
              COALESCE(t.base_device_id, '-'), COALESCE(t.new_db_idx, '-'),
              COALESCE(t.new_device_id, '-')) AS path,
       1 AS base_units, 1 AS new_units,
       ROUND(t.base_total_ns / 1000.0, 3) AS base_per_unit_us,
       ROUND(t.new_total_ns / 1000.0, 3) AS new_per_unit_us,
       ROUND((t.new_total_ns - t.base_total_ns) / 1000.0, 3) AS delta_us,
       ROUND(1.0 * t.new_total_ns / NULLIF(t.base_total_ns, 0), 6) AS ratio,
       1.0 AS share_of_delta, NULL AS noise, NULL AS node_key
FROM traceloom_compare_tree t
UNION ALL
SELECT r.pair_id, r.rank, r.effect, n.path, n.base_units, n.new_units,
       ROUND((n.base_compute_ns + n.base_comm_ns + n.base_idle_ns) / 1000.0 / NULLIF(n.base_units, 0), 3),
       ROUND((n.new_compute_ns + n.new_comm_ns + n.new_idle_ns) / 1000.0 / NULLIF(n.new_units, 0), 3),
       ROUND(r.contribution_ns / 1000.0, 3),
       ROUND((1.0 * (n.new_compute_ns + n.new_comm_ns + n.new_idle_ns) / NULLIF(n.new_units, 0)) /
             NULLIF(1.0 * (n.base_compute_ns + n.base_comm_ns + n.base_idle_ns) / NULLIF(n.base_units, 0), 0), 6),
       ROUND(1.0 * r.contribution_ns / NULLIF(t.new_total_ns - t.base_total_ns, 0), 4),
       CASE WHEN r.effect IN ('slower', 'faster') THEN n.noise END, n.node_key
FROM traceloom_compare_rank r
JOIN traceloom_compare_node n ON n.node_key = r.node_key
JOIN traceloom_compare_tree t ON t.pair_id = r.pair_id
ORDER BY 1, 2;

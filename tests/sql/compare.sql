-- compare.sql: traceloom_compare through the SQL surface, on the generated pairs of
-- tests/fixtures/make_compare.py (fixtures/compare/): the same model (1 prefill + 6 decode
-- steps, 4 layers of 11 operators, no timing jitter) with one edit each. `slow` makes decode
-- attention (IncreFlashAttention, 25,000 ns) in layer 2 10% slower: 2,500 ns more in each of
-- the 6 decode steps, 15,000 ns in all, and nothing else moves.
.load ./traceloom
.shell rm -f compare-base.db compare-other.db

-- The base analysis as a file, then the new analysis in this database.
SELECT traceloom_analyze('fixtures/compare/base');
VACUUM INTO 'compare-base.db';
SELECT traceloom_analyze('fixtures/compare/slow');
SELECT 'compare: returns a one-line summary naming the top change',
  traceloom_compare('compare-base.db') LIKE 'traceloom_compare: 1 tree pair(s)%top change: slower%IncreFlashAttention%';
SELECT 'compare: one run row with the base path and the canonical options',
  (SELECT count(*) FROM traceloom_compare_run WHERE base_path = 'compare-base.db'
     AND options_json = '{"match":"auto","noise_z":2,"top":20}' AND tree_pairs = 1) = 1;

-- End to end: the root occurrence totals of the two analyses.
SELECT 'tree: new total is the new analysis root occurrence total',
  (SELECT new_total_ns FROM traceloom_compare_tree) =
  (SELECT CAST(round(total_us * 1000) AS INTEGER) FROM traceloom_position_occurrence WHERE parent_n IS NULL);
SELECT 'tree: the delta is the 15,000 ns the edit added',
  (SELECT new_total_ns - base_total_ns FROM traceloom_compare_tree) = 15000;
SELECT 'tree: all of it per-iteration change, none from counts, added or removed work',
  (SELECT rate_ns = 15000 AND count_ns = 0 AND added_ns = 0 AND removed_ns = 0 AND nodes_added = 0
     AND nodes_removed = 0 AND nodes_matched_by_family = 0 AND alignment = 'exact' FROM traceloom_compare_tree);
SELECT 'tree: one merged node per position path of the new analysis',
  (SELECT nodes_matched FROM traceloom_compare_tree) =
  (SELECT count(DISTINCT rooted_position_path) FROM traceloom_position_occurrence);

-- The slowed node: decode attention inside the layer repeat inside the decode repeat.
SELECT 'rank: the slowed operator is first, with the whole delta',
  (SELECT count(*) FROM traceloom_compare_summary WHERE rank = 1 AND change = 'slower'
     AND path = 'Rep x6 > Rep x4 > IncreFlashAttention' AND delta_us = 15.0
     AND share_of_delta = 1.0 AND noise = 'significant') = 1;
SELECT 'rank: nothing else changed',
  (SELECT count(*) FROM traceloom_compare_rank) = 1;
SELECT 'node: 24 occurrences (4 layers x 6 steps) on both sides, 625 ns more per occurrence',
  (SELECT count(*) FROM traceloom_compare_node_cost WHERE path = 'Rep x6 > Rep x4 > IncreFlashAttention'
     AND base_units = 24 AND new_units = 24 AND base_occurrences = 24
     AND delta_avg_total_us = 0.625 AND delta_avg_compute_us = 0.625 AND delta_avg_idle_us = 0) = 1;
SELECT 'node: the layer repeat counts 4 iterations per decode step',
  (SELECT count(*) FROM traceloom_compare_node_cost WHERE path = 'Rep x6 > Rep x4'
     AND base_units = 24 AND new_units = 24 AND base_repeat_count = 4 AND new_repeat_count = 4) = 1;
SELECT 'node: positions named in both analyses',
  (SELECT count(*) FROM traceloom_compare_node n
    WHERE n.alignment <> 'root'
      AND (n.base_position_id IS NULL OR n.new_position_id IS NULL
           OR n.new_position_id NOT IN (SELECT node_id FROM traceloom_viz_node))) = 0;
SELECT 'node: subtree ranges nest',
  (SELECT count(*) FROM traceloom_compare_node c JOIN traceloom_compare_node p ON p.node_key = c.parent_key
    WHERE NOT (c.node_key > p.node_key AND c.end_key <= p.end_key AND c.depth = p.depth + 1)) = 0;

-- Every effect sums to the end-to-end delta.
SELECT 'effects: sum to the delta',
  (SELECT sum(contribution_ns) FROM traceloom_compare_effect) =
  (SELECT new_total_ns - base_total_ns FROM traceloom_compare_tree);

-- The kernel summary under the root and under the decode loop.
SELECT 'symbols: IncreFlashAttention +15 us under the root',
  (SELECT delta_total_us FROM traceloom_compare_symbol WHERE node_key = 1 AND symbol = 'IncreFlashAttention') = 15.0;
SELECT 'symbols: every other symbol unchanged',
  (SELECT count(*) FROM traceloom_compare_symbol WHERE node_key = 1 AND symbol <> 'IncreFlashAttention'
     AND delta_total_us <> 0) = 0;
SELECT 'symbols: the summary under a node covers only its subtree (no prefill attention in the decode loop)',
  (SELECT count(*) FROM traceloom_compare_symbol s JOIN traceloom_compare_node n ON n.node_key = s.node_key
    WHERE n.path = 'Rep x6' AND s.symbol = 'PromptFlashAttention') = 0;

-- The catalog of the analysis lists the comparison, and every example runs.
SELECT 'catalog: the comparison relations are described',
  (SELECT count(*) FROM main.sqlite_schema WHERE name LIKE 'traceloom\_compare\_%' ESCAPE '\'
     AND name NOT IN (SELECT surface_name FROM traceloom_analysis_surface)) = 0;
SELECT 'catalog: eight comparison relations',
  (SELECT count(*) FROM traceloom_analysis_surface WHERE surface_name LIKE 'traceloom\_compare\_%' ESCAPE '\') = 8;

-- Report: Markdown with the path of the top change.
SELECT 'report: end to end, then the ranked change with its path',
  (SELECT traceloom_compare_report() LIKE '# TraceLoom comparison%End to end: **%+15.000 us%| 1 | slower | Rep x6 > Rep x4 > IncreFlashAttention |%');
SELECT 'report: top and symbols options',
  (SELECT traceloom_compare_report('{"top": 1, "symbols": 0}') NOT LIKE '%Kernels of the whole tree%');

-- Re-running replaces the earlier comparison; a failed run leaves it as it was.
SELECT traceloom_compare('compare-base.db', '{"top": 5}');
SELECT 'rerun: one run, one tree, the new options',
  (SELECT count(*) FROM traceloom_compare_run WHERE options_json LIKE '%"top":5%') = 1
  AND (SELECT count(*) FROM traceloom_compare_tree) = 1;
-- expect-error: traceloom_compare: cannot open the base analysis
SELECT traceloom_compare('no-such-analysis.db');
SELECT 'failed rerun: the earlier comparison is intact',
  (SELECT count(*) FROM traceloom_compare_run WHERE options_json LIKE '%"top":5%') = 1
  AND (SELECT count(*) FROM traceloom_compare_rank) = 1;

-- Errors name what is wrong.
-- expect-error: unknown traceloom_compare option "tops"
SELECT traceloom_compare('compare-base.db', '{"tops": 3}');
-- expect-error: traceloom_compare option "top" must be an integer from 1 to 100000
SELECT traceloom_compare('compare-base.db', '{"top": 0}');
-- expect-error: traceloom_compare option "match" must be "auto" or "symbol"
SELECT traceloom_compare('compare-base.db', '{"match": "fuzzy"}');
-- expect-error: has no relation traceloom_semantic_tree
SELECT traceloom_compare('fixtures/compare/base/PROF_0/msprof_0.db');
-- expect-error: must be called from a top-level SELECT
CREATE TEMP TABLE captured AS SELECT traceloom_compare('compare-base.db') AS line;
-- A damaged base analysis is refused with the occurrence and the column.
VACUUM INTO 'compare-other.db';
ATTACH 'compare-other.db' AS other;
UPDATE other.traceloom_position_occurrence_body SET compute_ns = -5 WHERE occurrence_n = 3;
DETACH other;
-- expect-error: traceloom_position_occurrence compute_us of occurrence 3 is -0.005 us (expected a duration from 0 to 2^46 ns)
SELECT traceloom_compare('compare-other.db');
ATTACH 'compare-other.db' AS other;
UPDATE other.traceloom_position_occurrence_body SET compute_ns = 5 WHERE occurrence_n = 3;
UPDATE other.traceloom_node_core SET slot_ordinal = 99 WHERE node_n = 3;
DETACH other;
-- expect-error: the slots of position node-N001 in traceloom_position_refinement are not 1..n
SELECT traceloom_compare('compare-other.db');
-- expect-error: cannot open families manifest no-such-families.yaml
SELECT traceloom_compare('compare-base.db', '{"families": "no-such-families.yaml"}');

-- A re-analysis drops the comparison with the rest of the earlier analysis.
SELECT traceloom_analyze('fixtures/compare/extra');
SELECT 'reanalysis: no comparison left',
  (SELECT count(*) FROM main.sqlite_schema WHERE name LIKE 'traceloom\_compare\_%' ESCAPE '\') = 0;
-- expect-error: traceloom_compare_report needs a published comparison
SELECT traceloom_compare_report();

-- SQLITE_DIRECTONLY: a view cannot call it.
CREATE VIEW sneaky AS SELECT traceloom_compare('compare-base.db') AS x;
-- expect-error: unsafe use of traceloom_compare()
SELECT * FROM sneaky;

-- The comparison of two analyses: SELECT traceloom_compare('base.db' [, options]) run in the
-- new analysis, or `traceloom compare BASE.db NEW.db` (docs/COMPARE.md).
--
-- Facts computed in C, stored once: the run, each pair of aligned trees, each node of the
-- merged tree (matched, added or removed) with both runs' sums, and the ranked changes. Every
-- delta, ratio and per-iteration average is a view over them (10_views.sql). Times are int64
-- ns here and us in the views. A node's unit is an iteration for a Repeat and an occurrence
-- otherwise.

-- @surface traceloom_compare_run | one comparison | Which analyses were compared, with which options and families manifest | SELECT base_path, new_path, tree_pairs, options_json FROM traceloom_compare_run
CREATE TABLE traceloom_compare_run(
  run_id INTEGER PRIMARY KEY,
  base_path TEXT NOT NULL,
  new_path TEXT NOT NULL,
  options_json TEXT NOT NULL,          -- canonical options
  families_source TEXT NOT NULL,       -- rules/compare_families.yaml or the "families" file
  top_n INTEGER NOT NULL,              -- ranked changes kept per tree pair
  noise_z REAL NOT NULL,
  tree_pairs INTEGER NOT NULL,
  traceloom_version TEXT NOT NULL
);

-- @surface traceloom_compare_tree | one pair of aligned trees | End-to-end totals of both runs per tree pair and the exact split of the delta into per-iteration changes, iteration counts, added and removed work | SELECT pair_id, base_total_ns, new_total_ns, rate_ns, count_ns, added_ns, removed_ns FROM traceloom_compare_tree
CREATE TABLE traceloom_compare_tree(
  pair_id INTEGER PRIMARY KEY,
  base_db_idx INTEGER, base_device_id INTEGER,   -- NULL: the base run has no tree left to pair
  new_db_idx INTEGER, new_device_id INTEGER,     -- NULL: the new run has no tree left to pair
  root_key INTEGER NOT NULL,           -- the pair's nodes: node_key in [root_key, end_key)
  end_key INTEGER NOT NULL,
  base_total_ns INTEGER NOT NULL,      -- root totals (compute + comm + idle)
  new_total_ns INTEGER NOT NULL,
  rate_ns INTEGER NOT NULL,            -- sums of the node effects (traceloom_compare_node)
  count_ns INTEGER NOT NULL,
  added_ns INTEGER NOT NULL,
  removed_ns INTEGER NOT NULL,         -- positive: base time no longer there
  nodes_matched INTEGER NOT NULL,
  nodes_matched_by_family INTEGER NOT NULL,
  nodes_added INTEGER NOT NULL,
  nodes_removed INTEGER NOT NULL,
  alignment TEXT NOT NULL              -- exact, or windowed when a long child list needed it
);

-- @surface traceloom_compare_node | one node of the merged tree of a pair | Each structural node of both runs, aligned: per-run occurrences, units (iterations of a Repeat), compute/comm/idle sums, the spread of its units, and its rate / count / structure effects | SELECT path, alignment, base_units, new_units, rate_ns, count_ns, noise FROM traceloom_compare_node ORDER BY abs(rate_ns) DESC LIMIT 10
CREATE TABLE traceloom_compare_node(
  node_key INTEGER PRIMARY KEY,        -- preorder of the merged trees (pairs in order)
  pair_id INTEGER NOT NULL,
  parent_key INTEGER,                  -- NULL for a root
  end_key INTEGER NOT NULL,            -- one past the last node_key of its subtree
  depth INTEGER NOT NULL,
  alignment TEXT NOT NULL,             -- root, exact, family, similar (matched); added; removed
  node_type TEXT NOT NULL,             -- Seq, Repeat, Atom, Other
  label TEXT NOT NULL,                 -- MatMul#2 (2nd MatMul among its siblings), Rep x6->x8
  path TEXT NOT NULL,                  -- labels from below the root: Rep x6 > Rep x4 > MatMul#2
  family TEXT,                         -- semantic family of an atom (rules/compare_families.yaml)
  base_position_id TEXT,               -- the position in each analysis (node-N007)
  new_position_id TEXT,
  base_symbol TEXT,                    -- atoms
  new_symbol TEXT,
  base_occurrences INTEGER, new_occurrences INTEGER,
  base_units INTEGER, new_units INTEGER,
  base_compute_ns INTEGER, base_comm_ns INTEGER, base_idle_ns INTEGER,
  new_compute_ns INTEGER, new_comm_ns INTEGER, new_idle_ns INTEGER,
  base_unit_stddev_ns INTEGER,         -- sample standard deviation of the per-unit totals
  new_unit_stddev_ns INTEGER,
  rate_ns INTEGER,                     -- matched: own per-unit change x new units
  count_ns INTEGER,                    -- matched: change of its units per parent unit, at base cost
  structure_ns INTEGER,                -- top of an added (+new total) / removed (-base total) subtree
  noise TEXT,                          -- matched: significant, within_noise, no_spread
  noise_threshold_ns INTEGER           -- noise_z x standard error of the per-unit difference
);

-- @surface traceloom_compare_rank | one ranked change of a pair | The changes that explain most of the end-to-end delta, largest first (top_n per pair) | SELECT pair_id, rank, effect, node_key, contribution_ns FROM traceloom_compare_rank ORDER BY pair_id, rank
CREATE TABLE traceloom_compare_rank(
  pair_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  node_key INTEGER NOT NULL,
  effect TEXT NOT NULL,                -- slower, faster, more_iterations, fewer_iterations, added, removed
  contribution_ns INTEGER NOT NULL,
  PRIMARY KEY (pair_id, rank)
) WITHOUT ROWID;

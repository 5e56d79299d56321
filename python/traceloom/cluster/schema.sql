-- The cluster database: one row set per rank, streamed in from each rank's extract, and
-- the cross-rank views over them. Written by traceloom.cluster (python/traceloom/cluster/).
-- A participant is one (rank, device_id): a rank is one profile input, normally one device.
-- Times are int64 nanoseconds; comparisons of arrival times across ranks assume the ranks
-- share one clock (see docs/CLUSTER.md, "Clocks").
--
-- The tables are WITHOUT ROWID with the cross-rank key first, so every window and lookup
-- of the views below walks a primary key (tests/python/test_cluster.py checks the plans).

-- @cluster traceloom_cluster_rank | one rank | every rank of the run, its input, status and error
CREATE TABLE traceloom_cluster_rank(
  rank INTEGER PRIMARY KEY,
  name TEXT NOT NULL,                 -- unique short name (the input's folder or file)
  input_path TEXT NOT NULL,
  source_kind TEXT,
  status TEXT NOT NULL CHECK (status IN ('analysed', 'reused', 'failed')),
  error TEXT,                         -- the failed rank's error, else NULL
  input_sha256 TEXT,                  -- over the rank's input files; decides reuse
  analysis_db TEXT,                   -- the rank's own analysis database (drill-down, Perfetto)
  device_ids TEXT,
  anchors INTEGER,
  collectives INTEGER,
  worker TEXT,                        -- host:pid of the process that ran it
  hash_s REAL, analysis_s REAL, extract_s REAL,
  peak_rss_kb INTEGER                 -- peak RSS of the rank's analysis (0 when reused)
);

-- @cluster traceloom_cluster_metadata | one key | how the cluster database was made
CREATE TABLE traceloom_cluster_metadata(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;

-- @cluster traceloom_cluster_status | one finding | typed status rows: failed ranks, inputs with several devices, what the per-rank relations cannot say
CREATE TABLE traceloom_cluster_status(
  rank INTEGER,                       -- NULL for the whole run
  status TEXT NOT NULL,
  detail TEXT NOT NULL,
  PRIMARY KEY (status, rank)
);

-- @cluster traceloom_cluster_node | structural position x participant | occurrences and summed compute / comm / idle of each structural path
CREATE TABLE traceloom_cluster_node(
  struct_path TEXT NOT NULL,          -- seq/s1/repeat/s2/repeat/s6/comm:AllReduce
  rank INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  parent_path TEXT,
  kind TEXT, symbol TEXT, depth INTEGER, repeat_count INTEGER,
  occurrences INTEGER,
  compute_ns INTEGER, comm_ns INTEGER, idle_ns INTEGER, total_ns INTEGER,
  PRIMARY KEY (struct_path, rank, device_id)
) WITHOUT ROWID;

-- @cluster traceloom_cluster_iteration | repeat iteration x participant | iteration k of a repeat (by structural path and enclosing iteration numbers): span and costs
CREATE TABLE traceloom_cluster_iteration(
  struct_path TEXT NOT NULL,          -- the repeat
  iteration TEXT NOT NULL,            -- '3' or '1.3': iteration numbers, outermost first
  rank INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  iteration_idx INTEGER,              -- the last of those numbers
  start_ns INTEGER, end_ns INTEGER, anchors INTEGER,
  compute_ns INTEGER, comm_ns INTEGER, idle_ns INTEGER, total_ns INTEGER,
  PRIMARY KEY (struct_path, iteration, rank, device_id)
) WITHOUT ROWID;

-- @cluster traceloom_cluster_collective | collective instance x participant | one collective on one rank, keyed by its label and its sequence number among the rank's collectives of that label
CREATE TABLE traceloom_cluster_collective(
  label TEXT NOT NULL,                -- the communication op (Ascend opName, NCCL kernel name)
  seq INTEGER NOT NULL,               -- 0-based, in the rank's device order
  rank INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  symbol TEXT,
  struct_path TEXT,                   -- where in the loop tree it sits
  iteration TEXT,                     -- in which iteration of the enclosing repeats
  start_ns INTEGER NOT NULL,          -- the rank's arrival
  end_ns INTEGER NOT NULL,
  PRIMARY KEY (label, seq, rank, device_id)
) WITHOUT ROWID;

-- @cluster traceloom_cluster_v_iteration_rank | repeat iteration x participant | duration and compute of each rank in iteration k, against the other ranks: mean, z-scores, excess over the others' mean
CREATE VIEW traceloom_cluster_v_iteration_rank AS
WITH w AS (
  SELECT i.struct_path, i.iteration, i.iteration_idx, i.rank, i.device_id, i.start_ns, i.end_ns,
         i.end_ns - i.start_ns AS duration_ns, i.compute_ns, i.comm_ns, i.idle_ns, i.anchors,
         count(*) OVER p AS ranks,
         avg(i.end_ns - i.start_ns) OVER p AS mean_duration_ns,
         sum(i.end_ns - i.start_ns) OVER p AS sum_duration_ns,
         avg((i.end_ns - i.start_ns) * 1.0 * (i.end_ns - i.start_ns)) OVER p AS msq_duration,
         sum(i.compute_ns) OVER p AS sum_compute_ns,
         avg(i.compute_ns) OVER p AS mean_compute_ns,
         avg(i.compute_ns * 1.0 * i.compute_ns) OVER p AS msq_compute
    FROM traceloom_cluster_iteration i
  WINDOW p AS (PARTITION BY i.struct_path, i.iteration))
SELECT struct_path, iteration, iteration_idx, rank, device_id, start_ns, end_ns, duration_ns,
       compute_ns, comm_ns, idle_ns, anchors, ranks, mean_duration_ns, mean_compute_ns,
       CASE WHEN msq_duration - mean_duration_ns * mean_duration_ns >= 1.0
            THEN (duration_ns - mean_duration_ns)
                 / sqrt(msq_duration - mean_duration_ns * mean_duration_ns) ELSE 0.0 END AS z_duration,
       CASE WHEN msq_compute - mean_compute_ns * mean_compute_ns >= 1.0
            THEN (compute_ns - mean_compute_ns)
                 / sqrt(msq_compute - mean_compute_ns * mean_compute_ns) ELSE 0.0 END AS z_compute,
       CASE WHEN ranks > 1 THEN duration_ns - (sum_duration_ns - duration_ns) * 1.0 / (ranks - 1) END
         AS duration_excess_ns,
       CASE WHEN ranks > 1 THEN compute_ns - (sum_compute_ns - compute_ns) * 1.0 / (ranks - 1) END
         AS compute_excess_ns,
       CASE WHEN ranks > 1 AND sum_duration_ns > duration_ns
            THEN duration_ns * (ranks - 1.0) / (sum_duration_ns - duration_ns) - 1 END
         AS duration_excess_ratio,
       CASE WHEN ranks > 1 AND sum_compute_ns > compute_ns
            THEN compute_ns * (ranks - 1.0) / (sum_compute_ns - compute_ns) - 1 END
         AS compute_excess_ratio
  FROM w;

-- @cluster traceloom_cluster_v_iteration | repeat iteration | iteration k across ranks: slowest rank by duration and by compute, spread, largest z-score
CREATE VIEW traceloom_cluster_v_iteration AS
SELECT struct_path, iteration, min(iteration_idx) AS iteration_idx, count(*) AS ranks,
       min(duration_ns) AS min_duration_ns, max(duration_ns) AS max_duration_ns,
       avg(duration_ns) AS mean_duration_ns, max(duration_ns) - min(duration_ns) AS duration_spread_ns,
       (SELECT i.rank FROM traceloom_cluster_iteration i
         WHERE i.struct_path = v.struct_path AND i.iteration = v.iteration
         ORDER BY i.end_ns - i.start_ns DESC, i.rank LIMIT 1) AS slowest_rank,
       min(compute_ns) AS min_compute_ns, max(compute_ns) AS max_compute_ns,
       max(compute_ns) - min(compute_ns) AS compute_spread_ns,
       (SELECT i.rank FROM traceloom_cluster_iteration i
         WHERE i.struct_path = v.struct_path AND i.iteration = v.iteration
         ORDER BY i.compute_ns DESC, i.rank LIMIT 1) AS slowest_compute_rank,
       max(z_duration) AS max_z_duration, max(z_compute) AS max_z_compute
  FROM traceloom_cluster_v_iteration_rank v
 GROUP BY struct_path, iteration;

-- @cluster traceloom_cluster_v_straggler | repeat x participant | per rank over every iteration of a repeat: how often it was a straggler (z >= 2 and 5% over the other ranks' mean), its mean excess over the other ranks
-- A straggler iteration needs both: a z-score of 2 or more (the rank stands out) and 5% more
-- than the other ranks' mean (it matters). Ranks that synchronize at collectives all last
-- about as long, so their durations differ by noise, whose z-scores alone mean nothing.
CREATE VIEW traceloom_cluster_v_straggler AS
SELECT struct_path, rank, device_id, count(*) AS iterations,
       sum(z_duration >= 2.0 AND duration_excess_ratio >= 0.05) AS duration_straggler_iterations,
       sum(z_compute >= 2.0 AND compute_excess_ratio >= 0.05) AS compute_straggler_iterations,
       avg(z_duration) AS mean_z_duration, avg(z_compute) AS mean_z_compute,
       avg(duration_ns) AS mean_duration_ns, avg(compute_ns) AS mean_compute_ns,
       avg(duration_excess_ns) AS mean_duration_excess_ns,
       avg(compute_excess_ns) AS mean_compute_excess_ns
  FROM traceloom_cluster_v_iteration_rank
 GROUP BY struct_path, rank, device_id;

-- @cluster traceloom_cluster_v_node_rank | structural position x participant | compute / communication / idle of each node on each rank (the temporal breakdown), with the rank's excess over the others
CREATE VIEW traceloom_cluster_v_node_rank AS
SELECT struct_path, parent_path, kind, symbol, depth, rank, device_id, repeat_count, occurrences,
       compute_ns, comm_ns, idle_ns, total_ns,
       count(*) OVER p AS ranks,
       CASE WHEN count(*) OVER p > 1
            THEN compute_ns - (sum(compute_ns) OVER p - compute_ns) * 1.0 / (count(*) OVER p - 1)
       END AS compute_excess_ns,
       CASE WHEN count(*) OVER p > 1
            THEN idle_ns - (sum(idle_ns) OVER p - idle_ns) * 1.0 / (count(*) OVER p - 1)
       END AS idle_excess_ns
  FROM traceloom_cluster_node
WINDOW p AS (PARTITION BY struct_path);

-- @cluster traceloom_cluster_v_collective_rank | collective instance x participant | each rank's arrival, the last arrival, the rank's wait before the transfer could begin, and the transfer time
CREATE VIEW traceloom_cluster_v_collective_rank AS
WITH a AS (
  SELECT c.*, count(*) OVER p AS ranks,
         min(c.start_ns) OVER p AS first_arrival_ns, max(c.start_ns) OVER p AS last_arrival_ns
    FROM traceloom_cluster_collective c
  WINDOW p AS (PARTITION BY c.label, c.seq)),
b AS (
  SELECT a.*, sum(a.start_ns = a.last_arrival_ns) OVER (PARTITION BY a.label, a.seq) AS last_ties
    FROM a)
SELECT label, seq, rank, device_id, symbol, struct_path, iteration, ranks,
       start_ns AS arrival_ns, end_ns, first_arrival_ns, last_arrival_ns,
       last_arrival_ns - start_ns AS wait_ns,
       end_ns - last_arrival_ns AS transfer_ns,
       (start_ns = last_arrival_ns AND last_ties = 1 AND ranks > 1) AS is_last
  FROM b;

-- @cluster traceloom_cluster_v_collective | collective instance | one collective across ranks: arrivals, skew, who arrived last (made everyone wait), the total wait, the transfer time
CREATE VIEW traceloom_cluster_v_collective AS
SELECT label, seq, min(symbol) AS symbol, min(struct_path) AS struct_path,
       min(iteration) AS iteration, count(*) AS ranks,
       min(arrival_ns) AS first_arrival_ns, max(arrival_ns) AS last_arrival_ns,
       max(arrival_ns) - min(arrival_ns) AS skew_ns,
       max(CASE WHEN is_last THEN rank END) AS last_rank,
       sum(wait_ns) AS total_wait_ns, max(wait_ns) AS max_wait_ns,
       min(transfer_ns) AS min_transfer_ns, avg(transfer_ns) AS mean_transfer_ns,
       max(transfer_ns) AS max_transfer_ns,
       (count(DISTINCT struct_path) > 1 OR count(DISTINCT iteration) > 1) AS position_differs
  FROM traceloom_cluster_v_collective_rank
 GROUP BY label, seq;

-- @cluster traceloom_cluster_v_wait_cause | participant | who made everyone wait and how often: collectives where the rank arrived last, the wait it caused, its mean lateness; and its own mean wait
CREATE VIEW traceloom_cluster_v_wait_cause AS
WITH per AS (
  SELECT r.label, r.seq, r.rank, r.device_id, r.is_last, r.wait_ns, r.arrival_ns,
         r.last_arrival_ns - r.first_arrival_ns AS skew_ns,
         sum(r.wait_ns) OVER (PARTITION BY r.label, r.seq) AS caused_ns
    FROM traceloom_cluster_v_collective_rank r)
SELECT rank, device_id, count(*) AS collectives,
       sum(is_last) AS times_last,
       sum(is_last) * 1.0 / count(*) AS share_last,
       sum(CASE WHEN is_last THEN caused_ns ELSE 0 END) AS caused_wait_ns,
       avg(CASE WHEN is_last THEN skew_ns END) AS mean_lateness_ns,
       sum(wait_ns) AS own_wait_ns, avg(wait_ns) AS mean_own_wait_ns
  FROM per
 GROUP BY rank, device_id;

-- @cluster traceloom_cluster_v_comm_group | collective label x participant | per communication op and rank: instances, transfer time and wait (bytes stay NULL: the per-rank relations carry no sizes, see traceloom_cluster_status)
CREATE VIEW traceloom_cluster_v_comm_group AS
SELECT label, rank, device_id, count(*) AS instances, sum(transfer_ns) AS transfer_ns,
       sum(wait_ns) AS wait_ns, sum(end_ns - arrival_ns) AS busy_ns, NULL AS bytes
  FROM traceloom_cluster_v_collective_rank
 GROUP BY label, rank, device_id;

-- @cluster traceloom_cluster_v_tree_diff | structural position x participant | where the loop trees of the ranks differ and why: a path missing on a rank, or a repeat count / occurrence count unlike most ranks
CREATE VIEW traceloom_cluster_v_tree_diff AS
WITH participant AS (SELECT DISTINCT rank, device_id FROM traceloom_cluster_node),
path AS (SELECT struct_path, min(parent_path) AS parent_path, count(*) AS ranks
           FROM traceloom_cluster_node GROUP BY struct_path),
modal AS (
  SELECT struct_path,
         (SELECT n.repeat_count FROM traceloom_cluster_node n WHERE n.struct_path = p.struct_path
           GROUP BY n.repeat_count ORDER BY count(*) DESC, n.repeat_count LIMIT 1) AS repeat_count,
         (SELECT n.occurrences FROM traceloom_cluster_node n WHERE n.struct_path = p.struct_path
           GROUP BY n.occurrences ORDER BY count(*) DESC, n.occurrences LIMIT 1) AS occurrences
    FROM path p)
SELECT p.struct_path, p.parent_path, x.rank, x.device_id, 'path_missing' AS reason,
       'absent on this rank, present on ' || p.ranks || ' of '
         || (SELECT count(*) FROM participant) || ' participants' AS detail
  FROM path p CROSS JOIN participant x
 WHERE p.ranks < (SELECT count(*) FROM participant)
   AND NOT EXISTS (SELECT 1 FROM traceloom_cluster_node n
                    WHERE n.struct_path = p.struct_path AND n.rank = x.rank
                      AND n.device_id = x.device_id)
UNION ALL
SELECT n.struct_path, n.parent_path, n.rank, n.device_id, 'repeat_count_differs',
       'x' || n.repeat_count || ' here, x' || m.repeat_count || ' on most ranks'
  FROM traceloom_cluster_node n JOIN modal m ON m.struct_path = n.struct_path
 WHERE n.repeat_count IS NOT m.repeat_count
UNION ALL
SELECT n.struct_path, n.parent_path, n.rank, n.device_id, 'occurrence_count_differs',
       n.occurrences || ' occurrences here, ' || m.occurrences || ' on most ranks'
  FROM traceloom_cluster_node n JOIN modal m ON m.struct_path = n.struct_path
 WHERE n.occurrences <> m.occurrences AND n.repeat_count IS m.repeat_count;

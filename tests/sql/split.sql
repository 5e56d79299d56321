-- split.sql: the Ascend split SQLite reader through the SQL surface (inputs.md section 5).
-- Fixtures (tests/fixtures/materialize.sh): fixtures/<case>/split/PROF_0 is the split tree of
-- split_golden / exact_hlt, fixtures/<case>/mono/PROF_0 its monolithic twin, and
-- fixtures/split_golden/fallback a PROF_0 whose monolithic DB is unusable (metadata only).
-- Values are counted by hand from ../shared/fixtures/ascend_sqlite/*/split/**/*.sql:
--   split_golden AscendTask: (stream 3, 100+60, AI_CORE, conn 700), (3, 170+40, EVENT_WAIT,
--   701), (4, 220+40, SDMA with HCCL identity, 702), (3, -1, -1): dropped.
--   HCCLOP: one op, index_id 55, conn 702, REAL begin/end 9000/9001 (ignored).
--   ApiData: (1, 2, 10, 'aclrtSynchronizeStream') in 10 ns ticks.
--   exact_hlt: AscendTask 70 (28 KERNEL_AIVEC with TaskInfo identity), ApiData 15 with
--   starts 90, 190, ..., 1390 (14 launches) and 1490 (the sync), all in 10 ns ticks.
.load ./traceloom

-- ------------------------------------------------------------------ traceloom_events
SELECT 'events: 3 usable AscendTask rows then 1 HCCLOP op; the -1 row is not an event',
  (SELECT group_concat(source_table || ':' || source_rowid, ',') FROM
     (SELECT source_table, source_rowid FROM traceloom_events('fixtures/split_golden/split/PROF_0')
      ORDER BY event_id))
  = 'AscendTask:1,AscendTask:2,AscendTask:3,HCCLOP:1';

SELECT 'events: AI_CORE task joined to TaskInfo (linear / MatMul / MIX_AIC)',
  EXISTS (SELECT 1 FROM traceloom_events('fixtures/split_golden/split/PROF_0')
          WHERE event_id = 0 AND device_id = 0 AND stream_id = 3 AND start_ns = 100
            AND end_ns = 160 AND kind = 'compute' AND name = 'AI_CORE' AND op_name = 'linear'
            AND op_type = 'MatMul' AND compute_task_type = 'MIX_AIC' AND task_type = 'AI_CORE'
            AND correlation_id = 700 AND model_id = 2 AND task_id = 99 AND global_task_id = 0
            AND source_path LIKE '%/PROF_0/device_0/sqlite/ascend_task.db');

SELECT 'events: EVENT_WAIT (host type; device type UNKNOWN) without identity is sync',
  EXISTS (SELECT 1 FROM traceloom_events('fixtures/split_golden/split/PROF_0')
          WHERE event_id = 1 AND kind = 'sync' AND name = 'EVENT_WAIT' AND op_type IS NULL
            AND global_task_id IS NULL);

SELECT 'events: SDMA task with HCCL identity is communication and keeps the device type',
  EXISTS (SELECT 1 FROM traceloom_events('fixtures/split_golden/split/PROF_0')
          WHERE event_id = 2 AND kind = 'communication' AND name = 'SDMA'
            AND comm_name = 'hcom_allReduce__golden_0' AND comm_task_type = 'hcom_allReduce_'
            AND stream_id = 4 AND start_ns = 220 AND end_ns = 260);

SELECT 'events: HCCLOP op = envelope of its HCCL tasks (REAL begin/end ignored)',
  EXISTS (SELECT 1 FROM traceloom_events('fixtures/split_golden/split/PROF_0')
          WHERE event_id = 3 AND source_table = 'HCCLOP' AND source_rowid = 1 AND device_id = 0
            AND stream_id = 4 AND start_ns = 220 AND end_ns = 260 AND kind = 'communication'
            AND name = 'hcom_allReduce_' AND op_type = 'hcom_allReduce_' AND op_id = 55
            AND correlation_id = 702 AND task_type = 'COMMUNICATION_OP'
            AND source_path LIKE '%/PROF_0/host/sqlite/hccl.db');

SELECT 'events: split_golden split = its monolithic twin (device, stream, times, kind, name, op_type)',
  NOT EXISTS (
    SELECT device_id, stream_id, start_ns, end_ns, kind, name, op_type, count(*)
      FROM traceloom_events('fixtures/split_golden/split/PROF_0')
     GROUP BY 1, 2, 3, 4, 5, 6, 7
    EXCEPT
    SELECT device_id, stream_id, start_ns, end_ns, kind, name, op_type, count(*)
      FROM traceloom_events('fixtures/split_golden/mono/PROF_0')
     GROUP BY 1, 2, 3, 4, 5, 6, 7)
  AND (SELECT count(*) FROM traceloom_events('fixtures/split_golden/mono/PROF_0')) = 4;

SELECT 'events: exact_hlt split has 70 tasks, 28 with TaskInfo identity',
  (SELECT count(*) FROM traceloom_events('fixtures/exact_hlt/split/PROF_0')) = 70
  AND (SELECT count(*) FROM traceloom_events('fixtures/exact_hlt/split/PROF_0')
       WHERE op_type IS NOT NULL AND kind = 'compute') = 28
  AND (SELECT count(*) FROM traceloom_events('fixtures/exact_hlt/split/PROF_0')
       WHERE kind = 'graph_launch' AND name = 'MODEL_EXECUTE') = 14
  AND (SELECT count(*) FROM traceloom_events('fixtures/exact_hlt/split/PROF_0')
       WHERE kind = 'control') = 28;

SELECT 'events: exact_hlt split = its monolithic twin, both directions',
  NOT EXISTS (
    SELECT device_id, stream_id, start_ns, end_ns, kind, name, op_type, count(*)
      FROM traceloom_events('fixtures/exact_hlt/split/PROF_0') GROUP BY 1, 2, 3, 4, 5, 6, 7
    EXCEPT
    SELECT device_id, stream_id, start_ns, end_ns, kind, name, op_type, count(*)
      FROM traceloom_events('fixtures/exact_hlt/mono/PROF_0') GROUP BY 1, 2, 3, 4, 5, 6, 7)
  AND NOT EXISTS (
    SELECT device_id, stream_id, start_ns, end_ns, kind, name, op_type, count(*)
      FROM traceloom_events('fixtures/exact_hlt/mono/PROF_0') GROUP BY 1, 2, 3, 4, 5, 6, 7
    EXCEPT
    SELECT device_id, stream_id, start_ns, end_ns, kind, name, op_type, count(*)
      FROM traceloom_events('fixtures/exact_hlt/split/PROF_0') GROUP BY 1, 2, 3, 4, 5, 6, 7);

SELECT 'events: without TaskInfo.op_type no kernel has compute identity',
  (SELECT count(*) FROM traceloom_events('fixtures/exact_hlt/mut_incomplete_split_task_info/PROF_0')
   WHERE kind = 'compute' OR op_type IS NOT NULL) = 0
  AND (SELECT count(*) FROM traceloom_events('fixtures/exact_hlt/mut_incomplete_split_task_info/PROF_0')
       WHERE kind = 'other' AND name = 'KERNEL_AIVEC') = 28;

-- ------------------------------------------------------------------ traceloom_host_calls
SELECT 'host calls: ApiData ticks x10 (1, 2) -> 10..20 ns, provider ascend, id as api_name',
  EXISTS (SELECT 1 FROM traceloom_host_calls('fixtures/split_golden/split/PROF_0')
          WHERE call_id = 0 AND source_table = 'ApiData' AND source_rowid = 1
            AND provider = 'ascend' AND api_name = 'aclrtSynchronizeStream'
            AND api_type = 'cann_api' AND start_ns = 10 AND end_ns = 20 AND correlation_id = 10)
  AND (SELECT count(*) FROM traceloom_host_calls('fixtures/split_golden/split/PROF_0')) = 1;

SELECT 'host calls: exact_hlt 15 ApiData calls, starts sum 10 x 11850',
  (SELECT count(*) FROM traceloom_host_calls('fixtures/exact_hlt/split/PROF_0')) = 15
  AND (SELECT sum(start_ns) FROM traceloom_host_calls('fixtures/exact_hlt/split/PROF_0')) = 118500
  AND (SELECT count(*) FROM traceloom_host_calls('fixtures/exact_hlt/split/PROF_0')
       WHERE api_name = 'aclmdlRIExecuteAsync' AND thread_id = 1) = 14;

-- ------------------------------------------------------------------ traceloom_profile
SELECT 'profile: split_golden capabilities (HCCLOP preferred, no stream_info)',
  (SELECT group_concat(capability || '=' || ifnull(usable, '-') || '/' || row_count, ',') FROM
     (SELECT capability, usable, row_count FROM traceloom_profile('fixtures/split_golden/split/PROF_0')
      WHERE item = 'capability' AND source_kind = 'ascend_sqlite_split'
        AND capability <> 'capture_stream_companion' ORDER BY rowid))
  = 'device_tasks=1/3,device_tasks_dropped=-/1,compute_identity=1/1,'
    || 'communication_identity=1/1,communication_ops=1/1,host_task_type=1/2,host_api=1/1,'
    || 'capture_streams=0/0';

SELECT 'profile: communication ops come from HCCLOP',
  EXISTS (SELECT 1 FROM traceloom_profile('fixtures/split_golden/split/PROF_0')
          WHERE capability = 'communication_ops' AND table_name = 'HCCLOP'
            AND path LIKE '%/host/sqlite/hccl.db');

SELECT 'profile: incomplete TaskInfo -> compute identity unusable, op_type named',
  EXISTS (SELECT 1 FROM traceloom_profile('fixtures/exact_hlt/mut_incomplete_split_task_info/PROF_0')
          WHERE capability = 'compute_identity' AND usable = 0
            AND detail LIKE '%TaskInfo%missing column(s): op_type%'
            AND detail LIKE '%/host/sqlite/ge_info.db%');

SELECT 'profile: exact_hlt split has capture streams (CANN 9 stream_id spelling)',
  EXISTS (SELECT 1 FROM traceloom_profile('fixtures/exact_hlt/split/PROF_0')
          WHERE capability = 'capture_streams' AND usable = 1 AND row_count = 12);

SELECT 'profile: an unusable monolithic DB falls back to the split layout with a warning',
  EXISTS (SELECT 1 FROM traceloom_profile('fixtures/split_golden/fallback')
          WHERE item = 'warning' AND detail LIKE 'warning: using Ascend split SQLite fallback: %')
  AND EXISTS (SELECT 1 FROM traceloom_profile('fixtures/split_golden/fallback')
              WHERE item = 'input' AND source_kind = 'ascend_sqlite_split');

SELECT 'events: the fallback reads the split tree, not the unusable msprof_0.db',
  (SELECT count(*) FROM traceloom_events('fixtures/split_golden/fallback')) = 4
  AND NOT EXISTS (SELECT 1 FROM traceloom_events('fixtures/split_golden/fallback')
                  WHERE source_path LIKE '%msprof_0.db');

-- ------------------------------------------------------------------ errors
-- expect-error: split SQLite profile is missing required device_*/sqlite/ascend_task.db:AscendTask table
SELECT traceloom_analyze('fixtures/split_golden/mono/PROF_0', '{"source_kind":"ascend_sqlite_split"}');

-- ------------------------------------------------------------------ traceloom_analyze
SELECT traceloom_analyze('fixtures/split_golden/fallback');

SELECT 'analyze: one split input with 4 events and 1 runtime call',
  EXISTS (SELECT 1 FROM traceloom_input WHERE db_idx = 0 AND source_kind = 'ascend_sqlite_split'
            AND provider = 'ascend' AND event_count = 4 AND runtime_call_count = 1);

SELECT 'analyze: published events keep split provenance and exact times',
  (SELECT group_concat(source_table || ':' || source_key || ':' || kind || ':' || start_ns || '-'
                       || end_ns, ',') FROM (SELECT * FROM traceloom_event ORDER BY rowid))
  = 'AscendTask:1:compute:100-160,AscendTask:2:sync:170-210,'
    || 'AscendTask:3:communication:220-260,HCCLOP:1:communication:220-260';

SELECT 'analyze: the dropped -1 AscendTask row is counted in metadata',
  (SELECT value FROM traceloom_metadata WHERE key = 'dropped_event_rows') = '1';

SELECT 'analyze: ApiData runtime call in ns (x10 ticks)',
  EXISTS (SELECT 1 FROM traceloom_runtime_call WHERE source_table = 'ApiData' AND start_ns = 10
            AND end_ns = 20 AND api_name = 'aclrtSynchronizeStream' AND provider = 'ascend');

SELECT 'analyze: every split part is a recorded source file',
  (SELECT count(*) FROM traceloom_raw_source_database WHERE source_role = 'split_part') = 6;

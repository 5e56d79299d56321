-- The Ascend monolithic reader on the real-schema fixtures (../shared/fixtures/ascend_sqlite).
-- Expected values are read off the fixture SQL scripts, row by row.

-- minimal_smoke: 2 TASK rows (AI_CORE with COMPUTE_TASK_INFO, EVENT_WAIT with
-- COMMUNICATION_TASK_INFO) and 1 COMMUNICATION_OP row linked by (device 0, connectionId 701).
SELECT 'minimal: three events', (SELECT count(*) FROM traceloom_events('fixtures/minimal_smoke/mono')) = 3;
SELECT 'minimal: compute task decoded through STRING_IDS and COMPUTE_TASK_INFO',
  (SELECT event_id = 0 AND source_table = 'TASK' AND source_rowid = 1 AND device_id = 0 AND stream_id = 3
      AND start_ns = 100 AND end_ns = 160 AND kind = 'compute' AND name = 'AI_CORE' AND task_type = 'AI_CORE'
      AND op_type = 'MatMul' AND op_name = 'model.layers.0.mlp.gate_up_proj' AND compute_task_type = 'MIX_AIC'
      AND correlation_id = 700 AND model_id = 2 AND task_id = 99 AND global_task_id = 9001 AND context_id = 0
   FROM traceloom_events('fixtures/minimal_smoke/mono') WHERE event_id = 0);
SELECT 'minimal: communication identity beats the EVENT_WAIT task type',
  (SELECT kind = 'communication' AND name = 'EVENT_WAIT' AND comm_name = 'comm_task_hccl_allreduce'
      AND comm_task_type = 'hcom_allReduce_' AND op_type IS NULL
   FROM traceloom_events('fixtures/minimal_smoke/mono') WHERE event_id = 1);
SELECT 'minimal: communication op on the stream of its overlapping task',
  (SELECT source_table = 'COMMUNICATION_OP' AND source_rowid = 1 AND kind = 'communication'
      AND name = 'hcclAllReduce' AND op_type = 'hcom_allReduce_' AND stream_id = 3 AND op_id = 55
      AND start_ns = 165 AND end_ns = 215 AND correlation_id = 701
   FROM traceloom_events('fixtures/minimal_smoke/mono') WHERE event_id = 2);
SELECT 'minimal: no host calls without CANN_API',
  (SELECT count(*) FROM traceloom_host_calls('fixtures/minimal_smoke/mono')) = 0;
SELECT 'minimal: absent host API is reported with its reason',
  (SELECT usable = 0 AND detail = 'table CANN_API is absent' FROM traceloom_profile('fixtures/minimal_smoke/mono')
   WHERE capability = 'host_api');

-- exact_hlt: 70 TASK rows = 14 launches x (MODEL_EXECUTE + NOTIFY_WAIT + NOTIFY_RECORD + 2 KERNEL_AIVEC);
-- 15 CANN_API rows (14 aclmdlRIExecuteAsync with connectionId 1000-1013, one sync with 9999).
SELECT 'exact_hlt: 70 events, all from TASK',
  (SELECT count(*) FROM traceloom_events('fixtures/exact_hlt/mono') WHERE source_table = 'TASK') = 70;
SELECT 'exact_hlt: kinds by task type',
  (SELECT group_concat(kind || '=' || n, ',') FROM (SELECT kind, count(*) n FROM traceloom_events('fixtures/exact_hlt/mono') GROUP BY kind ORDER BY kind))
  = 'compute=28,control=28,graph_launch=14';
SELECT 'exact_hlt: body ops named by COMPUTE_TASK_INFO',
  (SELECT group_concat(op_type, ',') FROM (SELECT DISTINCT op_type FROM traceloom_events('fixtures/exact_hlt/mono') WHERE kind = 'compute' ORDER BY op_type))
  = 'AuxGraphOp,HeadOp,LayerOp,PrefillHeadOp,PrefillLayerOp,PrefillTailOp,TailOp';
SELECT 'exact_hlt: 15 host calls, api names decoded',
  (SELECT count(*) = 15 AND sum(api_name = 'aclmdlRIExecuteAsync') = 14
      AND sum(api_name = 'aclrtSynchronizeStreamWithTimeout') = 1
   FROM traceloom_host_calls('fixtures/exact_hlt/mono'));
SELECT 'exact_hlt: globalTid split into process and thread',
  (SELECT process_id = 0 AND thread_id = 1 AND global_tid = 1 AND provider = 'ascend' AND api_type = '0'
   FROM traceloom_host_calls('fixtures/exact_hlt/mono') WHERE call_id = 0);
SELECT 'exact_hlt: event filter by device and time window',
  (SELECT count(*) FROM traceloom_events('fixtures/exact_hlt/mono') WHERE device_id = 0 AND start_ns >= 400 AND start_ns < 500) = 5;
SELECT 'exact_hlt: event ids stay dense under a filter',
  (SELECT min(event_id) FROM traceloom_events('fixtures/exact_hlt/mono') WHERE start_ns >= 400) = 15;
SELECT 'exact_hlt: no events on another device',
  (SELECT count(*) FROM traceloom_events('fixtures/exact_hlt/mono') WHERE device_id = 1) = 0;

-- aclgraph_smoke: 8 TASK rows and 2 COMMUNICATION_OP rows whose connectionIds (3000, 3001) no task has.
SELECT 'aclgraph: 10 events', (SELECT count(*) FROM traceloom_events('fixtures/aclgraph_smoke/mono')) = 10;
SELECT 'aclgraph: unlinked communication ops have no stream',
  (SELECT count(*) FROM traceloom_events('fixtures/aclgraph_smoke/mono') WHERE source_table = 'COMMUNICATION_OP' AND stream_id IS NULL) = 2;
SELECT 'aclgraph: MODEL_EXECUTE is a graph launch',
  (SELECT count(*) FROM traceloom_events('fixtures/aclgraph_smoke/mono') WHERE kind = 'graph_launch' AND task_type = 'MODEL_EXECUTE') = 4;
SELECT 'aclgraph: legacy model_stream_id companion found beside the DB',
  (SELECT usable = 1 AND detail = 'stream_info_adjacent' FROM traceloom_profile('fixtures/aclgraph_smoke/mono')
   WHERE capability = 'capture_stream_companion');

-- Mutations degrade to typed capability states, never to silent success.
SELECT 'mutation: incomplete compute schema is unusable, missing opType named',
  (SELECT usable = 0 AND detail = 'table COMPUTE_TASK_INFO is missing column(s): opType'
   FROM traceloom_profile('fixtures/exact_hlt/mut_incomplete_compute_schema') WHERE capability = 'compute_identity');
SELECT 'mutation: without compute identity the body tasks are kind other',
  (SELECT count(*) FROM traceloom_events('fixtures/exact_hlt/mut_incomplete_compute_schema') WHERE kind = 'other') = 28;
SELECT 'mutation: no CANN_API means no host calls',
  (SELECT count(*) FROM traceloom_host_calls('fixtures/exact_hlt/mut_device_order_without_host_api')) = 0;
SELECT 'mutation: SDMA tasks without communication identity are data moves',
  (SELECT count(*) FROM traceloom_events('fixtures/exact_hlt/mut_missing_communication_schema') WHERE kind = 'data_move' AND task_type = 'SDMA') = 14;
SELECT 'mutation: missing communication schema reported',
  (SELECT usable = 0 AND detail = 'table COMMUNICATION_TASK_INFO is absent'
   FROM traceloom_profile('fixtures/exact_hlt/mut_missing_communication_schema') WHERE capability = 'communication_identity');

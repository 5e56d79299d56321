-- hygon.sql: the Hygon hipprof reader through the SQL surface (inputs.md section 7), on the
-- databases tests/fixtures/make_hygon.py builds (fixtures/hygon/). B = 1712345678901234567 ns
-- (not exact as a double). HIPOPS_4242 has 8 rows: 1 Tensile GEMM (MatMul), 2 flash_fwd
-- (FlashAttention), 3 Cijk_B_PostGSU (helper, unlifted), 4 my_custom_decode_kernel (device 1),
-- 5 end = start and 6 end < start (dropped), 7 Name 99 without STR_TABLE row, 8
-- direct_copy_kernel (helper, unlifted). HIPCOPY_4242: 1 copy (Kind 1, MemoryType 2, 4096 bytes,
-- queue 2) and 1 row with end < start. HIP_4242: 3 calls and 1 of zero length.
.load ./traceloom

SELECT 'profile: hipprof.db is one hygon_sqlite input',
  (SELECT count(*) FROM traceloom_profile('fixtures/hygon/hipprof.db') WHERE item = 'input') = 1
  AND EXISTS (SELECT 1 FROM traceloom_profile('fixtures/hygon/hipprof.db')
              WHERE item = 'input' AND source_kind = 'hygon_sqlite');

SELECT 'profile: kernels, copies, HIP API (HIPTX_ is not API) and STR_TABLE are usable',
  (SELECT group_concat(capability || ':' || ifnull(table_name, '') || ':' || usable || ':'
                       || row_count, ',') FROM
     (SELECT * FROM traceloom_profile('fixtures/hygon/hipprof.db')
      WHERE item = 'capability' AND capability <> 'string_table' ORDER BY rowid))
  = 'device_kernels:HIPOPS_4242:1:8,device_copies:HIPCOPY_4242:1:2,host_api:HIP_4242:1:4';

SELECT 'events: 6 kernels then 1 copy, rowid order, dropped rows absent',
  (SELECT group_concat(source_table || ':' || source_rowid, ',') FROM
     (SELECT * FROM traceloom_events('fixtures/hygon/hipprof.db') ORDER BY event_id))
  = 'HIPOPS_4242:1,HIPOPS_4242:2,HIPOPS_4242:3,HIPOPS_4242:4,HIPOPS_4242:7,HIPOPS_4242:8,'
    || 'HIPCOPY_4242:1';

SELECT 'events: Tensile GEMM lifted to MatMul with exact ns near 1.7e18',
  EXISTS (SELECT 1 FROM traceloom_events('fixtures/hygon/hipprof.db')
          WHERE event_id = 0 AND device_id = 0 AND stream_id = 0
            AND start_ns = 1712345678901236567 AND end_ns = 1712345678901237067
            AND kind = 'compute' AND name = 'Cijk_Alik_Bljk_BBH_MT256x256x16_MI250'
            AND op_name = name AND op_type = 'MatMul' AND task_type = 'HIP_KERNEL'
            AND task_id = 1 AND global_task_id = 1 AND correlation_id IS NULL);

SELECT 'events: lifted labels and task types in order',
  (SELECT group_concat(op_type || '/' || task_type, '|') FROM
     (SELECT * FROM traceloom_events('fixtures/hygon/hipprof.db')
      WHERE source_table = 'HIPOPS_4242' ORDER BY event_id))
  = 'MatMul/HIP_KERNEL|FlashAttention/HIP_KERNEL|Cijk_B_PostGSU/HIP_KERNEL|'
    || 'my_custom_decode_kernel/HIP_KERNEL|hip_kernel_99/HIP_KERNEL|direct_copy_kernel/HIP_KERNEL';

SELECT 'events: stream is (dev_id, queue_id)',
  EXISTS (SELECT 1 FROM traceloom_events('fixtures/hygon/hipprof.db')
          WHERE source_rowid = 3 AND source_table = 'HIPOPS_4242' AND device_id = 0
            AND stream_id = 1)
  AND EXISTS (SELECT 1 FROM traceloom_events('fixtures/hygon/hipprof.db')
              WHERE source_rowid = 4 AND source_table = 'HIPOPS_4242' AND device_id = 1
                AND stream_id = 0);

SELECT 'events: HIPCOPY row is data_move MEMCPY / DataMove with the copy label',
  EXISTS (SELECT 1 FROM traceloom_events('fixtures/hygon/hipprof.db')
          WHERE event_id = 6 AND kind = 'data_move' AND task_type = 'MEMCPY'
            AND op_type = 'DataMove' AND name = 'hip_copy kind=1 memory_type=2 bytes=4096'
            AND stream_id = 2 AND start_ns = 1712345678901236067
            AND end_ns = 1712345678901236167 AND task_id = 3);

SELECT 'host calls: 3 HIP API calls named through STR_TABLE, provider hygon',
  (SELECT group_concat(api_name || '@' || thread_id, ',') FROM
     (SELECT * FROM traceloom_host_calls('fixtures/hygon/hipprof.db') ORDER BY call_id))
  = 'hipLaunchKernel@4243,hipLaunchKernel@4243,hipMemcpyAsync@4244'
  AND NOT EXISTS (SELECT 1 FROM traceloom_host_calls('fixtures/hygon/hipprof.db')
                  WHERE provider <> 'hygon' OR process_id <> 4242 OR correlation_id IS NOT NULL)
  AND EXISTS (SELECT 1 FROM traceloom_host_calls('fixtures/hygon/hipprof.db')
              WHERE call_id = 0 AND start_ns = 1712345678901235567
                AND end_ns = 1712345678901235667 AND api_type = 'hip_api');

-- expect-error: unsupported Hygon HIPOPS_7 schema
SELECT count(*) FROM traceloom_events('fixtures/hygon/neg_incomplete_hipops.db');

-- expect-error: missing required column(s): dev_id, queue_id
SELECT count(*) FROM traceloom_events('fixtures/hygon/neg_incomplete_hipops.db');

SELECT traceloom_analyze('fixtures/hygon/hipprof.db');

SELECT 'analyze: hygon input with 7 events, 3 calls; 3 event rows and 1 call row dropped',
  EXISTS (SELECT 1 FROM traceloom_input WHERE source_kind = 'hygon_sqlite' AND provider = 'hygon'
            AND event_count = 7 AND runtime_call_count = 3)
  AND (SELECT value FROM traceloom_metadata WHERE key = 'dropped_event_rows') = '3'
  AND (SELECT value FROM traceloom_metadata WHERE key = 'dropped_runtime_call_rows') = '1';

SELECT 'analyze: published kernels keep exact ns and the lifted op_type',
  -- all six kept kernels (rows 1-4, 7, 8): the two helpers are HIP_KERNEL too
  (SELECT count(*) FROM traceloom_event WHERE kind = 'compute' AND task_type = 'HIP_KERNEL') = 6
  AND EXISTS (SELECT 1 FROM traceloom_event WHERE source_table = 'HIPOPS_4242' AND source_key = '1'
                AND start_ns = 1712345678901236567 AND op_type = 'MatMul');

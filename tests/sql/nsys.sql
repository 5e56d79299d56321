-- nsys.sql: the Nsight Systems SQLite reader through the SQL surface, on the exports
-- tests/fixtures/make_nsys.py builds (fixtures/nsys/). Step s (0..2) of nsys_basic starts at
-- 2000000000 + s*1000000 ns; its correlation ids are 100*(s+1) + 1 (memcpy), 2 (memset),
-- 10..15 (kernels), 30 (event record), 40 (stream sync). Calls 900 (cudaGetDevice) and 901
-- (nameId missing from StringIds) have no device work.
.load ./traceloom

-- ------------------------------------------------------------------ traceloom_events
SELECT 'events: 18 kernels + 3 memcpy + 3 memset + 3 sync + 3 cuda events, no runtime rows',
  (SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite')) = 30
  AND (SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite')
       WHERE source_table = 'CUPTI_ACTIVITY_KIND_RUNTIME') = 0;

SELECT 'events: reader order is KERNEL, MEMCPY, MEMSET, SYNCHRONIZATION, CUDA_EVENT by rowid',
  (SELECT group_concat(source_table || ':' || source_rowid, ',') FROM
     (SELECT source_table, source_rowid FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite')
      WHERE event_id IN (0, 17, 18, 21, 24, 27, 29) ORDER BY event_id))
  = 'CUPTI_ACTIVITY_KIND_KERNEL:1,CUPTI_ACTIVITY_KIND_KERNEL:18,CUPTI_ACTIVITY_KIND_MEMCPY:1,'
    || 'CUPTI_ACTIVITY_KIND_MEMSET:1,CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:1,'
    || 'CUPTI_ACTIVITY_KIND_CUDA_EVENT:1,CUPTI_ACTIVITY_KIND_CUDA_EVENT:3';

SELECT 'events: first kernel is rms_norm on device 0 stream 7 with exact ns',
  EXISTS (SELECT 1 FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite')
          WHERE event_id = 0 AND device_id = 0 AND stream_id = 7 AND start_ns = 2000030000
            AND end_ns = 2000045000 AND kind = 'compute' AND name = 'rms_norm_kernel'
            AND op_type = 'CudaRmsNorm' AND task_type = 'CUDA_KERNEL' AND correlation_id = 110
            AND model_id IS NULL AND source_path LIKE '%/nsys_basic.sqlite');

SELECT 'events: lifted labels of one step',
  (SELECT group_concat(op_type, '|') FROM
     (SELECT op_type FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite')
      WHERE source_table = 'CUPTI_ACTIVITY_KIND_KERNEL' AND correlation_id BETWEEN 210 AND 215
      ORDER BY event_id))
  = 'CudaRmsNorm|CudaMatMul|CudaFlashAttention|CudaRope|'
    || 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL|CudaAux:Pointwise';

SELECT 'events: generic shortName "kernel" takes the demangled name',
  (SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite')
   WHERE name LIKE 'void vllm::rotary_embedding_kernel<%' AND op_type = 'CudaRope') = 3;

SELECT 'events: NCCL allreduce is communication on stream 20',
  (SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite')
   WHERE kind = 'communication' AND task_type = 'CUDA_COLLECTIVE_KERNEL' AND stream_id = 20
     AND name = 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL') = 3;

SELECT 'events: CudaAux lifted label gives CUDA_KERNEL_AUX',
  (SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite')
   WHERE task_type = 'CUDA_KERNEL_AUX') = 3;

SELECT 'events: aux kinds, labels and task types',
  (SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite')
   WHERE (source_table = 'CUPTI_ACTIVITY_KIND_MEMCPY' AND kind = 'data_move'
          AND task_type = 'CUDA_MEMCPY_AUX' AND name LIKE 'CudaMemcpy kind=1 bytes=%')
      OR (source_table = 'CUPTI_ACTIVITY_KIND_MEMSET' AND kind = 'data_move'
          AND task_type = 'CUDA_MEMSET_AUX' AND name = 'CudaMemset bytes=1024')
      OR (source_table = 'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION' AND kind = 'sync'
          AND task_type = 'CUDA_SYNC_AUX' AND name = 'STREAM_SYNCHRONIZE')
      OR (source_table = 'CUPTI_ACTIVITY_KIND_CUDA_EVENT' AND kind = 'control'
          AND task_type = 'CUDA_EVENT_AUX' AND name = 'CudaEvent event=77')) = 12;

SELECT 'events: memset with end == start lasts 1 ns; cuda events last 1 ns',
  EXISTS (SELECT 1 FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite')
          WHERE source_table = 'CUPTI_ACTIVITY_KIND_MEMSET' AND source_rowid = 2
            AND start_ns = 2001017000 AND end_ns = 2001017001)
  AND (SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite')
       WHERE source_table = 'CUPTI_ACTIVITY_KIND_CUDA_EVENT' AND end_ns = start_ns + 1) = 3;

SELECT 'events: TEXT name columns read like StringIds ids',
  (SELECT group_concat(name || '/' || op_type || '/' || task_type || '/' || start_ns, ';')
   FROM traceloom_events('fixtures/nsys/nsys_textnames.sqlite'))
  = (SELECT group_concat(name || '/' || op_type || '/' || task_type || '/' || start_ns, ';')
     FROM traceloom_events('fixtures/nsys/nsys_basic.sqlite'));

SELECT 'events: graph kernels share the launch correlation id',
  (SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_graph.sqlite')
   WHERE correlation_id IN (500, 501, 502)) = 12;

SELECT 'events: graph trace rows are graph_launch envelopes',
  (SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_graphtrace.sqlite')
   WHERE kind = 'graph_launch' AND task_type = 'CUDA_GRAPH_TRACE' AND stream_id = 13
     AND name = 'CudaGraph graph=5 exec=9') = 2;

SELECT 'events: column names match case-insensitively; identity-only CUDA events skipped',
  (SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_legacy.sqlite')) = 2;

-- ------------------------------------------------------------------ traceloom_host_calls
SELECT 'host calls: every RUNTIME row, provider cuda, Nsight pid/tid decoding',
  (SELECT count(*) FROM traceloom_host_calls('fixtures/nsys/nsys_basic.sqlite')) = 32
  AND (SELECT count(*) FROM traceloom_host_calls('fixtures/nsys/nsys_basic.sqlite')
       WHERE provider = 'cuda' AND api_type = 'cuda_runtime' AND process_id = 4242
         AND thread_id = 4250 AND global_tid = (1 << 56) + (4242 << 24) + 4250) = 32;

SELECT 'host calls: launches carry the kernel correlation ids',
  (SELECT count(*) FROM traceloom_host_calls('fixtures/nsys/nsys_basic.sqlite')
   WHERE api_name IN ('cudaLaunchKernel_v7000', 'cudaLaunchKernelExC_v11060')
     AND correlation_id % 100 BETWEEN 10 AND 15) = 18;

SELECT 'host calls: a nameId missing from StringIds decodes to its decimal string',
  EXISTS (SELECT 1 FROM traceloom_host_calls('fixtures/nsys/nsys_basic.sqlite')
          WHERE api_name = '9999' AND correlation_id = 901 AND start_ns = 1999992000
            AND end_ns = 1999992001);

SELECT 'host calls: cudaGraphLaunch rows',
  (SELECT count(*) FROM traceloom_host_calls('fixtures/nsys/nsys_graph.sqlite')
   WHERE api_name = 'cudaGraphLaunch_v10000') = 3;

-- ------------------------------------------------------------------ traceloom_profile
SELECT 'profile: capabilities of nsys_basic',
  (SELECT group_concat(capability || '=' || usable, ',') FROM
     (SELECT capability, usable FROM traceloom_profile('fixtures/nsys/nsys_basic.sqlite')
      WHERE item = 'capability' AND capability IN ('device_tasks', 'host_api', 'memcpy',
            'graph_trace', 'graph_node_identity', 'nvtx', 'export_schema_version')
      ORDER BY capability))
  = 'device_tasks=1,export_schema_version=1,graph_node_identity=0,graph_trace=0,host_api=1,'
    || 'memcpy=1,nvtx=1';

SELECT 'profile: schema version and the reason a capability is unusable',
  EXISTS (SELECT 1 FROM traceloom_profile('fixtures/nsys/nsys_basic.sqlite')
          WHERE capability = 'export_schema_version' AND detail = 'EXPORT_SCHEMA_VERSION 3.11.1')
  AND EXISTS (SELECT 1 FROM traceloom_profile('fixtures/nsys/nsys_kernel_no_stream.sqlite')
              WHERE capability = 'device_tasks' AND usable = 0
                AND detail LIKE '%missing column(s): streamId%');

SELECT 'profile: graph node identity in the graph export',
  EXISTS (SELECT 1 FROM traceloom_profile('fixtures/nsys/nsys_graph.sqlite')
          WHERE capability = 'graph_node_identity' AND usable = 1);

-- ------------------------------------------------------------------ analysis
SELECT traceloom_analyze('fixtures/nsys/nsys_basic.sqlite');

SELECT 'analyze: every device event is published',
  (SELECT count(*) FROM traceloom_event) = 30;

SELECT 'analyze: every runtime call is published with provider cuda',
  (SELECT count(*) FROM traceloom_runtime_call WHERE provider = 'cuda') = 32;

SELECT 'analyze: each kernel launch relates exactly to its kernel (supported_exact)',
  (SELECT count(*) FROM traceloom_runtime_device_relation
   WHERE support_state = 'supported_exact' AND CAST(correlation_id AS INTEGER) % 100
         BETWEEN 10 AND 15) = 18;

SELECT 'analyze: calls without device work stay unmatched',
  (SELECT count(*) FROM traceloom_runtime_device_relation
   WHERE support_state = 'unmatched_runtime_call'
     AND CAST(correlation_id AS INTEGER) IN (900, 901)) = 2;

SELECT traceloom_analyze('fixtures/nsys/nsys_graph.sqlite');

SELECT 'analyze graph: each cudaGraphLaunch relates to its 3 kernels + 1 memcpy (one_to_many)',
  (SELECT count(*) FROM traceloom_runtime_device_relation
   WHERE CAST(correlation_id AS INTEGER) IN (500, 501, 502) AND support_state = 'supported_exact'
     AND cardinality = 'one_to_many') = 12;

-- The source registry (traceloom_source_ref, the reference's numbering): an Nsight reader
-- registers the kernel table, then each timed activity table holding rows in its fixed order
-- (here RUNTIME, 4 launches, and MEMCPY, 3 copies; the graph node table, the enums and
-- StringIds are no event tables), then the analysis's replay units (3 cudaGraphLaunch units).
SELECT 'source registry: kernels, runtime, copies, then the replay units',
  (SELECT group_concat(source_ref_id || ':' || source_table, ',')
     FROM (SELECT * FROM traceloom_source_ref ORDER BY db_idx, source_ref_id)) =
  '0:CUPTI_ACTIVITY_KIND_KERNEL,1:CUPTI_ACTIVITY_KIND_RUNTIME,2:CUPTI_ACTIVITY_KIND_MEMCPY,3:CUDA_GRAPH_REPLAY_UNIT';
SELECT 'decisions: source_ref_id by the registry, source_raw_json its id and the file',
  (SELECT group_concat(source_table || ':' || source_ref_id || ':' || n, ',') FROM (
     SELECT source_table, source_ref_id, count(*) AS n FROM traceloom_v_evidence_role_decision
     GROUP BY 1, 2 ORDER BY 1, 2)) =
  'CUDA_GRAPH_REPLAY_UNIT:3:3,CUPTI_ACTIVITY_KIND_KERNEL:0:10,CUPTI_ACTIVITY_KIND_MEMCPY:2:3'
  AND (SELECT count(*) FROM traceloom_v_evidence_role_decision
       WHERE json_extract(source_raw_json, '$.source_ref_id') = source_ref_id
         AND json_extract(source_raw_json, '$.source_path') LIKE '%/fixtures/nsys/nsys_graph.sqlite'
         AND source_raw_json LIKE '{"source_ref_id":%,"source_path":%}') = 16
  AND (SELECT count(*) FROM traceloom_v_event_source_locator l
       JOIN traceloom_evidence_role_decision d ON d.event_id = l.event_id
       WHERE l.source_ref_id = d.source_ref_id) = 16;
-- A unit's own event (the 3 unit events come after the reader's 13 events: event-13..15) is
-- placed as the reference places it: the normalized event, its replay unit, and the unit's
-- protected interval owned by the unit (evidence-role-event on it prints these rows).
SELECT 'a unit event is placed in its unit and its protected interval',
  (SELECT group_concat(k, ';') FROM (
     SELECT d.event_id, group_concat(p.placement_order || ':' || p.placement_kind || ':'
                                     || p.placement_id || ':' || coalesce(p.owner_id, '-'), ',') AS k
     FROM traceloom_evidence_role_decision d
     JOIN (SELECT * FROM traceloom_evidence_role_placement ORDER BY decision_id, placement_order) p
       ON p.decision_id = d.decision_id
     WHERE d.source_table = 'CUDA_GRAPH_REPLAY_UNIT'
     GROUP BY d.decision_id ORDER BY d.start_ns)) =
  '0:normalized_event:event-13:-,1:replay_unit:replay-unit-0:-,2:protected_interval:protected-interval-0:replay-unit-0;'
  || '0:normalized_event:event-14:-,1:replay_unit:replay-unit-1:-,2:protected_interval:protected-interval-1:replay-unit-1;'
  || '0:normalized_event:event-15:-,1:replay_unit:replay-unit-2:-,2:protected_interval:protected-interval-2:replay-unit-2';
-- ... and sits in the tree where its unit's members' unit placements sit (the occurrences
-- covering the unit's launch anchor), a protected boundary there
SELECT 'a unit event sits at its members'' unit and interval occurrences',
  (SELECT group_concat(x, ',') FROM (
     SELECT DISTINCT s.placement_kind || '/' || s.placement_id || '/' || s.node_id || '#'
                     || s.occurrence_idx || '/' || s.final_role AS x
     FROM traceloom_v_evidence_role_structure s
     JOIN traceloom_evidence_role_decision d ON d.decision_id = s.decision_id
     WHERE d.source_table = 'CUDA_GRAPH_REPLAY_UNIT' ORDER BY x)) =
  (SELECT group_concat(x, ',') FROM (
     SELECT DISTINCT s.placement_kind || '/' || s.placement_id || '/' || s.node_id || '#'
                     || s.occurrence_idx || '/' || s.final_role AS x
     FROM traceloom_v_evidence_role_structure s
     JOIN traceloom_evidence_role_decision d ON d.decision_id = s.decision_id
     WHERE d.source_table <> 'CUDA_GRAPH_REPLAY_UNIT'
       AND s.placement_kind IN ('replay_unit', 'protected_interval') ORDER BY x))
  AND (SELECT count(DISTINCT s.placement_id) FROM traceloom_v_evidence_role_structure s
       JOIN traceloom_evidence_role_decision d ON d.decision_id = s.decision_id
       WHERE d.source_table = 'CUDA_GRAPH_REPLAY_UNIT' AND s.final_role = 'protected_boundary') = 6;

-- ------------------------------------------------------------------ errors
-- expect-error: unsupported CUDA/Nsight kernel schema: missing required column(s): streamId
SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_kernel_no_stream.sqlite');

-- expect-error: unsupported CUDA/Nsight deviceId at ordered kernel row 1: -1
SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_negative_device.sqlite');

-- expect-error: unsupported CUDA/Nsight StringIds schema: missing required column(s): value
SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_stringids_no_value.sqlite');

-- expect-error: unsupported CUDA/Nsight CUPTI_ACTIVITY_KIND_MEMCPY schema: missing start or timestamp
SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_memcpy_no_start.sqlite');

-- expect-error: unsupported CUDA/Nsight CUPTI_ACTIVITY_KIND_CUDA_EVENT schema: end without start or timestamp
SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_event_end_no_start.sqlite');

-- expect-error: CUPTI_ACTIVITY_KIND_KERNEL
SELECT count(*) FROM traceloom_events('fixtures/nsys/nsys_no_kernel.sqlite');

-- Event ids are the same with and without a device filter (they number the whole profile):
-- a two-device export, kernels interleaved across devices in rowid order.
ATTACH 'nsys_two_devices.sqlite' AS twodev;
DROP TABLE IF EXISTS twodev.CUPTI_ACTIVITY_KIND_KERNEL;
CREATE TABLE twodev.CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, "end" INTEGER, deviceId INTEGER, streamId INTEGER,
  correlationId INTEGER, shortName TEXT, demangledName TEXT);
INSERT INTO twodev.CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (1000, 1100, 0, 7, 1, 'gemm_a', NULL), (1000, 1100, 1, 7, 2, 'gemm_a', NULL),
  (1200, 1300, 1, 7, 3, 'rms_norm', NULL), (1200, 1300, 0, 7, 4, 'rms_norm', NULL),
  (1400, 1500, 1, 7, 5, 'gemm_b', NULL);
DETACH twodev;
SELECT 'nsys: device filter keeps the ids of the unfiltered scan',
  (SELECT group_concat(event_id) FROM traceloom_events('nsys_two_devices.sqlite') WHERE device_id = 1) = '1,2,4'
  AND (SELECT group_concat(event_id) FROM (SELECT event_id, device_id + 0 AS d FROM traceloom_events('nsys_two_devices.sqlite')) WHERE d = 1) = '1,2,4';

-- kineto.sql: the PyTorch profiler (Kineto) Chrome-trace reader through the SQL surface, on
-- the traces tests/fixtures/make_kineto.py writes (fixtures/kineto/), and structure recovery
-- on the real traces tools/make_kineto_traces.py recorded (tests/data/kineto, copied to
-- fixtures/kineto/real/). In gpu_basic, kernel k of step s starts at
-- (1712345678901 + s*1000 + 10*(k+1)) us + 0.123 us, lasts 5.5 us and has correlation
-- 100*(s+1) + 10 + k; traceEvents holds 2 metadata events, then 18 events per step.
.load ./traceloom

-- ------------------------------------------------------------------ traceloom_events
SELECT 'events: 15 kernels + 3 memcpy + 3 memset; the kernel without ts is dropped',
  (SELECT count(*) FROM traceloom_events('fixtures/kineto/gpu_basic.pt.trace.json')) = 21;

SELECT 'events: first kernel with exact ns from "1712345678911.123" and provenance',
  EXISTS (SELECT 1 FROM traceloom_events('fixtures/kineto/gpu_basic.pt.trace.json')
          WHERE event_id = 0 AND source_table = 'traceEvents' AND source_rowid = 9
            AND device_id = 0 AND stream_id = 7 AND start_ns = 1712345678911123
            AND end_ns = 1712345678916623 AND kind = 'compute' AND name = 'rms_norm_kernel'
            AND op_type = 'CudaRmsNorm' AND task_type = 'CUDA_KERNEL' AND correlation_id = 110
            AND model_id IS NULL AND source_path LIKE '%/gpu_basic.pt.trace.json');

SELECT 'events: the gzip trace reads the same rows',
  (SELECT group_concat(event_id || ':' || source_rowid || ':' || start_ns || ':' || name, ',')
     FROM traceloom_events('fixtures/kineto/gpu_basic.pt.trace.json.gz'))
  = (SELECT group_concat(event_id || ':' || source_rowid || ':' || start_ns || ':' || name, ',')
     FROM traceloom_events('fixtures/kineto/gpu_basic.pt.trace.json'));

SELECT 'events: NCCL allreduce is communication on stream 20',
  (SELECT count(*) FROM traceloom_events('fixtures/kineto/gpu_basic.pt.trace.json')
   WHERE kind = 'communication' AND task_type = 'CUDA_COLLECTIVE_KERNEL' AND stream_id = 20) = 3;

SELECT 'events: memcpy and memset are data moves with their Kineto names',
  (SELECT count(*) FROM traceloom_events('fixtures/kineto/gpu_basic.pt.trace.json')
   WHERE (kind = 'data_move' AND task_type = 'CUDA_MEMCPY_AUX' AND name = 'Memcpy HtoD (Pageable -> Device)'
          AND end_ns - start_ns = 3000)
      OR (kind = 'data_move' AND task_type = 'CUDA_MEMSET_AUX' AND name = 'Memset (Device)')) = 6;

SELECT 'events: escaped kernel name is unescaped, lifted to CudaAux:Pointwise',
  (SELECT count(*) FROM traceloom_events('fixtures/kineto/gpu_basic.pt.trace.json')
   WHERE name = 'void at::native::vectorized_elementwise_kernel<4, "add">'
     AND op_type = 'CudaAux:Pointwise' AND task_type = 'CUDA_KERNEL_AUX') = 3;

SELECT 'events: the slow path (an escape in every object) reads the same rows as the fast path',
  (SELECT group_concat(event_id || ':' || source_rowid || ':' || start_ns || ':' || end_ns || ':' || stream_id
                       || ':' || name || ':' || coalesce(correlation_id, '-') || ':' || op_type, ',')
     FROM traceloom_events('fixtures/kineto/slow/gpu_basic.pt.trace.json'))
  = (SELECT group_concat(event_id || ':' || source_rowid || ':' || start_ns || ':' || end_ns || ':' || stream_id
                         || ':' || name || ':' || coalesce(correlation_id, '-') || ':' || op_type, ',')
     FROM traceloom_events('fixtures/kineto/gpu_basic.pt.trace.json'))
  AND (SELECT group_concat(event_id || ':' || source_rowid || ':' || start_ns || ':' || end_ns || ':' || name, ',')
     FROM traceloom_events('fixtures/kineto/slow/llama_l3_d6.pt.trace.json'))
  = (SELECT group_concat(event_id || ':' || source_rowid || ':' || start_ns || ':' || end_ns || ':' || name, ',')
     FROM traceloom_events('fixtures/kineto/real/llama_l3_d6.pt.trace.json.gz'))
  AND (SELECT count(*) FROM traceloom_events('fixtures/kineto/real/llama_l3_d6.pt.trace.json.gz')) > 4000;

-- ------------------------------------------------------------------ traceloom_host_calls
SELECT 'calls: 7 runtime calls per step, cudaGraphLaunch and a driver call',
  (SELECT count(*) FROM traceloom_host_calls('fixtures/kineto/gpu_basic.pt.trace.json')) = 23
  AND (SELECT count(*) FROM traceloom_host_calls('fixtures/kineto/gpu_basic.pt.trace.json')
       WHERE api_type = 'cuda_driver' AND api_name = 'cuLaunchKernel' AND correlation_id = 398) = 1;

SELECT 'calls: first launch with pid/tid and the synthetic global tid',
  EXISTS (SELECT 1 FROM traceloom_host_calls('fixtures/kineto/gpu_basic.pt.trace.json')
          WHERE call_id = 0 AND provider = 'cuda' AND api_name = 'cudaLaunchKernel'
            AND api_type = 'cuda_runtime' AND source_rowid = 4 AND process_id = 4242
            AND thread_id = 4250 AND global_tid = (4242 << 32 | 4250)
            AND start_ns = 1712345678902123 AND end_ns = 1712345678904123 AND correlation_id = 110);

SELECT 'calls: the slow path reads the same calls',
  (SELECT group_concat(call_id || ':' || source_rowid || ':' || start_ns || ':' || api_name || ':' || coalesce(correlation_id, '-'), ',')
     FROM traceloom_host_calls('fixtures/kineto/slow/gpu_basic.pt.trace.json'))
  = (SELECT group_concat(call_id || ':' || source_rowid || ':' || start_ns || ':' || api_name || ':' || coalesce(correlation_id, '-'), ',')
     FROM traceloom_host_calls('fixtures/kineto/gpu_basic.pt.trace.json'));

-- ------------------------------------------------------------------ traceloom_profile
SELECT 'profile: GPU trace uses the device plane; rank and device from the top level',
  (SELECT group_concat(capability || '=' || usable, ',') FROM
     (SELECT capability, usable FROM traceloom_profile('fixtures/kineto/gpu_basic.pt.trace.json')
      WHERE capability IN ('device_plane', 'cpu_operator_plane', 'rank', 'device_properties',
                           'host_api', 'runtime_device_correlation', 'graph_node_identity')
      ORDER BY capability))
  = 'cpu_operator_plane=0,device_plane=1,device_properties=1,graph_node_identity=0,host_api=1,'
    || 'rank=1,runtime_device_correlation=1';

SELECT 'profile: the traceEvents table counts every array element',
  (SELECT row_count FROM traceloom_profile('fixtures/kineto/gpu_basic.pt.trace.json')
   WHERE item = 'table' AND table_name = 'traceEvents') = 60;

-- ------------------------------------------------------------------ CPU-only traces
SELECT 'cpu: the main thread''s cpu_op events are the device plane',
  (SELECT count(*) FROM traceloom_events('fixtures/kineto/cpu_only.pt.trace.json')
   WHERE device_id = 0 AND stream_id = 100 AND kind = 'compute' AND task_type = 'CPU_OP'
     AND name = op_type) = 12;

SELECT 'cpu: baseTimeNanoseconds after traceEvents is added; 4-decimal durations round half-even',
  (SELECT group_concat(end_ns - start_ns, ',') FROM
     (SELECT * FROM traceloom_events('fixtures/kineto/cpu_only.pt.trace.json')
      WHERE name = 'aten::relu' ORDER BY event_id)) = '2000,2002,2001,2000'
  AND (SELECT min(start_ns) FROM traceloom_events('fixtures/kineto/cpu_only.pt.trace.json'))
      = 1700000000000001000;

SELECT 'cpu: capability rows name the plane used and the rounded values',
  (SELECT group_concat(capability || '=' || usable || '/' || row_count, ',') FROM
     (SELECT * FROM traceloom_profile('fixtures/kineto/cpu_only.pt.trace.json')
      WHERE capability IN ('device_plane', 'cpu_operator_plane', 'timestamp_precision')
      ORDER BY capability))
  = 'cpu_operator_plane=1/12,device_plane=0/0,timestamp_precision=1/3';

SELECT 'cpu: equal cpu_op time -> the smallest tid is the main thread',
  (SELECT group_concat(name) FROM traceloom_events('fixtures/kineto/cpu_tie.json')) = 'aten::b';

-- ------------------------------------------------------------------ discovery
SELECT 'discovery: a directory of per-rank traces is one db_idx per file, sorted',
  (SELECT group_concat(db_idx || ':' || device_id || ':' || name, ',') FROM
     traceloom_events('fixtures/kineto/ranks')) = '0:0:gemm_0,1:1:gemm_1';

-- ------------------------------------------------------------------ errors
-- Byte offsets counted in the literal texts of make_kineto.py.
-- expect-error: at byte 29: expected ',' or ']' in traceEvents, found '{'
SELECT count(*) FROM traceloom_events('fixtures/kineto/bad/bad_comma.json');
-- expect-error: at byte 35: unknown literal "tru"
SELECT count(*) FROM traceloom_events('fixtures/kineto/bad/bad_literal.json');
-- expect-error: at byte 26: unterminated string
SELECT count(*) FROM traceloom_events('fixtures/kineto/bad/unterminated.json');
-- expect-error: has no traceEvents array
SELECT count(*) FROM traceloom_events('fixtures/kineto/bad/no_events.json');
-- expect-error: truncated gzip stream in Kineto trace
SELECT count(*) FROM traceloom_events('fixtures/kineto/bad/truncated.pt.trace.json.gz');
-- expect-error: is a Chrome-trace JSON file, not the requested source_kind cuda_nsys_sqlite
SELECT traceloom_analyze('fixtures/kineto/gpu_basic.pt.trace.json', '{"source_kind": "cuda_nsys_sqlite"}');

-- ------------------------------------------------------------------ real traces
-- Llama, 3 layers, prefill + 6 decode steps (tests/data/kineto/llama_l3_d6.json).
SELECT 'analyze llama_l3_d6', traceloom_analyze('fixtures/kineto/real/llama_l3_d6.pt.trace.json.gz')
  LIKE '%(kineto_json)%1 tree(s)%';
-- include: structure_invariants.inc
-- The decode-step body also holds small repeats (e.g. three consecutive aten::to, a Rep x3
-- like the layers, once per decode step): the layer repeat is the one whose iteration is a
-- whole decoder layer (well over 50 operators), the small ones hold a few.
SELECT 'llama_l3_d6: a repeat over the decode steps holds a repeat over the layers',
  (SELECT count(*) FROM traceloom_position_refinement r
     JOIN traceloom_semantic_node o ON o.node_id = r.parent_position_id AND o.tree_id = r.tree_id
     JOIN traceloom_semantic_node i ON i.node_id = r.child_position_id AND i.tree_id = r.tree_id
    WHERE o.node_type = 'Repeat' AND i.node_type = 'Repeat'
      AND o.repeat_count = json_extract(readfile('fixtures/kineto/real/llama_l3_d6.json'), '$.decode_steps')
      AND i.repeat_count = json_extract(readfile('fixtures/kineto/real/llama_l3_d6.json'), '$.layers')
      AND (SELECT occurrence_count FROM traceloom_v_tree_node v WHERE v.node_id = i.node_id)
          = json_extract(readfile('fixtures/kineto/real/llama_l3_d6.json'), '$.decode_steps')
      AND (SELECT anchors_per_occurrence FROM traceloom_v_tree_node v WHERE v.node_id = i.node_id)
          > 50 * i.repeat_count) = 1;
SELECT 'llama_l3_d6: the decode repeat occurs once, the layer repeat once per decode step',
  (SELECT count(*) FROM traceloom_v_tree_node WHERE kind = 'repeat' AND loop_depth = 1
     AND repeat_count = 6 AND occurrence_count = 1) = 1
  AND (SELECT count(*) FROM traceloom_v_tree_node WHERE kind = 'repeat' AND loop_depth = 2
     AND repeat_count = 3 AND occurrence_count = 6 AND anchors_per_occurrence > 150) = 1;
SELECT 'llama_l3_d6: the CPU operator plane was used',
  (SELECT usable FROM traceloom_profile('fixtures/kineto/real/llama_l3_d6.pt.trace.json.gz')
   WHERE capability = 'cpu_operator_plane') = 1;

-- GPT-2, 2 layers, prefill + 5 decode steps (tests/data/kineto/gpt2_l2_d5.json).
SELECT 'analyze gpt2_l2_d5', traceloom_analyze('fixtures/kineto/real/gpt2_l2_d5.pt.trace.json.gz')
  LIKE '%(kineto_json)%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'gpt2_l2_d5: a repeat over the decode steps holds a repeat over the layers',
  (SELECT count(*) FROM traceloom_position_refinement r
     JOIN traceloom_semantic_node o ON o.node_id = r.parent_position_id AND o.tree_id = r.tree_id
     JOIN traceloom_semantic_node i ON i.node_id = r.child_position_id AND i.tree_id = r.tree_id
    WHERE o.node_type = 'Repeat' AND i.node_type = 'Repeat'
      AND o.repeat_count = json_extract(readfile('fixtures/kineto/real/gpt2_l2_d5.json'), '$.decode_steps')
      AND i.repeat_count = json_extract(readfile('fixtures/kineto/real/gpt2_l2_d5.json'), '$.layers')
      AND (SELECT occurrence_count FROM traceloom_v_tree_node v WHERE v.node_id = i.node_id)
          = json_extract(readfile('fixtures/kineto/real/gpt2_l2_d5.json'), '$.decode_steps')
      AND (SELECT anchors_per_occurrence FROM traceloom_v_tree_node v WHERE v.node_id = i.node_id)
          > 50 * i.repeat_count) = 1;
SELECT 'gpt2_l2_d5: the layer repeat occurs once per decode step',
  (SELECT count(*) FROM traceloom_v_tree_node WHERE kind = 'repeat' AND loop_depth = 2
     AND repeat_count = 2 AND occurrence_count = 5 AND anchors_per_occurrence > 100) = 1;

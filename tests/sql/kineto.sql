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
     FROM traceloom_events('fixtures/kineto/slow/llama_l3_d4.pt.trace.json'))
  = (SELECT group_concat(event_id || ':' || source_rowid || ':' || start_ns || ':' || end_ns || ':' || name, ',')
     FROM traceloom_events('fixtures/kineto/real/llama_l3_d4.pt.trace.json.gz'))
  AND (SELECT count(*) FROM traceloom_events('fixtures/kineto/real/llama_l3_d4.pt.trace.json.gz')) > 3000;

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
-- Recorded by tools/make_kineto_traces.py (tests/data/kineto/README.md), one input each of
-- the directory: Llama, Qwen2, Mistral, GPT-2 and OPT with module ranges (with_modules and
-- with_stack), and a Llama with record_function("decode_<k>") ranges and no module. All with
-- schedule + prof.step() after the prefill and every decode forward, so 1 + decode_steps
-- ProfilerStep#k ranges; prefill and decode run the same operators (the cache is one code
-- path in transformers 5), so the step loop has $.steps iterations, each holding the decoder
-- layers once. Each trace's config is <trace>.json beside it.
SELECT 'analyze the real traces, one input each',
  traceloom_analyze('fixtures/kineto/real') LIKE '%6 input(s) (kineto_json)%in 6 tree(s)%';
-- include: structure_invariants.inc
CREATE TEMP TABLE cfg AS
  SELECT db_idx, json(readfile(replace(path, '.pt.trace.json.gz', '.json'))) AS c FROM traceloom_input;
SELECT 'real traces: five families with module ranges',
  (SELECT count(DISTINCT json_extract(c, '$.arch')) FROM cfg WHERE json_extract(c, '$.modules')) = 5;
SELECT 'real traces: the step loop (one iteration per prof.step()) holds the layer loop, both named',
  (SELECT count(*) FROM cfg
     JOIN traceloom_v_tree_node o ON o.db_idx = cfg.db_idx
     JOIN traceloom_v_tree_node i ON i.parent_n = o.node_n
    WHERE o.kind = 'repeat' AND o.loop_depth = 1 AND o.occurrence_count = 1
      AND o.repeat_count = json_extract(c, '$.steps')
      AND o.label = 'ProfilerStep x' || o.repeat_count AND o.symbol = 'Rep x' || o.repeat_count
      AND i.kind = 'repeat' AND i.repeat_count = json_extract(c, '$.layers')
      AND i.occurrence_count = o.repeat_count
      AND i.label = iif(json_extract(c, '$.modules'), json_extract(c, '$.layer_class'), 'Rep')
                    || ' x' || i.repeat_count
      AND i.anchors_per_occurrence = (SELECT max(x.anchors_per_occurrence) FROM traceloom_v_tree_node x
                                       WHERE x.parent_n = o.node_n AND x.kind = 'repeat'))
  = (SELECT count(*) FROM cfg);
SELECT 'real traces: the structure is partitioned by the profiler steps, one per iteration',
  (SELECT group_concat(n, ',') FROM (SELECT count(*) AS n FROM traceloom_profiler_step GROUP BY db_idx ORDER BY db_idx))
  = (SELECT group_concat(json_extract(c, '$.steps'), ',') FROM (SELECT * FROM cfg ORDER BY db_idx))
  AND (SELECT count(*) FROM traceloom_profiler_step s
         JOIN traceloom_v_tree_node v ON v.db_idx = s.db_idx AND v.kind = 'repeat' AND v.loop_depth = 1
                                     AND v.label LIKE 'ProfilerStep x%'
         JOIN traceloom_node_core n ON n.node_n = v.node_n
         JOIN traceloom_position_occurrence_core o ON o.occurrence_n = n.first_occurrence_n
        WHERE s.name = 'ProfilerStep#' || s.ordinal
          AND s.anchor_count = n.token_len / n.repeat_count
          AND s.first_anchor_n = o.anchor_first_n + (s.ordinal * s.anchor_count)
          AND s.end_anchor_n = s.first_anchor_n + s.anchor_count)
      = (SELECT sum(json_extract(c, '$.steps')) FROM cfg);
SELECT 'real traces: every CPU operator has a role by rule: compute anchors, views transparent, copies auxiliary',
  (SELECT count(*) FROM traceloom_evidence_role_class WHERE final_role = 'unknown_anchor') = 0
  AND (SELECT count(*) FROM traceloom_evidence_role_class WHERE op_name IN ('aten::linear', 'aten::embedding')
        AND final_role = 'anchor' AND rule_id = 'cuda.anchor.operator.cpu_compute') = 2
  AND (SELECT count(*) FROM traceloom_evidence_role_class WHERE op_name IN ('aten::view', 'aten::t')
        AND final_role = 'transparent' AND rule_id = 'cuda.transparent.operator.cpu_view') = 2
  AND (SELECT final_role FROM traceloom_evidence_role_class WHERE op_name = 'aten::copy_') = 'auxiliary'
  AND (SELECT count(*) FROM traceloom_anchor WHERE role = 'compute') = (SELECT count(*) FROM traceloom_anchor);
SELECT 'real traces: an outline one line wide still shows every loop',
  (WITH o AS (SELECT traceloom_loop_tree('{"max_children": 1, "max_depth": 10}') AS md)
   SELECT count(*) FROM traceloom_v_tree_node v, o
    WHERE v.kind = 'repeat'
      AND instr(o.md, '- ' || v.local_node_id || ' ' || v.label || '  total_us=' || printf('%.3f', v.total_us)) > 0)
  = (SELECT count(*) FROM traceloom_v_tree_node WHERE kind = 'repeat')
  AND instr(traceloom_loop_tree('{"max_children": 1, "max_depth": 10}'), ' more node(s), total_us=') > 0;
SELECT 'llama_l3_d4: the CPU operator plane was used',
  (SELECT usable FROM traceloom_profile('fixtures/kineto/real/llama_l3_d4.pt.trace.json.gz')
   WHERE capability = 'cpu_operator_plane') = 1;

-- A step marker pattern (analyze option step_markers): record_function("decode_<k>") around
-- each decode forward of llama_l2_d3_annotated (no module ranges). A step runs from its marker
-- to the next one, within the ProfilerStep range around it: decode forward + argmax.
SELECT 'analyze llama_l2_d3_annotated by decode_*',
  traceloom_analyze('fixtures/kineto/real/llama_l2_d3_annotated.pt.trace.json.gz',
                    '{"step_markers": "decode_*"}') LIKE '%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'llama_l2_d3_annotated: decode_1..N are the steps, alike',
  (SELECT group_concat(name || ':' || ordinal, ',') FROM (SELECT * FROM traceloom_profiler_step ORDER BY step_n))
    = 'decode_1:1,decode_2:2,decode_3:3'
  AND (SELECT count(DISTINCT anchor_count) FROM traceloom_profiler_step) = 1
  AND (SELECT count(*) FROM traceloom_profiler_step WHERE host_end_ns > host_start_ns
         AND end_anchor_n - first_anchor_n = anchor_count) = 3;
-- The layer loop is the inner repeat with the largest iteration (the others are pairs of
-- operators); without module ranges it has no name.
SELECT 'llama_l2_d3_annotated: the decode steps repeat (the prefill, outside them, alike), layers inside unnamed',
  (SELECT i.repeat_count || ' ' || i.label FROM traceloom_v_tree_node o
     JOIN traceloom_v_tree_node i ON i.parent_n = o.node_n
    WHERE o.kind = 'repeat' AND o.loop_depth = 1 AND i.kind = 'repeat'
      AND o.repeat_count = json_extract(readfile('fixtures/kineto/real/llama_l2_d3_annotated.json'), '$.steps')
    ORDER BY i.anchors_per_occurrence DESC LIMIT 1)
  = json_extract(readfile('fixtures/kineto/real/llama_l2_d3_annotated.json'), '$.layers') || ' Rep x'
    || json_extract(readfile('fixtures/kineto/real/llama_l2_d3_annotated.json'), '$.layers');
SELECT 'analyze llama_l2_d3_annotated without step markers',
  traceloom_analyze('fixtures/kineto/real/llama_l2_d3_annotated.pt.trace.json.gz',
                    '{"step_markers": ""}') LIKE '%1 tree(s)%';
SELECT 'llama_l2_d3_annotated: no step markers, no steps; the loops are recovered as without them',
  (SELECT count(*) FROM traceloom_profiler_step) = 0
  AND (SELECT count(*) FROM traceloom_v_tree_node WHERE kind = 'repeat' AND loop_depth = 1
         AND repeat_count = json_extract(readfile('fixtures/kineto/real/llama_l2_d3_annotated.json'), '$.steps')) = 1;

-- ------------------------------------------------------------------ steps on a device plane
-- gpu_steps (make_kineto.py): 6 ProfilerStep ranges of 4 DecoderLayer module ranges, 3 kernels
-- each, no boundary kernel between steps; every launch delay 50 us; per step busy 120 us, idle
-- 230 us (+ 650 us before every step after the first), host-bound 150 us (+ 650 us).
SELECT 'analyze gpu_steps without step markers',
  traceloom_analyze('fixtures/kineto/gpu_steps.pt.trace.json', '{"step_markers": ""}') LIKE '%72 anchors in 1 tree(s)%';
SELECT 'gpu_steps: without the step markers, one flat loop of 24 layers',
  (SELECT group_concat(label, ',') FROM traceloom_v_tree_node WHERE kind = 'repeat') = 'DecoderLayer x24';
SELECT 'analyze gpu_steps', traceloom_analyze('fixtures/kineto/gpu_steps.pt.trace.json') LIKE '%72 anchors in 1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'gpu_steps: 6 steps over 4 layers, named by the step marker and the module',
  (SELECT group_concat(label || '/' || repeat_count || '/' || occurrence_count || '/' || loop_depth, ',')
     FROM (SELECT * FROM traceloom_v_tree_node WHERE kind = 'repeat' ORDER BY display_order))
  = 'ProfilerStep x6/6/1/1,DecoderLayer x4/4/6/2';
SELECT 'gpu_steps: each step holds its 12 kernels',
  (SELECT count(*) FROM traceloom_profiler_step WHERE anchor_count = 12
     AND first_anchor_n = (step_n - 1) * 12 AND end_anchor_n = step_n * 12
     AND host_start_ns = 1700000000000000000 + (step_n - 1) * 1000000000 / 1000
     AND name = 'ProfilerStep#' || (step_n - 1) AND process_id = 100 AND thread_id = 101) = 6;
SELECT 'gpu_steps: every kernel''s launch delay is 50 us, per kernel and per node',
  (SELECT count(*) || '/' || min(launch_delay_us) || '/' || max(launch_delay_us) || '/' || max(call_us)
     FROM traceloom_v_launch_delay WHERE api_name = 'cudaLaunchKernel' AND anchor_n IS NOT NULL)
  = '72/50.0/50.0/5.0'
  AND (SELECT launched_anchors || '/' || avg_launch_delay_us FROM traceloom_v_node_launch_delay
        WHERE label = 'DecoderLayer x4') = '72/50.0'
  AND (SELECT launched_anchors FROM traceloom_v_node_launch_delay WHERE label = 'layer_kernel_b') = 24;
SELECT 'gpu_steps: busy, idle and the host-bound share of each step',
  (SELECT group_concat(step_n || ':' || busy_us || '/' || idle_us || '/' || host_wait_us || '/' || host_bound_share, ',')
     FROM (SELECT * FROM traceloom_v_profiler_step ORDER BY step_n))
  = '1:120.0/230.0/150.0/0.4286,2:120.0/880.0/800.0/0.8,3:120.0/880.0/800.0/0.8,'
    || '4:120.0/880.0/800.0/0.8,5:120.0/880.0/800.0/0.8,6:120.0/880.0/800.0/0.8';
SELECT 'gpu_steps: the kernel breakdown of a step',
  (SELECT group_concat(symbol || ':' || anchors || '/' || busy_us || '/' || total_us, ',')
     FROM (SELECT * FROM traceloom_v_profiler_step_symbol WHERE step_n = 2 ORDER BY symbol))
  = 'layer_kernel_a:4/40.0/840.0,layer_kernel_b:4/40.0/80.0,layer_kernel_c:4/40.0/80.0';
SELECT 'gpu_steps: cuda_sync events are auxiliary syncs, the stream sync related to its call',
  (SELECT group_concat(raw_label || '/' || kind || '/' || coalesce(stream_id, '-') || '/' || role, ',')
     FROM (SELECT * FROM traceloom_event WHERE task_type = 'CUDA_SYNC_AUX' ORDER BY event_n))
  = 'Stream Sync/sync/7/aux,Context Sync/sync/-/aux'
  AND (SELECT c.api_name FROM traceloom_event e JOIN traceloom_runtime_call c ON c.call_n = e.launch_call_n
        WHERE e.raw_label = 'Stream Sync') = 'cudaStreamSynchronize'
  AND (SELECT count(*) FROM traceloom_anchor) = 72;
SELECT 'gpu_steps: the Perfetto export names the loops as the tree does',
  traceloom_export_perfetto('gpu_steps.perfetto.json') > 0
  AND instr(readfile('gpu_steps.perfetto.json'), '"N003 · DecoderLayer x4') > 0
  AND instr(readfile('gpu_steps.perfetto.json'), '"N002 · ProfilerStep x6') > 0;

-- event_words.sql: the words of traceloom_event, traceloom_device_work and
-- traceloom_operator_audit are the reference TraceLoom 0.1.4's (docs/PARITY.md), derived from
-- the fixtures' own rows:
--   minimal_smoke (../shared/fixtures/ascend_sqlite/minimal_smoke/msprof.sql): TASK 1 is an
--     AI_CORE task whose COMPUTE_TASK_INFO names the operator model.layers.0.mlp.gate_up_proj,
--     opType MatMul; TASK 2 an EVENT_WAIT whose COMMUNICATION_TASK_INFO names
--     comm_task_hccl_allreduce; COMMUNICATION_OP 1 is hcclAllReduce, opType hcom_allReduce_.
--   exact_hlt: 14 MODEL_EXECUTE, 14 NOTIFY_WAIT, 14 NOTIFY_RECORD tasks and 28 named
--     KERNEL_AIVEC operators (tests/sql/classify.sql).
--   nsys_basic (tests/fixtures/make_nsys.py): 3 steps, each with a matmul, flash attention,
--     rms norm and rotary kernel (12 CUDA_KERNEL), an NCCL allreduce kernel, an elementwise
--     kernel (lifted CudaAux:Pointwise), one memcpy, memset, CUDA event and stream sync.
--   hipprof (tests/fixtures/make_hygon.py): six HIPOPS kernels and one HIPCOPY copy.
.load ./traceloom

SELECT 'analyze minimal_smoke', traceloom_analyze('fixtures/minimal_smoke/mono') LIKE 'traceloom: analysed 1 input(s)%';

SELECT 'the label is the short operator name, the op name stays op_name',
  (SELECT label || '|' || op_name || '|' || op_type || '|' || raw_label
   FROM traceloom_event WHERE source_table = 'TASK' AND source_key = '1')
  = 'MatMul|model.layers.0.mlp.gate_up_proj|MatMul|AI_CORE';

SELECT 'a communication task is labelled by its collective, family comm',
  (SELECT label || '|' || raw_label || '|' || category || '|' || role || '|' || family
   FROM traceloom_event WHERE source_table = 'TASK' AND source_key = '2')
  = 'comm_task_hccl_allreduce|EVENT_WAIT|comm|comm|comm';

SELECT 'a communication op: its name, no compute op_type, its op type in comm_task_type',
  (SELECT label || '|' || coalesce(op_type, 'NULL') || '|' || comm_task_type || '|' || family
   FROM traceloom_event WHERE source_table = 'COMMUNICATION_OP')
  = 'hcclAllReduce|NULL|hcom_allReduce_|comm';

SELECT 'the compute task: category, role and family compute; kind keeps compute',
  (SELECT category || '|' || role || '|' || family || '|' || kind
   FROM traceloom_event WHERE source_table = 'TASK' AND source_key = '1')
  = 'compute|compute|compute|compute';

SELECT 'device work: every item is event work, named by its operator, else its raw label',
  (SELECT group_concat(work_kind || ':' || symbol, ',') FROM
     (SELECT * FROM traceloom_device_work ORDER BY event_n))
  = 'event:model.layers.0.mlp.gate_up_proj,event:EVENT_WAIT';

SELECT 'device work keeps the profiler task id (taskId 99, 100)',
  (SELECT group_concat(task_id, ',') FROM (SELECT * FROM traceloom_device_work ORDER BY event_n))
  = '99,100';

SELECT 'analyze exact_hlt', traceloom_analyze('fixtures/exact_hlt/mono') LIKE 'traceloom: analysed 1 input(s)%';

SELECT 'every Ascend task is compute, launches and notifies too; kind tells them apart',
  (SELECT count(*) FROM traceloom_event
   WHERE source_table = 'TASK' AND category = 'compute' AND role = 'compute'
     AND family = 'compute') = 70
  AND (SELECT count(*) FROM traceloom_event
       WHERE task_type = 'MODEL_EXECUTE' AND kind = 'graph_launch' AND label = 'MODEL_EXECUTE') = 14
  AND (SELECT count(*) FROM traceloom_event
       WHERE task_type IN ('NOTIFY_WAIT', 'NOTIFY_RECORD') AND kind = 'control'
         AND label = task_type) = 28;

SELECT 'the operator audit lists the 28 named operators, no launch or notify task',
  (SELECT sum(occurrence_count) FROM traceloom_operator_audit) = 28
  AND NOT EXISTS (SELECT 1 FROM traceloom_operator_audit
                  WHERE task_type IN ('MODEL_EXECUTE', 'NOTIFY_WAIT', 'NOTIFY_RECORD'));

SELECT 'a launch control is still found for its launch (work_kind is event for every event)',
  (SELECT count(DISTINCT work_kind) FROM traceloom_device_work WHERE event_id IS NOT NULL) = 1
  AND (SELECT min(work_kind) FROM traceloom_device_work WHERE event_id IS NOT NULL) = 'event'
  AND (SELECT count(*) FROM traceloom_device_work w
       JOIN traceloom_graph_launch_control c ON c.event_n = w.event_n
       WHERE c.control_kind = 'execute') = 14;

-- The 14 MODEL_EXECUTE tasks are 14 launches: each is device work of its own (the reference's
-- graph_launch work, no event), at its MODEL_EXECUTE task's source row; no derived launch
-- event (source_table graph_replay) is device work.
SELECT 'every graph launch is device work at its MODEL_EXECUTE row',
  (SELECT count(*) FROM traceloom_device_work w
   JOIN traceloom_event e ON e.source_table = w.source_table AND e.source_key = w.source_key
    AND e.task_type = 'MODEL_EXECUTE'
   WHERE w.work_kind = 'graph_launch' AND w.event_id IS NULL AND w.symbol = 'graph_launch') = 14
  AND NOT EXISTS (SELECT 1 FROM traceloom_device_work WHERE source_table = 'graph_replay');

SELECT 'analyze nsys_basic', traceloom_analyze('fixtures/nsys/nsys_basic.sqlite') LIKE 'traceloom: analysed 1 input(s)%';

SELECT 'CUDA kernels: the lifted label, compute task type = task type, compute',
  (SELECT count(*) FROM traceloom_event
   WHERE task_type = 'CUDA_KERNEL' AND label = op_type AND compute_task_type = 'CUDA_KERNEL'
     AND family = 'compute' AND label LIKE 'Cuda%') = 12;

SELECT 'CUDA auxiliary rows (task type _AUX) are aux, named by the task type when unnamed',
  (SELECT count(*) FROM traceloom_event
   WHERE task_type LIKE '%\_AUX' ESCAPE '\' AND family = 'aux' AND category = 'aux'
     AND role = 'aux' AND compute_task_type = task_type) = 15
  AND (SELECT count(*) FROM traceloom_event
       WHERE source_table <> 'CUPTI_ACTIVITY_KIND_KERNEL'
         AND label = task_type AND op_type IS NULL) = 12
  AND (SELECT count(*) FROM traceloom_event
       WHERE task_type = 'CUDA_KERNEL_AUX' AND label = 'CudaAux:Pointwise') = 3;

SELECT 'the operator audit counts the auxiliary rows by task type, no copy under a kernel name',
  (SELECT count(*) FROM traceloom_operator_audit
   WHERE operator_name = task_type AND occurrence_count = 3
     AND task_type IN ('CUDA_MEMCPY_AUX', 'CUDA_MEMSET_AUX', 'CUDA_SYNC_AUX', 'CUDA_EVENT_AUX')) = 4;

SELECT 'the raw labels stay the profiler''s (copies, syncs)',
  (SELECT count(*) FROM traceloom_event
   WHERE raw_label LIKE 'CudaMemcpy kind=1 bytes=%' OR raw_label = 'STREAM_SYNCHRONIZE') = 6;

SELECT 'NCCL kernels: label is the collective, family comm',
  (SELECT count(*) FROM traceloom_event
   WHERE task_type = 'CUDA_COLLECTIVE_KERNEL' AND family = 'comm'
     AND label = 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL') = 3;

SELECT 'analyze hipprof', traceloom_analyze('fixtures/hygon/hipprof.db') LIKE 'traceloom: analysed 1 input(s)%';

SELECT 'Hygon: kernels compute with compute task type HIP_KERNEL; the copy is DataMove, comm',
  (SELECT count(*) FROM traceloom_event
   WHERE source_table LIKE 'HIPOPS%' AND family = 'compute' AND compute_task_type = 'HIP_KERNEL') = 6
  AND (SELECT label || '|' || family || '|' || kind || '|' || compute_task_type FROM traceloom_event
       WHERE source_table LIKE 'HIPCOPY%') = 'DataMove|comm|data_move|MEMCPY';

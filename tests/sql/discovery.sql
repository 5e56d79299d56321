-- Discovery of profile paths and the precise errors for bad input (inputs.md section 1).

-- torch-npu rank directories: the companion comes from exactly one sibling PROF_* container.
SELECT 'torch-npu: one sibling container is the companion',
  (SELECT usable = 1 AND detail = 'stream_info_sibling_container' AND path LIKE '%/rank0_ascend_pt/PROF_000001/host/sqlite/stream_info.db'
   FROM traceloom_profile('fixtures/torchnpu/single') WHERE capability = 'capture_stream_companion');
SELECT 'torch-npu: the sibling PROF_ is a companion, not a second input',
  (SELECT count(*) FROM traceloom_profile('fixtures/torchnpu/single') WHERE item = 'input') = 1;
SELECT 'torch-npu: two sibling containers are refused, naming both',
  (SELECT usable = 0 AND detail LIKE '2 sibling PROF_* containers (%PROF_000001, %PROF_000002): refusing to choose one%'
   FROM traceloom_profile('fixtures/torchnpu/ambiguous') WHERE capability = 'capture_stream_companion');
SELECT 'torch-npu: no sibling container gives the msprof advice',
  (SELECT usable = 0 AND detail LIKE '%msprof --parse=on --output=/absolute/path/to/PROF_container%'
   FROM traceloom_profile('fixtures/torchnpu/none') WHERE capability = 'capture_stream_companion');
SELECT 'torch-npu: the DB under ASCEND_PROFILER_OUTPUT named directly finds the same companion',
  (SELECT detail FROM traceloom_profile('fixtures/torchnpu/single/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db')
   WHERE capability = 'capture_stream_companion') = 'stream_info_sibling_container';
SELECT 'torch-npu: events are read from the framework DB',
  (SELECT count(*) FROM traceloom_events('fixtures/torchnpu/ambiguous')) = 70;

-- Split fallback: an unusable monolithic DB in a PROF_ container falls back to the split layout.
SELECT 'split fallback: warning row names the container (all optional tables present: no list)',
  (SELECT detail LIKE 'warning: using Ascend split SQLite fallback: %/split_golden/fallback/PROF_0'
   FROM traceloom_profile('fixtures/split_golden/fallback') WHERE item = 'warning');
SELECT 'split fallback: input kind', (SELECT source_kind FROM traceloom_profile('fixtures/split_golden/fallback') WHERE item = 'input') = 'ascend_sqlite_split';

-- Several ranks in one directory, sorted: one db_idx each.
SELECT 'two ranks: inputs in path order',
  (SELECT group_concat(db_idx || ':' || substr(path, -18), ',') FROM traceloom_profile('fixtures/two_ranks') WHERE item = 'input')
  = '0:PROF_0/msprof_0.db,1:PROF_1/msprof_1.db';

-- Bad input: precise messages, nothing published.
-- expect-error: profile path does not exist: fixtures/nope
SELECT * FROM traceloom_events('fixtures/nope');
-- expect-error: bad/not_sqlite.db': file is not a database (expected a SQLite database)
SELECT traceloom_analyze('fixtures/bad/not_sqlite.db');
-- expect-error: bad/truncated.db': database disk image is malformed
SELECT traceloom_analyze('fixtures/bad/truncated.db');
-- expect-error: no supported profile tables in
SELECT traceloom_analyze('fixtures/bad/no_tables.db');
-- expect-error: HIPOPS_*/HIPCOPY_*/HIP_* (Hygon hipprof), each with at least one row; found: unrelated
SELECT traceloom_analyze('fixtures/bad/no_tables.db');
-- expect-error: found: no tables
SELECT traceloom_analyze('fixtures/bad/empty_schema.db');
-- expect-error: Ascend SQLite profile has an incompatible TASK schema: 
SELECT traceloom_analyze('fixtures/split_golden/neg_incompatible_monolithic');
-- expect-error: table TASK is missing column(s): endNs, deviceId, streamId, taskId, globalTaskId, connectionId, taskType
SELECT * FROM traceloom_profile('fixtures/split_golden/neg_incompatible_monolithic/PROF_0/msprof_0.db');
-- expect-error: no supported profile found under input path: 
SELECT traceloom_analyze('fixtures/split_golden/neg_unusable_monolithic');
-- expect-error: split SQLite profile is missing required device_*/sqlite/ascend_task.db:AscendTask table: 
SELECT traceloom_analyze('fixtures/bad/split_no_task');
-- expect-error: unreadable capture-stream companion database: failed to open read-only SQLite profile
SELECT traceloom_analyze('fixtures/bad/companion_unreadable');
-- expect-error: input path is required
SELECT traceloom_analyze('');
-- expect-error: analyze option "source_kind" must be one of auto,
SELECT traceloom_analyze('fixtures/minimal_smoke/mono', '{"source_kind": "ascend"}');
-- expect-error: is a profile of source_kind ascend_sqlite_hot_path, not the requested source_kind cuda_nsys_sqlite
SELECT traceloom_analyze('fixtures/minimal_smoke/mono/PROF_0/msprof_0.db', '{"source_kind": "cuda_nsys_sqlite"}');
SELECT 'bad input: nothing was published', (SELECT count(*) FROM sqlite_schema WHERE name LIKE 'traceloom%') = 0;

-- A companion without the capture columns is an explicit status, not an error.
SELECT 'incompatible companion analysed', traceloom_analyze('fixtures/bad/companion_incompatible') LIKE '%3 events%';
SELECT 'incompatible companion: typed status with the reason',
  (SELECT stream_info_status = 'stream_info_incompatible_schema' AND stream_info_detail LIKE '%has neither stream_id nor model_stream_id%' FROM traceloom_input);

-- Option embed_raw: the raw source tables are copied (rows and rowids unchanged), so the
-- analysis database is self-contained and every event resolves to its raw row here.

-- A single-file profile keeps the original table names.
SELECT 'embed minimal', traceloom_analyze('fixtures/minimal_smoke/mono', '{"embed_raw": true}') LIKE '%3 events%';
SELECT 'single file: original names', (SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'traceloom%' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name))
  = 'COMMUNICATION_OP,COMMUNICATION_TASK_INFO,COMPUTE_TASK_INFO,STRING_IDS,TASK';
SELECT 'metadata says embedded', (SELECT value FROM traceloom_metadata WHERE key = 'source_embedded') = '1';
SELECT 'canonical options record it', (SELECT json_extract(value, '$.embed_raw') FROM traceloom_metadata WHERE key = 'analysis_options') = 1;
SELECT 'every event resolves to an embedded row', (SELECT count(*) FROM traceloom_v_event_source_locator WHERE resolution_status = 'embedded_raw') = 3;
SELECT 'the embedded TASK row is the event''s raw row (rowid kept)',
  (SELECT count(*) FROM traceloom_event e JOIN TASK t ON t.rowid = CAST(e.source_key AS INTEGER)
    WHERE e.source_table = 'TASK' AND t.startNs = e.start_ns AND t.endNs = e.end_ns) = 2;

-- Several files (DB + companion): collision-free names; a re-run replaces them.
SELECT 'embed exact_hlt', traceloom_analyze('fixtures/exact_hlt/mono', '{"embed_raw": true}') LIKE '%70 events%';
SELECT 'earlier embedded tables were dropped', (SELECT count(*) FROM sqlite_schema WHERE name = 'TASK') = 0;
SELECT 'several files: raw_s<source_id>_<table>', (SELECT count(*) FROM sqlite_schema WHERE name IN ('raw_s0_TASK', 'raw_s1_CaptureStreamInfo')) = 2;
SELECT 'names recorded in the inventory', (SELECT embedded_table_name FROM traceloom_raw_table WHERE source_table = 'TASK') = 'raw_s0_TASK';
SELECT 'row counts equal the source', (SELECT count(*) FROM raw_s0_TASK) = 70 AND (SELECT count(*) FROM raw_s1_CaptureStreamInfo) = 12;
SELECT 'all 70 events resolve to embedded rows', (SELECT count(*) FROM traceloom_v_event_source_locator WHERE resolution_status = 'embedded_raw') = 70;

-- Without the option, nothing is embedded and earlier copies go away.
SELECT 'no embed', traceloom_analyze('fixtures/exact_hlt/mono') LIKE '%70 events%';
SELECT 'raw copies removed', (SELECT count(*) FROM sqlite_schema WHERE name LIKE 'raw_s%') = 0;
SELECT 'referenced again', (SELECT count(*) FROM traceloom_v_event_source_locator WHERE resolution_status = 'external_raw') = 70;

-- A user table with a raw table's name is never overwritten.
CREATE TABLE TASK(mine TEXT);
INSERT INTO TASK VALUES ('keep me');
-- expect-error: cannot embed table TASK of
SELECT traceloom_analyze('fixtures/minimal_smoke/mono', '{"embed_raw": true}');
SELECT 'user table kept', (SELECT mine FROM TASK) = 'keep me';
SELECT 'previous analysis kept', (SELECT count(*) FROM traceloom_event WHERE source_table = 'TASK') = 70;
-- expect-error: analyze option "embed_raw" must be true or false
SELECT traceloom_analyze('fixtures/minimal_smoke/mono', '{"embed_raw": 1}');

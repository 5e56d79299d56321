-- Option text_id_indexes: the event and anchor text ids get stored indexes, so a join by
-- them (the reference's node-events report) searches instead of building an automatic index
-- over every row; the rows stay the same, and a default analysis stores neither.

SELECT 'analyse with the indexes', traceloom_analyze('fixtures/exact_hlt/mono', '{"text_id_indexes": true}') LIKE '%70 events%';
SELECT 'both indexes stored', (SELECT count(*) FROM sqlite_schema WHERE type = 'index'
  AND name IN ('traceloom_event_core_event_id', 'traceloom_anchor_core_anchor_id')) = 2;
SELECT 'the options record it', (SELECT json_extract(value, '$.text_id_indexes') FROM traceloom_metadata WHERE key = 'analysis_options') = 1;
-- every anchor with an event (not the 12 promoted launches' of 16: their unit's event
-- stands for them) finds its one event by text id, and each event its anchor back
SELECT 'anchor to event by text id', (SELECT count(*) FROM traceloom_anchor a JOIN traceloom_event e ON e.event_id = a.event_id WHERE e.event_n = a.event_n)
  = (SELECT count(*) FROM traceloom_anchor_core) - 12 AND (SELECT count(*) FROM traceloom_anchor_core) = 16;
SELECT 'event to anchor by text id', (SELECT count(*) FROM traceloom_event e JOIN traceloom_anchor a ON a.anchor_id = 'anchor-' || e.anchor_n WHERE a.event_n = e.event_n)
  = (SELECT count(*) FROM traceloom_anchor_core) - 12;
SELECT 'index lookups', (SELECT event_n FROM traceloom_event WHERE event_id = 'event-5') = 5
  AND (SELECT anchor_n FROM traceloom_anchor WHERE anchor_id = 'anchor-2') = 2;

-- A default analysis replaces them: the stored ids and the event's index go with the earlier
-- tables; the anchor's id is generated again, with its index, and its table has no planner
-- statistics (ext/publish/publish.c: a Bloom filter of SQLite 3.38-3.41.1)
SELECT 'analyse without', traceloom_analyze('fixtures/exact_hlt/mono') LIKE '%70 events%';
SELECT 'no event id index', (SELECT count(*) FROM sqlite_schema WHERE name = 'traceloom_event_core_event_id') = 0;
SELECT 'anchor id index on the generated id', (SELECT count(*) FROM sqlite_schema WHERE name = 'traceloom_anchor_core_anchor_id' AND sql LIKE 'CREATE UNIQUE INDEX%') = 1
  AND (SELECT hidden FROM pragma_table_xinfo('traceloom_anchor_core') WHERE name = 'anchor_id') = 2
  AND (SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'traceloom_anchor_core') = 0
  AND (SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'traceloom_event_core') = 1;
SELECT 'event to anchor by generated text id', (SELECT count(*) FROM traceloom_event e JOIN traceloom_anchor a ON a.anchor_id = 'anchor-' || e.anchor_n WHERE a.event_n = e.event_n)
  = (SELECT count(*) FROM traceloom_anchor_core) - 12;
SELECT 'not in the options', (SELECT json_extract(value, '$.text_id_indexes') FROM traceloom_metadata WHERE key = 'analysis_options') IS NULL;

-- expect-error: analyze option "text_id_indexes" must be true or false
SELECT traceloom_analyze('fixtures/exact_hlt/mono', '{"text_id_indexes": "yes"}');

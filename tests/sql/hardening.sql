-- Hostile analysis databases (issue 9): every place where SQL stored in a database runs
-- without the user typing it (views, triggers, CHECK constraints, generated columns,
-- column defaults, index expressions) refuses the functions that read or write files.
-- security.sql covers views and a trigger calling traceloom_analyze and the table-valued
-- readers; this file adds the writer (traceloom_export_perfetto), the other schema
-- objects, and traceloom_loop_tree, which reads only this database and so stays usable anywhere.
-- A profile that is a symlink to the output database is covered by
-- tests/python/test_hardening.py (SQL cannot create the link).

SELECT 'analysed directly', traceloom_analyze('fixtures/minimal_smoke/mono') LIKE '%3 events%';

CREATE TABLE t(x);
CREATE TABLE u(x);
CREATE TABLE w(x);
CREATE TABLE log(md TEXT);
CREATE VIEW evil_export AS SELECT traceloom_export_perfetto('hostile_export.json') AS n;
CREATE VIEW evil_analyze2 AS SELECT traceloom_analyze('fixtures/exact_hlt/mono', '{}') AS r;
-- A trigger is refused when its statement is prepared, whether or not its WHEN holds.
CREATE TRIGGER evil_export_trigger AFTER INSERT ON t WHEN new.x = 1
  BEGIN SELECT traceloom_export_perfetto('hostile_trigger.json'); END;
CREATE TRIGGER evil_analyze_update AFTER UPDATE ON u
  BEGIN SELECT traceloom_analyze('fixtures/exact_hlt/mono', '{"threads":2}'); END;
CREATE TRIGGER loop_tree_trigger AFTER INSERT ON w
  BEGIN INSERT INTO log SELECT traceloom_loop_tree(); END;
INSERT INTO u VALUES (1);

-- expect-error: unsafe use of traceloom_export_perfetto()
SELECT * FROM evil_export;
-- expect-error: unsafe use of traceloom_analyze()
SELECT * FROM evil_analyze2;
-- expect-error: unsafe use of traceloom_export_perfetto()
INSERT INTO t VALUES (1);
-- expect-error: unsafe use of traceloom_export_perfetto()
INSERT INTO t VALUES (3);
-- expect-error: unsafe use of traceloom_analyze()
UPDATE u SET x = 4;

-- Schema objects other than views and triggers. A DEFAULT is stored unchecked; the
-- statement that would evaluate it is refused. (SQLite 3.40 does not refuse a CHECK
-- constraint for SQLITE_DIRECTONLY functions; the functions refuse it themselves:
-- tests/sql/security.sql, docs/RELIABILITY.md.)
CREATE TABLE evil_default(x, y DEFAULT (traceloom_export_perfetto('hostile_default.json')));
-- expect-error: unsafe use of traceloom_export_perfetto()
INSERT INTO evil_default(x) VALUES (1);
-- Generated columns and index expressions refuse them even earlier (not deterministic).
-- expect-error: non-deterministic functions prohibited in generated columns
CREATE TABLE evil_generated(x, y AS (traceloom_analyze(x)));
-- expect-error: non-deterministic functions prohibited in index expressions
CREATE INDEX evil_index ON t(traceloom_export_perfetto(x));

-- Nothing above changed the analysis: still the minimal_smoke one, 3 events.
SELECT 'previous analysis intact', (SELECT value FROM traceloom_metadata WHERE key = 'source_path') LIKE '%minimal_smoke%'
  AND (SELECT count(*) FROM traceloom_event) = 3;
SELECT 'refused statements changed no row', (SELECT count(*) FROM t) = 0 AND (SELECT group_concat(x) FROM u) = '1'
  AND (SELECT count(*) FROM evil_default) = 0;

-- traceloom_loop_tree only reads the analysis in this database and returns text, so a
-- trigger may call it; it gives the same report as a direct call.
INSERT INTO w VALUES (2);
SELECT 'loop tree from a trigger', (SELECT md FROM log) = traceloom_loop_tree() AND length(traceloom_loop_tree()) > 0;

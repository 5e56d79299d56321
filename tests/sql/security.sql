-- Functions and table-valued functions that touch files are SQLITE_DIRECTONLY: a view or a
-- trigger (for example in a database someone sent you) cannot make them read or write files.

CREATE TABLE t(x);
CREATE VIEW evil_analyze AS SELECT traceloom_analyze('fixtures/minimal_smoke/mono') AS r;
CREATE VIEW evil_events AS SELECT * FROM traceloom_events('fixtures/minimal_smoke/mono');
CREATE VIEW evil_calls AS SELECT * FROM traceloom_host_calls('fixtures/exact_hlt/mono');
CREATE VIEW evil_profile AS SELECT * FROM traceloom_profile('fixtures/minimal_smoke/mono');
CREATE TRIGGER evil_trigger AFTER INSERT ON t BEGIN SELECT traceloom_analyze('fixtures/minimal_smoke/mono'); END;
-- expect-error: unsafe use of traceloom_analyze()
SELECT * FROM evil_analyze;
-- expect-error: unsafe use of virtual table "traceloom_events"
SELECT * FROM evil_events;
-- expect-error: unsafe use of virtual table "traceloom_host_calls"
SELECT * FROM evil_calls;
-- expect-error: unsafe use of virtual table "traceloom_profile"
SELECT * FROM evil_profile;
-- expect-error: unsafe use of traceloom_analyze()
INSERT INTO t VALUES (1);
SELECT 'nothing was analysed through a view or trigger', (SELECT count(*) FROM sqlite_schema WHERE name LIKE 'traceloom%') = 0;

-- Called directly, the same function works; the analysis refuses to read itself.
SELECT 'direct call works', traceloom_analyze('fixtures/minimal_smoke/mono') LIKE '%3 events%';
SELECT 'version and debug', traceloom_version() = '0.1.0' AND traceloom_debug() LIKE 'version=0.1.0%sqlite_version=%';
-- expect-error: traceloom_events(profile) needs the profile path as its argument
SELECT * FROM traceloom_events;

-- SQLite 3.40 lets a CHECK constraint or a DEFAULT clause stored in a database call even
-- SQLITE_DIRECTONLY functions during an INSERT; the functions refuse to run while any
-- writing statement is busy on the connection.
CREATE TABLE evil_check(x CHECK (traceloom_export_perfetto('pwned_by_check.json') >= 0));
-- expect-error: traceloom_export_perfetto() must be called from a top-level SELECT
INSERT INTO evil_check VALUES (1);
CREATE TABLE evil_default(x, y DEFAULT (traceloom_analyze('fixtures/minimal_smoke/mono')));
-- (SQLite itself refuses this one as "unsafe use of traceloom_analyze()")
-- expect-error: traceloom_analyze()
INSERT INTO evil_default(x) VALUES (1);
SELECT 'no file was written by the CHECK constraint', readfile('pwned_by_check.json') IS NULL;
SELECT 'a top-level SELECT still works', traceloom_analyze('fixtures/minimal_smoke/mono') LIKE '%3 events%';

-- traceloom_rows, the publisher's internal row source, reads only a C pointer that SQL cannot
-- forge: from SQL it yields nothing, and a view cannot use it at all.
SELECT 'traceloom_rows yields no rows from SQL', (SELECT count(*) FROM traceloom_rows('x')) = 0 AND (SELECT count(*) FROM traceloom_rows(42)) = 0;
-- ... also without an argument, as the README says (this once failed with "no query solution").
SELECT 'traceloom_rows without an argument yields no rows', (SELECT count(*) FROM traceloom_rows) = 0;
SELECT 'traceloom_rows without an argument: no rows in a join either',
       (SELECT count(*) FROM (SELECT 1 AS k) LEFT JOIN traceloom_rows r ON r.c0 = k WHERE r.c0 IS NOT NULL) = 0;
CREATE VIEW evil_rows AS SELECT * FROM traceloom_rows(1);
-- expect-error: unsafe use of virtual table "traceloom_rows"
SELECT count(*) FROM evil_rows;

-- Rejected context input (context-observer.md section 3): the whole analysis fails with an
-- error naming the file, the line and the field, and the previous result stays as it was.

SELECT 'a first analysis with context', traceloom_analyze('fixtures/context_gen/graph',
  '{"context":["fixtures/context_gen/graph/context/scheduler.jsonl","fixtures/context_gen/graph/context/worker0.jsonl"]}')
  LIKE 'traceloom: analysed%';
CREATE TABLE before AS SELECT (SELECT count(*) FROM traceloom_context_record) AS records,
  (SELECT count(*) FROM traceloom_v_context_replay_member) AS members,
  (SELECT count(*) FROM traceloom_event) AS events, (SELECT group_concat(sha256) FROM traceloom_context_source) AS digests;

-- expect-error: context record lacks terminating newline (context file
SELECT traceloom_analyze('fixtures/context_gen/graph', '{"context":["fixtures/context_gen/bad/torn.jsonl"]}');
-- expect-error: invalid scheduled request (context file
SELECT traceloom_analyze('fixtures/context_gen/graph', '{"context":["fixtures/context_gen/bad/bad_request.jsonl"]}');
-- expect-error: bad_request.jsonl, line 2, field requests[0].payload_kind: expected "new" or "cached")
SELECT traceloom_analyze('fixtures/context_gen/graph', '{"context":["fixtures/context_gen/bad/bad_request.jsonl"]}');
-- expect-error: duplicate context input
SELECT traceloom_analyze('fixtures/context_gen/graph', '{"context":["fixtures/context_gen/graph/context/scheduler.jsonl","fixtures/context_gen/graph/../graph/context/scheduler.jsonl"]}');
-- expect-error: cannot open context input (context file fixtures/context_gen/graph/context/absent.jsonl
SELECT traceloom_analyze('fixtures/context_gen/graph', '{"context":["fixtures/context_gen/graph/context/absent.jsonl"]}');
-- expect-error: context must be a regular JSONL file of at most 256 MiB
SELECT traceloom_analyze('fixtures/context_gen/graph', '{"context":["fixtures/context_gen/graph/context"]}');
-- expect-error: analyze option "context"
SELECT traceloom_analyze('fixtures/context_gen/graph', '{"context":"fixtures/context_gen/graph/context/scheduler.jsonl"}');
-- A valid context with a profile that fails later: nothing is published either.
-- expect-error: fixtures/bad/not_sqlite.db
SELECT traceloom_analyze('fixtures/bad/not_sqlite.db', '{"context":["fixtures/context_gen/graph/context/scheduler.jsonl"]}');

SELECT 'the previous result is untouched',
  (SELECT records FROM before) = (SELECT count(*) FROM traceloom_context_record)
  AND (SELECT members FROM before) = (SELECT count(*) FROM traceloom_v_context_replay_member)
  AND (SELECT events FROM before) = (SELECT count(*) FROM traceloom_event)
  AND (SELECT digests FROM before) = (SELECT group_concat(sha256) FROM traceloom_context_source);

-- The analysis database itself is never a context input.
-- expect-error: it is a context input
SELECT traceloom_analyze('fixtures/context_gen/graph', json_object('context', json_array((SELECT file FROM pragma_database_list WHERE name = 'main'))));

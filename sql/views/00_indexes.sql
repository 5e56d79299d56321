-- Text ids of the *_core tables, as generated columns, added once the rows are in: a
-- generated column is computed on every INSERT (SQLite evaluates them for its constraint
-- checks) but adding a VIRTUAL one to a full table only changes the schema. The public views
-- pass them through as plain columns, so SQLite matches them to the indexes below even on
-- the right side of a LEFT JOIN, where an expression would be wrapped and match no index.
ALTER TABLE traceloom_event_core ADD COLUMN event_id TEXT
  GENERATED ALWAYS AS ('event-' || event_n) VIRTUAL;
ALTER TABLE traceloom_runtime_call_core ADD COLUMN runtime_call_id TEXT
  GENERATED ALWAYS AS ('runtime-call-' || call_n) VIRTUAL;
ALTER TABLE traceloom_runtime_device_relation_core ADD COLUMN relation_id TEXT
  GENERATED ALWAYS AS ('runtime-device-relation-' || relation_n) VIRTUAL;
ALTER TABLE traceloom_runtime_device_relation_core ADD COLUMN runtime_call_id TEXT
  GENERATED ALWAYS AS ('runtime-call-' || call_n) VIRTUAL;
ALTER TABLE traceloom_runtime_device_relation_core ADD COLUMN device_work_id TEXT
  GENERATED ALWAYS AS ('device-work-event-' || event_n) VIRTUAL;
ALTER TABLE traceloom_anchor_core ADD COLUMN anchor_id TEXT
  GENERATED ALWAYS AS ('anchor-' || anchor_n) VIRTUAL;
ALTER TABLE traceloom_anchor_core ADD COLUMN event_id TEXT
  GENERATED ALWAYS AS ('event-' || event_n) VIRTUAL;
ALTER TABLE traceloom_node_core ADD COLUMN local_node_id TEXT
  GENERATED ALWAYS AS (printf('N%03d', local_n)) VIRTUAL;
ALTER TABLE traceloom_node_core ADD COLUMN node_id TEXT
  GENERATED ALWAYS AS (printf('node-%sN%03d', COALESCE('d' || node_device || '-', ''),
                              local_n)) VIRTUAL;
ALTER TABLE traceloom_position_occurrence_core ADD COLUMN position_id TEXT
  GENERATED ALWAYS AS (printf('node-%sN%03d', COALESCE('d' || node_device || '-', ''),
                              node_local)) VIRTUAL;
ALTER TABLE traceloom_position_occurrence_core ADD COLUMN occurrence_id TEXT
  GENERATED ALWAYS AS (printf('node-%sN%03d-occurrence-%d', COALESCE('d' || node_device || '-', ''),
                              node_local, occurrence_idx)) VIRTUAL;

-- Indexes of the large structure tables, built once the rows are inserted (a sorted build
-- is several times cheaper than maintaining the B-trees row by row).
-- The indexes on those ids serve lookups and joins by id, ours and users', inner or LEFT.
-- The first occurrence index
-- is also the unique key (a tree is one (db_idx, device_id)) and serves lookups by position
-- alone, in occurrence order.
CREATE INDEX traceloom_event_core_event_id ON traceloom_event_core(event_id);
-- Relations are looked up by their call (context views, users' joins on runtime_call_id).
CREATE INDEX traceloom_runtime_device_relation_call ON traceloom_runtime_device_relation_core(call_n);
CREATE INDEX traceloom_runtime_call_core_id ON traceloom_runtime_call_core(runtime_call_id);
-- The children of a node (the edge and member views walk them).
CREATE INDEX traceloom_node_core_parent ON traceloom_node_core(parent_n, slot_ordinal);
CREATE INDEX traceloom_anchor_core_anchor_id ON traceloom_anchor_core(anchor_id);

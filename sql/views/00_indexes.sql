-- Text ids of the *_core tables, as generated columns, added once the rows are in: a
-- generated column is computed on every INSERT (SQLite evaluates them for its constraint
-- checks) but adding a VIRTUAL one to a full table only changes the schema. They take no
-- space. The public views pass them through as plain columns, so a user's join on a text
-- id, inner or LEFT, can use an automatic index on the column: an expression in a flattened
-- view gets none and would make that join a scan per outer row. The event's and the anchor's
-- own ids (traceloom_event_core.event_id, traceloom_anchor_core.anchor_id) are added before
-- this file, by ext/publish/publish.c: generated like these (the anchor's with a UNIQUE index,
-- and its table then has no sqlite_stat1 row: SQLite 3.38.0-3.41.1 build a wrong Bloom filter
-- on an index of a generated column, and build none for a table without statistics), or
-- stored with an index under the analyze option text_id_indexes and with idle evidence (the
-- comment there).
ALTER TABLE traceloom_runtime_call_core ADD COLUMN runtime_call_id TEXT
  GENERATED ALWAYS AS ('runtime-call-' || call_n) VIRTUAL;
ALTER TABLE traceloom_runtime_device_relation_core ADD COLUMN relation_id TEXT
  GENERATED ALWAYS AS ('runtime-device-relation-' || relation_n) VIRTUAL;
ALTER TABLE traceloom_runtime_device_relation_core ADD COLUMN runtime_call_id TEXT
  GENERATED ALWAYS AS ('runtime-call-' || call_n) VIRTUAL;
ALTER TABLE traceloom_runtime_device_relation_core ADD COLUMN device_work_id TEXT
  GENERATED ALWAYS AS ('device-work-event-' || event_n) VIRTUAL;
-- (a promoted graph launch's anchor has no event id: its row, event_n < 0, is no event)
ALTER TABLE traceloom_anchor_core ADD COLUMN event_id TEXT
  GENERATED ALWAYS AS (CASE WHEN event_n >= 0 THEN 'event-' || event_n END) VIRTUAL;
-- The node and occurrence ids pad the local number to three digits (N007), which only printf()
-- does; from N100 on (every node but the first 99 of a tree) the padded number is the number
-- itself, and on a tree without a device in its ids (node_device NULL: one device per
-- database) a concatenation onto a constant gives the same text at a fraction of printf()'s
-- cost (a format parse, the device's COALESCE and a string builder per value): under callgrind
-- about 1,460 instructions less per node_id and 615 per local_node_id, which a report printing
-- an id per row pays once per row (the tree map: 512k nodes; the symbol normalization audit:
-- both per anchor). printf() stays below N100 and for the ids with a device, where it pads and
-- a chain of concatenations (one allocation each) would cost more than it.
ALTER TABLE traceloom_node_core ADD COLUMN local_node_id TEXT
  GENERATED ALWAYS AS (CASE WHEN local_n >= 100 THEN 'N' || local_n
                            ELSE printf('N%03d', local_n) END) VIRTUAL;
ALTER TABLE traceloom_node_core ADD COLUMN node_id TEXT
  GENERATED ALWAYS AS (CASE WHEN local_n >= 100 AND node_device IS NULL THEN 'node-N' || local_n
                            ELSE printf('node-%sN%03d', COALESCE('d' || node_device || '-', ''),
                                        local_n) END) VIRTUAL;
ALTER TABLE traceloom_position_occurrence_core ADD COLUMN position_id TEXT
  GENERATED ALWAYS AS (CASE WHEN node_local >= 100 AND node_device IS NULL
                            THEN 'node-N' || node_local
                            ELSE printf('node-%sN%03d', COALESCE('d' || node_device || '-', ''),
                                        node_local) END) VIRTUAL;
ALTER TABLE traceloom_position_occurrence_core ADD COLUMN occurrence_id TEXT
  GENERATED ALWAYS AS (CASE WHEN node_local >= 100 AND node_device IS NULL
                            THEN 'node-N' || node_local || '-occurrence-' || occurrence_idx
                            ELSE printf('node-%sN%03d-occurrence-%d',
                                        COALESCE('d' || node_device || '-', ''), node_local,
                                        occurrence_idx) END) VIRTUAL;

-- Integer indexes, built once the rows are in (a sorted build is several times cheaper than
-- maintaining a B-tree row by row). No other text id of a core table is indexed: the
-- shipped views join on the integer keys (event_n, call_n, anchor_n, node_n, occurrence_n),
-- and a user's join on a text id gets an automatic index on its generated column
-- (docs/ARCHITECTURE.md; the small link table's stored aux_event_id has one, in
-- sql/views/30_structure.sql), but for the anchor's id and the ids stored by the option above.
-- None is needed either between the integers: the relations of a runtime call are a range
-- (traceloom_runtime_call_core.first_relation_n), the occurrences of a node too
-- (traceloom_node_core.first_occurrence_n), a child occurrence is found by arithmetic from
-- its parent's (sql/schema/30_structure.sql), and every other join is by a primary key.

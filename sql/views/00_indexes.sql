-- Indexes of the large structure tables, built once the rows are inserted (a sorted build
-- is several times cheaper than maintaining the B-trees row by row).
CREATE UNIQUE INDEX traceloom_position_occurrence_key ON traceloom_position_occurrence(db_idx, tree_id, occurrence_id);
-- One index serves lookups by position alone (node_id filters) and by (db, tree, position),
-- in occurrence order.
CREATE INDEX traceloom_position_occurrence_pos ON traceloom_position_occurrence(position_id, db_idx, tree_id, occurrence_idx);
-- event_id is computed by the traceloom_event view ('event-' || event_n): this index on the
-- same expression serves joins and lookups by event_id, including users' own.
CREATE INDEX traceloom_event_core_event_id ON traceloom_event_core('event-' || event_n);
-- Relations are looked up by their call (context views, users' joins on runtime_call_id).
CREATE INDEX traceloom_runtime_device_relation_call ON traceloom_runtime_device_relation_core(call_n);
CREATE INDEX traceloom_runtime_call_core_id ON traceloom_runtime_call_core('runtime-call-' || call_n);
-- Slots: the unique key, and the parent and child lookups of the edge views.
CREATE UNIQUE INDEX traceloom_position_refinement_key ON traceloom_position_refinement(db_idx, tree_id, parent_position_id, slot_ordinal);
CREATE INDEX traceloom_position_refinement_parent ON traceloom_position_refinement(parent_position_id, db_idx, device_id);
CREATE INDEX traceloom_position_refinement_child ON traceloom_position_refinement(child_position_id, db_idx, device_id);
-- anchor_id is computed by the traceloom_anchor view: joins by anchor_id use this index.
CREATE INDEX traceloom_anchor_core_anchor_id ON traceloom_anchor_core('anchor-' || anchor_n);

-- Indexes of the large structure tables, built once the rows are inserted (a sorted build
-- is several times cheaper than maintaining the B-trees row by row).
-- Text ids are generated columns of the *_core tables (sql/schema/): these indexes on them
-- serve lookups and joins by id, ours and users', inner or LEFT. The first occurrence index
-- is also the unique key (a tree is one (db_idx, device_id)) and serves lookups by position
-- alone, in occurrence order.
CREATE UNIQUE INDEX traceloom_position_occurrence_key ON traceloom_position_occurrence_core(
  position_id, db_idx, device_id, occurrence_idx);
CREATE INDEX traceloom_position_occurrence_id ON traceloom_position_occurrence_core(occurrence_id);
CREATE INDEX traceloom_event_core_event_id ON traceloom_event_core(event_id);
-- Relations are looked up by their call (context views, users' joins on runtime_call_id).
CREATE INDEX traceloom_runtime_device_relation_call ON traceloom_runtime_device_relation_core(call_n);
CREATE INDEX traceloom_runtime_call_core_id ON traceloom_runtime_call_core(runtime_call_id);
-- Slots: the unique key, and the parent and child lookups of the edge views.
CREATE UNIQUE INDEX traceloom_position_refinement_key ON traceloom_position_refinement(db_idx, tree_id, parent_position_id, slot_ordinal);
CREATE INDEX traceloom_position_refinement_parent ON traceloom_position_refinement(parent_position_id, db_idx, device_id);
CREATE INDEX traceloom_position_refinement_child ON traceloom_position_refinement(child_position_id, db_idx, device_id);
CREATE INDEX traceloom_anchor_core_anchor_id ON traceloom_anchor_core(anchor_id);

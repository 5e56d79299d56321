-- Indexes of the large structure tables, built once the rows are inserted (a sorted build
-- is several times cheaper than maintaining the B-trees row by row).
CREATE UNIQUE INDEX traceloom_position_occurrence_key ON traceloom_position_occurrence(db_idx, tree_id, occurrence_id);
CREATE INDEX traceloom_position_occurrence_pos ON traceloom_position_occurrence(db_idx, tree_id, position_id, occurrence_idx);
CREATE INDEX traceloom_position_occurrence_node ON traceloom_position_occurrence(position_id, occurrence_idx);

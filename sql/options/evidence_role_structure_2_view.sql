-- The analyze option {"evidence_role_structure": true}, second part, once the table is
-- filled: traceloom_evidence_role_structure_rows over it, with the computed view's columns.
-- One table, so the structure view over these rows flattens wherever a query puts it (also on
-- the right of a LEFT JOIN), and a join on decision_id is a search of the key.
DROP VIEW traceloom_evidence_role_structure_rows;
CREATE VIEW traceloom_evidence_role_structure_rows AS
SELECT s.decision_n, s.kind, s.ref,
       CASE WHEN NOT s.self THEN printf('node-%sN%03d', COALESCE('d' || s.node_device || '-', ''),
                                        s.node_local) END AS ancestor_node_id,
       s.node_device, s.node_local, s.occurrence_idx
FROM traceloom_evidence_role_structure_core s;

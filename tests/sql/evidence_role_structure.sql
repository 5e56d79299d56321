-- Option evidence_role_structure: the rows of traceloom_v_evidence_role_structure are stored
-- (traceloom_evidence_role_structure_core), so the view flattens into a join on the right of
-- a LEFT JOIN (evidence-role-event) and the decision is a key; the rows stay the same, copies
-- included, and a default analysis stores none.

SELECT 'analyse with the rows stored', traceloom_analyze('fixtures/exact_hlt/mono', '{"evidence_role_structure": true}') LIKE '%70 events%';
SELECT 'the options record it', (SELECT json_extract(value, '$.evidence_role_structure') FROM traceloom_metadata WHERE key = 'analysis_options') = 1;
SELECT 'a table and the rows view over it', (SELECT type FROM sqlite_schema WHERE name = 'traceloom_evidence_role_structure_core') = 'table'
  AND (SELECT sql FROM sqlite_schema WHERE name = 'traceloom_evidence_role_structure_rows') LIKE '%FROM traceloom_evidence_role_structure_core s%';
SELECT 'in the catalog', (SELECT count(*) FROM traceloom_analysis_surface WHERE relation_name IN
  ('traceloom_evidence_role_structure_core', 'traceloom_evidence_role_structure_rows')) = 2;
CREATE TEMP TABLE stored_rows AS SELECT * FROM traceloom_v_evidence_role_structure;
-- exact_hlt's replay units place a member at each of the unit's launch anchors more than once
-- (one row per launch of the unit): those rows are kept as copies
SELECT 'every view row stored once, repeats as copies', (SELECT count(*) FROM temp.stored_rows) = (SELECT count(*) FROM traceloom_evidence_role_structure_core)
  AND (SELECT count(*) FROM traceloom_evidence_role_structure_core WHERE copy > 0) > 0;
-- an anchor's own placement covers its atom occurrence and every ancestor (parent_n up to the
-- root), worked out here from the occurrence core alone
WITH RECURSIVE first_anchor(anchor_n, event_n, occurrence_n) AS (
  SELECT anchor_n, event_n, occurrence_n FROM traceloom_anchor_core
  WHERE event_n >= 0 AND occurrence_n IS NOT NULL ORDER BY anchor_n LIMIT 1),
up(n, depth) AS (
  SELECT occurrence_n, 0 FROM first_anchor
  UNION ALL
  SELECT o.parent_n, up.depth + 1 FROM up JOIN traceloom_position_occurrence_core o ON o.occurrence_n = up.n
  WHERE o.parent_n IS NOT NULL)
SELECT 'an anchor covered by its atom and ancestors',
  (SELECT group_concat(id, ' ') FROM (SELECT o.position_id || '#' || o.occurrence_idx AS id
     FROM up JOIN traceloom_position_occurrence_core o ON o.occurrence_n = up.n ORDER BY 1))
  = (SELECT group_concat(id, ' ') FROM (SELECT s.node_id || '#' || s.occurrence_idx AS id
       FROM first_anchor a JOIN traceloom_v_evidence_role_structure s ON s.decision_id = a.event_n
       WHERE s.placement_id = 'anchor-' || a.anchor_n ORDER BY 1))
  AND (SELECT count(*) FROM up) >= 2;

-- A default analysis computes them: no table, the rows view is the computed one, same rows
SELECT 'analyse without', traceloom_analyze('fixtures/exact_hlt/mono') LIKE '%70 events%';
SELECT 'no table', (SELECT count(*) FROM sqlite_schema WHERE name = 'traceloom_evidence_role_structure_core') = 0
  AND (SELECT count(*) FROM traceloom_analysis_surface WHERE relation_name = 'traceloom_evidence_role_structure_core') = 0;
SELECT 'not in the options', (SELECT json_extract(value, '$.evidence_role_structure') FROM traceloom_metadata WHERE key = 'analysis_options') IS NULL;
SELECT 'the same rows, as many times', (SELECT count(*) FROM (
    SELECT *, count(*) FROM temp.stored_rows GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
    EXCEPT SELECT *, count(*) FROM traceloom_v_evidence_role_structure GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9)) = 0
  AND (SELECT count(*) FROM temp.stored_rows) = (SELECT count(*) FROM traceloom_v_evidence_role_structure);
DROP TABLE temp.stored_rows;

-- expect-error: analyze option "evidence_role_structure" must be true or false
SELECT traceloom_analyze('fixtures/exact_hlt/mono', '{"evidence_role_structure": 1}');

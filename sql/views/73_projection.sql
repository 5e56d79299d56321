-- The projection catalog keeps the recipes whose relation this analysis publishes (issue 20's
-- relations, for instance, exist only where that part is built), and chains them.
DELETE FROM traceloom_projection_recipe
 WHERE relation_name NOT IN (SELECT name FROM sqlite_schema WHERE type IN ('table', 'view'));
DELETE FROM traceloom_projection_parameter
 WHERE projection_name NOT IN (SELECT projection_name FROM traceloom_projection_recipe);
DELETE FROM traceloom_projection_coordinate
 WHERE projection_name NOT IN (SELECT projection_name FROM traceloom_projection_recipe);

-- Parameters are looked up by coordinate kind.
CREATE INDEX traceloom_projection_parameter_kind ON traceloom_projection_parameter(coordinate_kind);

-- A source projection continues into a target when its result holds a coordinate of the
-- kind of every required (non-nullable) parameter of the target: one row per (source
-- column, target parameter) of a matching kind.
-- @surface traceloom_v_projection_continuation | one coordinate transfer between two projections | Which projections can follow which: a result column of the source that fills a parameter of the target, where the source supplies every required parameter | SELECT source_projection, target_projection, source_column, target_parameter FROM traceloom_v_projection_continuation WHERE source_projection = 'scope_catalog'
CREATE VIEW traceloom_v_projection_continuation AS
WITH target AS (
  SELECT t.projection_name,
         (SELECT count(*) FROM traceloom_projection_parameter p
           WHERE p.projection_name = t.projection_name AND p.is_nullable = 0) AS n
  FROM traceloom_projection_recipe t),
ready AS (
  SELECT s.projection_name AS source, t.projection_name AS target, t.n
  FROM traceloom_projection_recipe s
  JOIN target t ON t.projection_name <> s.projection_name
  WHERE t.n = (SELECT count(*) FROM traceloom_projection_parameter p
                WHERE p.projection_name = t.projection_name AND p.is_nullable = 0
                  AND p.coordinate_kind IN (SELECT c.coordinate_kind FROM traceloom_projection_coordinate c
                                             WHERE c.projection_name = s.projection_name)))
SELECT ready.source AS source_projection, ready.target AS target_projection,
       c.result_column AS source_column, p.parameter_name AS target_parameter, c.coordinate_kind,
       p.is_nullable AS target_parameter_nullable, ready.n AS required_coordinate_count
FROM ready
JOIN traceloom_projection_coordinate c ON c.projection_name = ready.source
JOIN traceloom_projection_parameter p ON p.projection_name = ready.target
 AND p.coordinate_kind = c.coordinate_kind;

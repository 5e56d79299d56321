-- Structural units and how they compose each device's anchor sequence (docs/REPORTS.md
-- "Structural units"); the units are traceloom_structural_unit (ext/reports/units.c).

-- @surface traceloom_structural_unit_anchor | one anchor of a structural unit | Membership of every anchor in exactly one unit, in anchor order (anchor_order 0-based within the unit) | SELECT unit_id, count(*) FROM traceloom_structural_unit_anchor GROUP BY 1 ORDER BY 1 LIMIT 20
CREATE VIEW traceloom_structural_unit_anchor AS
SELECT u.unit_id, a.anchor_id, u.db_idx, u.device_id, a.anchor_n - u.first_anchor_n AS anchor_order,
       'observed_member' AS membership_kind, a.anchor_n
FROM traceloom_structural_unit u
JOIN traceloom_anchor a ON a.anchor_n >= u.first_anchor_n AND a.anchor_n <= u.last_anchor_n;

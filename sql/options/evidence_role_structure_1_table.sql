-- The analyze option {"evidence_role_structure": true}, first part: the table
-- (ext/reports/structure_rows.c fills it; docs/REPORTS.md "Evidence roles").
--
-- By default traceloom_v_evidence_role_structure computes its rows (sql/views/61_evidence_roles.sql):
-- a join of every placement to its covering occurrences, which SQLite builds whole on the
-- right of a LEFT JOIN (it flattens no join there): 2.8M rows at a million tasks for the one
-- event evidence-role-event looks up (2.1 s CPU). With the option the rows are stored once,
-- keyed by the decision, and traceloom_evidence_role_structure_rows becomes a view over this
-- one table (sql/options/evidence_role_structure_2_view.sql): the structure view then flattens
-- into such a query and the lookup searches the key (the whole report about 0.9 s). The rows
-- are the same; the table costs about 60 MB at a million tasks and the analysis about 3.5 s.
-- The covering occurrence is stored as the node's number and device and the occurrence index
-- (what the view shows), not as occurrence_n: a scan of every row (evidence-role-unknown, the
-- view's example) then formats the node id without a lookup per row.

-- @surface traceloom_evidence_role_structure_core | one (decision, placement, covering occurrence), stored | The rows of traceloom_v_evidence_role_structure in integers, written only with the analyze option evidence_role_structure: the decision (event_n), the placement kind and its anchor number or text id, the covering occurrence (node number, device, occurrence index), whether it is the anchor's own atom occurrence, and a copy number for a row the view holds twice | SELECT kind, self, count(*) FROM traceloom_evidence_role_structure_core GROUP BY 1, 2
CREATE TABLE traceloom_evidence_role_structure_core(
  decision_n INTEGER NOT NULL,   -- traceloom_event_core.event_n of the decision
  kind INTEGER NOT NULL,         -- 1 anchor, 2 auxiliary link, 3 replay unit,
                                 -- 4 protected interval, 5 graph body member
  ref NOT NULL,                  -- the anchor_n (kind 1), else the placement's text id
  node_local INTEGER NOT NULL,   -- the covering occurrence: its node's local_n,
  occurrence_idx INTEGER NOT NULL, --   its index,
  copy INTEGER NOT NULL,         -- 0; 1, 2, .. for further copies of the same row
  node_device INTEGER,           --   the node's device in the ids (NULL: node-N007)
  self INTEGER NOT NULL,         -- 1: the anchor's own atom occurrence; 0: an ancestor
  PRIMARY KEY (decision_n, kind, ref, node_local, occurrence_idx, copy)
) WITHOUT ROWID;

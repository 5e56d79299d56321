#!/usr/bin/env python3
"""What evidence-role-event would cost with its placements and structure rows stored (a probe).

    python3 bench/evidence_role_probe.py ANALYSIS.db [--repeat 3] [--work /tmp/erprobe]

evidence-role-event (../shared/reference/report-sql) LEFT JOINs traceloom_evidence_role_placement
and traceloom_v_evidence_role_structure to one decision. SQLite 3.40 flattens the right side of a
LEFT JOIN only when it is one table (select.c condition 3a; a compound never, 17f) and pushes no
ON term naming the left side into it, so both views are built whole for the one decision (2.25M
and 2.8M rows at a million tasks). Rows a one-table view returns come from its one table, so a
shape SQLite can search by decision needs a stored row per placement and per structure row.
This probe prices that on copies of an analysis (nothing here is shipped):

  cur        the analysis as published;
  compact    the structure's built rows narrowed to integers (the covering occurrence's number,
             its node id and index looked up per kept row, as a correlated subquery);
  stored_s   the structure's built rows (`covered`) stored in a table indexed by event, the view
             a one-table view over it;
  stored_ps  the same for the placements' union as well.

For each it prints the file size (after VACUUM) and the CPU seconds (user + sys of the sqlite3
shell) and md5 of the six evidence-role-* report queries and of the structure view's documented
example, run round-robin --repeat times. It also prints the smallest store of the rows' identity
alone (a rowid-only table, rowid = decision * 16 + ordinal): what any stored design must pay at
least, before a single column.
"""

import argparse
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORT_SQL = os.path.join(os.path.dirname(ROOT), 'shared', 'reference', 'report-sql')
if not os.path.isdir(REPORT_SQL):
    REPORT_SQL = '/work/shared/reference/report-sql'
QUERIES = ['evidence-role-event', 'evidence-role-unknown', 'evidence-role-member',
           'evidence-role-omissions', 'evidence-role-issues', 'evidence-role-cost-coverage']
EXAMPLE = ("SELECT event_id, placement_kind, placement_id, final_role, coverage_kind "
           "FROM traceloom_v_evidence_role_structure WHERE node_id = 'node-N002' "
           "AND occurrence_idx = 1 ORDER BY event_id;")


def view_sql(con, name):
    return con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]


def split_structure(sql):
    """(head: the outer select's columns, with: the closure, inner: covered's select)."""
    w = sql.index('WITH RECURSIVE')
    o = sql.index('SELECT +covered.event_n')
    j = sql.index('FROM (\nSELECT placed.event_n')
    k = sql.rstrip().rstrip(';').rindex(') covered')
    return sql[:w] + sql[o:j], sql[w:o], sql[j + len('FROM ('):k]


def compact(con):
    s = view_sql(con, 'traceloom_v_evidence_role_structure')
    enc = s[s.index('WITH RECURSIVE'):s.index(')\nSELECT +covered.event_n') + 2]
    s = s.replace(enc, '''WITH RECURSIVE enclosing(occurrence_n, cover_n, next_n) AS (
  SELECT o.occurrence_n, NULL, o.occurrence_n
  FROM traceloom_node_core k
  CROSS JOIN traceloom_position_occurrence_core o
    ON o.occurrence_n >= k.first_occurrence_n
   AND o.occurrence_n < k.first_occurrence_n + k.occurrence_count
  WHERE k.node_kind <> 1
  UNION ALL
  SELECT up.occurrence_n, a.occurrence_n, a.parent_n
  FROM enclosing up
  CROSS JOIN traceloom_position_occurrence_core a ON a.occurrence_n = up.next_n
)
''')
    cols = s[s.index('       COALESCE(covered.ancestor_node_id'):s.index('FROM (\nSELECT placed.event_n')]
    s = s.replace(cols, '''       (SELECT o.position_id FROM traceloom_position_occurrence_core o
        WHERE o.occurrence_n = covered.cover_n) AS node_id,
       (SELECT o.occurrence_idx FROM traceloom_position_occurrence_core o
        WHERE o.occurrence_n = covered.cover_n) AS occurrence_idx,
       'native_report_tree' AS view_name,
       CASE WHEN covered.self THEN 'self' ELSE 'body' END AS coverage_kind
''')
    inner = s[s.index('SELECT placed.event_n, placed.kind'):s.index('FROM (\nSELECT a.event_n, 1 AS kind')]
    s = s.replace(inner, '''SELECT placed.event_n, placed.kind, placed.ref,
       COALESCE(enc.cover_n, atom.occurrence_n) AS cover_n, enc.cover_n IS NULL AS self
''')
    con.execute('DROP VIEW traceloom_v_evidence_role_structure')
    con.execute(s)


def stored_s(con):
    head, with_, inner = split_structure(view_sql(con, 'traceloom_v_evidence_role_structure'))
    con.execute('CREATE TABLE probe_covered AS ' + with_ + ' SELECT * FROM (' + inner
                + ') ORDER BY event_n')
    con.execute('CREATE INDEX probe_covered_event ON probe_covered(event_n)')
    con.execute('DROP VIEW traceloom_v_evidence_role_structure')
    con.execute((head + 'FROM probe_covered covered').replace(
        '+covered.event_n AS decision_id', 'covered.event_n AS decision_id'))


def stored_ps(con):
    stored_s(con)
    p = view_sql(con, 'traceloom_evidence_role_placement')
    i = p.index('FROM (\nSELECT e.event_n, 0 AS arm')
    inner = p[i + len('FROM ('):p.rstrip().rstrip(';').rindex(') p')]
    con.execute('CREATE TABLE probe_placement AS SELECT * FROM (' + inner + ') ORDER BY event_n')
    con.execute('CREATE INDEX probe_placement_event ON probe_placement(event_n)')
    con.execute('DROP VIEW traceloom_evidence_role_placement')
    con.execute((p[:i] + 'FROM probe_placement p').replace(
        '+p.event_n AS decision_id', 'p.event_n AS decision_id'))


VARIANTS = {'cur': None, 'compact': compact, 'stored_s': stored_s, 'stored_ps': stored_ps}


def identity_store(src, work):
    """Bytes of rowid-only tables holding one row per placement and per structure row."""
    path = os.path.join(work, 'identity.db')
    if os.path.exists(path):
        os.remove(path)
    con = sqlite3.connect(path)
    con.execute('ATTACH ? AS a', (src,))
    con.execute('CREATE TABLE placement_slot(k INTEGER PRIMARY KEY)')
    con.execute('INSERT INTO placement_slot SELECT decision_id * 16 + ROW_NUMBER() OVER '
                '(PARTITION BY decision_id ORDER BY placement_order, placement_id) - 1 '
                'FROM a.traceloom_evidence_role_placement')
    con.execute('CREATE TABLE structure_slot(k INTEGER PRIMARY KEY)')
    con.execute('INSERT INTO structure_slot SELECT decision_id * 16 + ROW_NUMBER() OVER '
                '(PARTITION BY decision_id ORDER BY placement_kind, placement_id, node_id, '
                'occurrence_idx) - 1 FROM a.traceloom_v_evidence_role_structure')
    con.commit()
    rows = con.execute('SELECT name, sum(pgsize) FROM dbstat GROUP BY 1').fetchall()
    con.close()
    return dict(rows)


def run(db, sql):
    r = subprocess.run(['/usr/bin/time', '-f', '%U %S', 'sqlite3', '-bail', db],
                       input=sql.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=True)
    u, s = r.stderr.decode().strip().splitlines()[-1].split()
    return float(u) + float(s), hashlib.md5(r.stdout).hexdigest()[:8]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('analysis')
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--work', default='/tmp/erprobe')
    ap.add_argument('--variants', default=','.join(VARIANTS))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    names = a.variants.split(',')
    dbs = {}
    for n in names:
        path = os.path.join(a.work, n + '.db')
        shutil.copyfile(a.analysis, path)
        if VARIANTS[n]:
            con = sqlite3.connect(path)
            VARIANTS[n](con)
            con.commit()
            con.execute('VACUUM')
            con.close()
        dbs[n] = path
        print(f'{n}: {os.path.getsize(path):,} bytes', flush=True)
    ident = identity_store(a.analysis, a.work)
    print('identity store (rowid-only):', ', '.join(f'{k} {v:,}' for k, v in ident.items()
                                                     if k != 'sqlite_schema'))
    qs = [(q, open(os.path.join(REPORT_SQL, q + '.sql')).read()) for q in QUERIES]
    qs.append(('structure-example', EXAMPLE))
    for q, sql in qs:
        times = {n: [] for n in names}
        md5 = {n: set() for n in names}
        for _ in range(a.repeat):
            for n in names:
                t, h = run(dbs[n], sql)
                times[n].append(t)
                md5[n].add(h)
        line = ' | '.join(f"{n} {' '.join(f'{t:.2f}' for t in times[n])} {','.join(md5[n])}"
                          for n in names)
        print(f'{q}: {line}', flush=True)


if __name__ == '__main__':
    sys.exit(main())

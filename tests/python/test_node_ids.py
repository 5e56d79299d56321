"""The node and occurrence ids of the core tables (generated columns of sql/views/00_indexes.sql)
are written with concatenation rather than printf, for speed (docs/REPORTS.md): they must still
be the printf texts the ids have always been, 'node-[d<device>-]N%03d[-occurrence-<idx>]', for
every local number, padded or not, with and without a device."""
import pathlib
import re
import sqlite3

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOCAL_NS = [0, 1, 7, 9, 10, 42, 99, 100, 101, 999, 1000, 1001, 12345, 512345, 2 ** 40]
DEVICES = [None, 0, 3, 15]


def id_columns(table):
    """The ALTER TABLE ... ADD COLUMN statements of `table` in sql/views/00_indexes.sql."""
    text = (ROOT / "sql" / "views" / "00_indexes.sql").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    found = re.findall(rf"ALTER TABLE {table} ADD COLUMN .*?;", text, re.S)
    assert found, table
    return found


def test_node_ids_are_the_printf_texts():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE traceloom_node_core(node_n INTEGER PRIMARY KEY,"
                " node_device INTEGER, local_n INTEGER NOT NULL)")
    con.executemany("INSERT INTO traceloom_node_core(node_device, local_n) VALUES (?, ?)",
                    [(d, n) for d in DEVICES for n in LOCAL_NS])
    for statement in id_columns("traceloom_node_core"):
        con.execute(statement)
    rows = con.execute("""
        SELECT local_node_id, printf('N%03d', local_n), node_id,
               printf('node-%sN%03d', COALESCE('d' || node_device || '-', ''), local_n)
        FROM traceloom_node_core""").fetchall()
    assert len(rows) == len(DEVICES) * len(LOCAL_NS)
    for local, local_printf, node, node_printf in rows:
        assert (local, node) == (local_printf, node_printf)
    assert ("N007", "node-d3-N007") in [(r[0], r[2]) for r in rows]
    assert ("N1000", "node-N1000") in [(r[0], r[2]) for r in rows]


def test_occurrence_ids_are_the_printf_texts():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE traceloom_position_occurrence_core(occurrence_n INTEGER PRIMARY KEY,"
                " node_local INTEGER NOT NULL, node_device INTEGER,"
                " occurrence_idx INTEGER NOT NULL)")
    con.executemany("INSERT INTO traceloom_position_occurrence_core(node_local, node_device,"
                    " occurrence_idx) VALUES (?, ?, ?)",
                    [(n, d, i) for d in DEVICES for n in LOCAL_NS for i in (1, 10, 2000)])
    for statement in id_columns("traceloom_position_occurrence_core"):
        con.execute(statement)
    rows = con.execute("""
        SELECT position_id,
               printf('node-%sN%03d', COALESCE('d' || node_device || '-', ''), node_local),
               occurrence_id,
               printf('node-%sN%03d-occurrence-%d', COALESCE('d' || node_device || '-', ''),
                      node_local, occurrence_idx)
        FROM traceloom_position_occurrence_core""").fetchall()
    assert len(rows) == len(DEVICES) * len(LOCAL_NS) * 3
    for position, position_printf, occurrence, occurrence_printf in rows:
        assert (position, occurrence) == (position_printf, occurrence_printf)
    assert "node-d0-N042-occurrence-10" in [r[2] for r in rows]

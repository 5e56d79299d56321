"""One analysis, four ways, identical tables: the sqlite3 shell (`.load` then
traceloom_analyze), the CLI, traceloom.analyze() (the CLI in a child process) and
traceloom.load() into apsw with traceloom_analyze in-process.

Every traceloom_* table and view is compared by a checksum of all its rows in a total order,
excluding nothing: all four analyse the same absolute input path, so even the path metadata
(source_path, source_paths, traceloom_input.path) agrees."""
import hashlib
import sqlite3
import subprocess
import sys

import apsw
import pytest

from conftest import BUILD, ROOT

sys.path.insert(0, str(ROOT / "python"))
import traceloom  # noqa: E402


def relation_checksums(path):
    """{relation: (row count, sha256 of its rows ordered by every column)} for traceloom_*."""
    out = {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        names = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name LIKE 'traceloom\\_%' ESCAPE '\\' ORDER BY name")]
        for name in names:
            cols = len(db.execute(f'SELECT * FROM "{name}" LIMIT 0').description)
            order = ", ".join(str(i) for i in range(1, cols + 1))
            digest = hashlib.sha256()
            count = 0
            for row in db.execute(f'SELECT * FROM "{name}" ORDER BY {order}'):
                digest.update(repr(row).encode())
                count += 1
            out[name] = (count, digest.hexdigest())
    return out


@pytest.mark.parametrize("profile", ["exact_hlt/mono", "exact_hlt/split", "nsys/nsys_basic.sqlite",
                                     "gen/ascend_s6_l4_k6_aux", "gen/nsys_s6_l4_k6_aux"])
def test_shell_cli_and_python_give_identical_tables(tmp_path, fixtures, cli, monkeypatch, profile):
    monkeypatch.setenv("TRACELOOM_NATIVE_DIR", str(BUILD))
    assert (fixtures / profile).exists()
    src = str((fixtures / profile).resolve())
    quoted = "'" + src.replace("'", "''") + "'"

    shell_db = tmp_path / "shell.db"
    r = subprocess.run(["sqlite3", str(shell_db), "-cmd", f".load {BUILD.resolve() / 'traceloom'}",
                        f"SELECT traceloom_analyze({quoted})"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "traceloom: analysed" in r.stdout, r.stderr

    cli_db = tmp_path / "cli.db"
    r = subprocess.run([str(cli), src, "--output", str(cli_db)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr

    py_db = tmp_path / "python.db"
    traceloom.analyze(src, output=py_db)

    apsw_db = tmp_path / "apsw.db"
    conn = apsw.Connection(str(apsw_db))
    traceloom.load(conn)
    (summary,) = conn.execute("SELECT traceloom_analyze(?)", (src,)).fetchone()
    conn.close()
    assert summary.startswith("traceloom: analysed")

    shell = relation_checksums(shell_db)
    assert shell["traceloom_event"][0] > 0 and shell["traceloom_metadata"][0] > 0
    assert "traceloom_v_position_occurrence" in shell
    assert relation_checksums(cli_db) == shell
    assert relation_checksums(py_db) == shell
    assert relation_checksums(apsw_db) == shell


def test_the_checksums_see_a_difference(tmp_path, fixtures, monkeypatch):
    """A control: a different rules config changes the recorded options, and the comparison
    above notices it."""
    monkeypatch.setenv("TRACELOOM_NATIVE_DIR", str(BUILD))
    src = fixtures / "exact_hlt" / "mono"
    default = relation_checksums(traceloom.analyze(src, output=tmp_path / "a.db").path)
    other = relation_checksums(traceloom.analyze(src, output=tmp_path / "b.db",
                                                 rules_config="deepseekv4").path)
    assert default.keys() == other.keys()
    assert default["traceloom_metadata"] != other["traceloom_metadata"]

"""Broken ACL graph evidence ends in a typed status, never a guess.

Each case copies the exact_hlt fixture (14 launches: a prefill head/layer/tail composition,
three decode ones and a two-launch incomplete tail; see tests/sql/replay_acl.sql), changes one
piece of evidence with plain SQL, analyses it with the CLI and checks what the reconstruction
reports. Expected statuses follow recovery.md 7.1 from the changed evidence alone.
"""

import shutil
import sqlite3
import subprocess

import pytest


@pytest.fixture
def profile(fixtures, tmp_path):
    dst = tmp_path / "exact_hlt"
    shutil.copytree(fixtures / "exact_hlt" / "mono", dst)
    return dst


def db_path(profile):
    (path,) = list(profile.glob("PROF_*/msprof_*.db"))
    return path


def companion(profile):
    (path,) = list(profile.glob("PROF_*/host/sqlite/stream_info.db"))
    return path


def mutate(path, sql):
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.close()


def analyse(cli, profile, tmp_path):
    out = tmp_path / "analysis.db"
    r = subprocess.run([str(cli), str(profile), "--output", str(out)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return sqlite3.connect(out)


def regions(con):
    return [r for r in con.execute(
        "SELECT status, first_launch_occurrence_id, observed_launch_count, json_extract(raw_json, '$.detail') "
        "FROM traceloom_aclgraph_reconstruction_region ORDER BY db_idx, device_id, start_ns")]


def promoted(con):
    return con.execute("SELECT count(*) FROM traceloom_graph_launch WHERE replay_unit_id IS NOT NULL").fetchone()[0]


def test_missing_completion_breaks_the_segment(cli, profile, tmp_path):
    # The NOTIFY_RECORD of the 6th launch (decode tail at 600..620) is lost: that launch has no
    # completion; the segments before and after it are composed on their own.
    mutate(db_path(profile), "DELETE FROM TASK WHERE taskType = 12 AND startNs = 618;")
    con = analyse(cli, profile, tmp_path)
    statuses = [r[0] for r in regions(con)]
    assert "unrecognized_missing_completion_evidence" in statuses
    row = con.execute("SELECT match_policy, reconstruction_status FROM traceloom_graph_launch "
                      "WHERE graph_launch_occurrence_id = 5").fetchone()
    assert row == ("unmatched", "missing_completion_evidence")
    # Nothing that spans the gap is promoted: no unit contains launch 5.
    assert con.execute("SELECT count(*) FROM traceloom_graph_launch WHERE graph_launch_occurrence_id = 5 "
                       "AND replay_unit_id IS NOT NULL").fetchone()[0] == 0


def test_ambiguous_model_stream(cli, profile, tmp_path):
    # Stream 38 (instance 8's first stream) is also claimed by instance 9: no body of instance
    # 8 or 9 can use it, so those launches are not exact and their compositions not promoted.
    mutate(companion(profile), "INSERT INTO CaptureStreamInfo VALUES(0, 9, 3, 38, 3);")
    con = analyse(cli, profile, tmp_path)
    st = dict(con.execute("SELECT graph_launch_occurrence_id, reconstruction_status FROM traceloom_graph_launch"))
    for occ in (4, 5, 7, 8, 10, 11):  # instance 8 and 9 launches
        assert st[occ] == "ambiguous_graph_launch_body", occ
    assert "unrecognized_missing_body_evidence" in [r[0] for r in regions(con)]
    assert con.execute("SELECT count(*) FROM traceloom_graph_body_member m JOIN traceloom_graph_launch l "
                       "USING (launch_id) WHERE l.graph_launch_occurrence_id IN (4, 5, 7, 8, 10, 11)").fetchone()[0] == 0


def test_missing_body(cli, profile, tmp_path):
    # Instance 8's body tasks (streams 38, 39) are gone: those launches have no body.
    mutate(db_path(profile), "DELETE FROM TASK WHERE streamId IN (38, 39) AND taskType = 30;")
    con = analyse(cli, profile, tmp_path)
    st = dict(con.execute("SELECT graph_launch_occurrence_id, reconstruction_status FROM traceloom_graph_launch"))
    assert st[4] == st[7] == st[10] == "missing_graph_launch_body"
    assert [r[0] for r in regions(con)][1:4] == ["unrecognized_missing_body_evidence"] * 3
    assert promoted(con) == 3  # only the prefill composition survives


def test_extra_unknown_executable_task(cli, profile, tmp_path):
    # An executable task of an unknown type and no identity inside a decode head launch: its
    # membership cannot be exact, so the launch lacks body capability.
    mutate(db_path(profile), """
        INSERT INTO STRING_IDS VALUES(99, 'UNKNOWN_EXECUTABLE');
        INSERT INTO TASK VALUES(416, 417, 0, 8888, 9998, 1, 99, 0, 36, 999, 7);""")
    con = analyse(cli, profile, tmp_path)
    row = con.execute("SELECT reconstruction_status FROM traceloom_graph_launch WHERE graph_launch_occurrence_id = 3").fetchone()
    assert row == ("missing_body_capability",)
    assert regions(con)[1][0] == "unrecognized_missing_body_capability"
    # Known controls without identity are no members and do not block anything.
    mutate(db_path(profile), "UPDATE STRING_IDS SET value = 'NOP' WHERE id = 99;")
    con = analyse(cli, profile, tmp_path)
    assert promoted(con) == 12


def test_launch_after_the_last_synchronization_means_device_order(cli, profile, tmp_path):
    # exact_hlt's host thread synchronizes once (1490), after all 14 aclmdlRIExecuteAsync calls
    # (90 .. 1395): host submission order. Moved before the last call, that launch is in no
    # host-blocking-sync activity, so the composition follows device execution order
    # (recovery.md 7.1 step 5); the same 4 units, as both orders agree on this profile.
    mutate(db_path(profile), """
        UPDATE CANN_API SET startNs = 1300, endNs = 1310 WHERE name =
          (SELECT id FROM STRING_IDS WHERE value = 'aclrtSynchronizeStreamWithTimeout');""")
    con = analyse(cli, profile, tmp_path)
    assert con.execute("SELECT group_concat(DISTINCT order_policy) "
                       "FROM traceloom_aclgraph_reconstruction_region").fetchone() == ("device_execution_order",)
    assert promoted(con) == 12


def test_second_sibling_container_is_refused(cli, fixtures, tmp_path):
    dst = tmp_path / "torchnpu"
    shutil.copytree(fixtures / "torchnpu" / "single", dst)
    (capture,) = list(dst.iterdir())
    (capture / "PROF_second").mkdir()
    con = analyse(cli, dst, tmp_path)
    assert promoted(con) == 0
    # no companion, so no launch has body capability: all 5 regions of the 14 launches (the
    # prefix, the three periods and the two-launch tail) say so, and why
    details = [r[3] for r in regions(con) if r[0] == "unrecognized_missing_body_capability"]
    assert len(details) == 5 and all("sibling PROF_* containers" in d for d in details)


def test_input_is_never_modified(cli, profile, tmp_path):
    before = db_path(profile).read_bytes(), companion(profile).read_bytes()
    analyse(cli, profile, tmp_path)
    assert (db_path(profile).read_bytes(), companion(profile).read_bytes()) == before

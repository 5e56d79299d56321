"""Shared fixtures for the Python tests: paths of the build folder and fixture profiles."""
import hashlib
import os
import pathlib

import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = ROOT / os.environ.get("TRACELOOM_BUILD", "build")


@pytest.fixture(scope="session")
def build_dir() -> pathlib.Path:
    return BUILD


@pytest.fixture(scope="session")
def cli(build_dir) -> pathlib.Path:
    path = build_dir / "traceloom"
    assert path.exists(), "run `make` first"
    return path


@pytest.fixture(scope="session")
def fixtures(build_dir) -> pathlib.Path:
    path = build_dir / "fixtures"
    assert path.exists(), "run `make fixtures` first"
    return path


@pytest.fixture(scope="session")
def exact_hlt_db(cli, fixtures, tmp_path_factory) -> pathlib.Path:
    """One CLI analysis of the exact_hlt fixture (anchors, represented collectives, auxiliary
    links, exact replay units), shared by the tests that only read it."""
    out = tmp_path_factory.mktemp("exact_hlt") / "analysis.db"
    subprocess.run([str(cli), str(fixtures / "exact_hlt" / "mono"), "--output", str(out)],
                   check=True, capture_output=True)
    return out


def tree_digest(root: pathlib.Path) -> dict:
    """sha256 of every file under root (the inputs must never change)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out

"""The sdist builds without the repository: it vendors the C sources under _src/, and
setup.py then compiles them directly (no make) with the Makefile's flags. The resulting CLI
must analyse exactly like the one `make` builds."""
import os
import stat
import subprocess
import sys
import tarfile
import zipfile

from conftest import ROOT
from test_pkg_identical import relation_checksums


def test_sdist_builds_a_wheel_without_the_repository(tmp_path, fixtures, cli):
    dist = tmp_path / "dist"
    env = {k: v for k, v in os.environ.items() if k not in ("TRACELOOM_NATIVE_DIR", "PYTHONPATH")}
    r = subprocess.run([sys.executable, "-c",
                        "import sys; from setuptools import build_meta; "
                        "print(build_meta.build_sdist(sys.argv[1]))", str(dist)],
                       cwd=ROOT / "python", capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    (sdist,) = dist.glob("traceloom-*.tar.gz")
    names = tarfile.open(sdist).getnames()
    for member in ("setup.py", "pyproject.toml", "traceloom/__init__.py", "_src/ext/traceloom.h",
                   "_src/ext/cli/main.c", "_src/tools/embed.sh", "_src/rules/classification.yaml",
                   "_src/configs/deepseekv4.yaml", "_src/sql/schema/00_core.sql"):
        assert f"traceloom-0.1.0/{member}" in names
    assert not [n for n in names if n.endswith(".o") or "__pycache__" in n]

    # pip unpacks the sdist in a temporary folder: no repository around it, so no make.
    wheels = tmp_path / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
                        str(sdist)], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    (wheel,) = wheels.glob("traceloom-0.1.0-py3-none-linux_*.whl")
    unpacked = tmp_path / "wheel"
    zipfile.ZipFile(wheel).extractall(unpacked)
    native_cli = unpacked / "traceloom" / "_native" / "bin" / "traceloom"
    native_cli.chmod(native_cli.stat().st_mode | stat.S_IXUSR)
    assert (unpacked / "traceloom" / "_native" / "traceloom.so").is_file()

    src = str((fixtures / "exact_hlt" / "mono").resolve())
    for prog, out in ((native_cli, tmp_path / "direct.db"), (cli, tmp_path / "make.db")):
        r = subprocess.run([str(prog), src, "--output", str(out)], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
    assert relation_checksums(tmp_path / "direct.db") == relation_checksums(tmp_path / "make.db")

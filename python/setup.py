"""Build step of the traceloom Python package.

The package metadata lives in pyproject.toml; this file only adds the native build. When
setuptools builds the package (`pip install ./python`, `python -m build python`), build_py
also

  1. builds build/traceloom.so (the loadable extension) and build/traceloom (the CLI) with
     `make -C <repo root> BUILD=<dir> all`, or, where make or the repository is absent,
     compiles the same sources directly with the same flags as the Makefile;
  2. copies them into traceloom/_native/ (the CLI as _native/bin/traceloom), and
     rules/*.yaml and configs/*.yaml into traceloom/rules/ and traceloom/configs/ of the
     built package.

So the installed package is self-contained, the way sqlite-vec's Python package ships its
loadable library. The wheel holds native code, so it is tagged for the platform
(py3-none-<platform>): it is not pure, but it does not depend on the Python ABI either.

Environment:
  TRACELOOM_BUILD         make's build folder (relative to the repo root or absolute);
                          default "build", so an up-to-date `make` is reused as is.
  TRACELOOM_NATIVE_BUILD  "make" (default when the repo and make exist) or "direct".

An sdist vendors the sources it needs under _src/ so that it builds without the repository.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist
from setuptools.dist import Distribution

try:  # setuptools >= 70.1 carries bdist_wheel itself
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # older setuptools: the wheel package provides it
    try:
        from wheel.bdist_wheel import bdist_wheel  # type: ignore[no-redef]
    except ImportError:  # no wheel support at all: only sdist / legacy installs
        bdist_wheel = None  # type: ignore[assignment,misc]

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
VENDORED = HERE / "_src"

# The same flags as the Makefile, for the direct build.
CSTD = ["-std=c11", "-D_GNU_SOURCE"]
WARN = ["-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]
OPT = ["-O2", "-g"]
DEPS_LIBS = ["-lyaml", "-lz", "-lm", "-lpthread"]
# What the sdist vendors, and what the direct build reads.
SOURCE_TREES = ["ext", "sql", "rules", "configs"]
SOURCE_FILES = ["tools/embed.sh", "LICENSE"]


def _is_source_root(path: Path) -> bool:
    return (path / "ext" / "traceloom.h").is_file() and (path / "tools" / "embed.sh").is_file()


def _source_root() -> Path:
    """The repository when this is a checkout, else the sources an sdist vendored."""
    for candidate in (REPO_ROOT, VENDORED):
        if _is_source_root(candidate):
            return candidate
    raise RuntimeError(
        "traceloom: cannot find the C sources: expected the TraceLoom repository at "
        f"{REPO_ROOT} (python/ is one of its folders) or vendored sources at {VENDORED}"
    )


def _run(cmd: list[str], cwd: Path) -> None:
    print("traceloom build:", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=str(cwd), check=True)


def _build_with_make(root: Path) -> Path:
    build = os.environ.get("TRACELOOM_BUILD", "build")
    _run(["make", "-C", str(root), f"BUILD={build}", "all"], cwd=root)
    out = Path(build)
    return out if out.is_absolute() else root / out


def _build_directly(root: Path, out: Path) -> Path:
    """Compiles the extension and the CLI without make, as the Makefile would."""
    cc = os.environ.get("CC", "cc")
    out.mkdir(parents=True, exist_ok=True)
    includes = ["-Iext", "-Iext/util"]
    ext_srcs = sorted(
        p.relative_to(root).as_posix()
        for p in (root / "ext").rglob("*.c")
        if "cli" not in p.relative_to(root / "ext").parts[:1]
    )
    embed_srcs = sorted(
        p.relative_to(root).as_posix()
        for pattern in ("sql/schema/*.sql", "sql/views/*.sql", "sql/compare/*.sql", "rules/*.yaml",
                        "configs/*.yaml")
        for p in root.glob(pattern)
    )
    embedded_c = out / "gen" / "embedded_files.c"
    embedded_c.parent.mkdir(parents=True, exist_ok=True)
    _run(["bash", "tools/embed.sh", str(embedded_c), *embed_srcs], cwd=root)
    so = out / "traceloom.so"
    _run([cc, *CSTD, *WARN, *OPT, "-fPIC", "-fvisibility=hidden", *includes, "-shared",
          "-o", str(so), *ext_srcs, str(embedded_c), *DEPS_LIBS], cwd=root)
    _run([cc, *CSTD, *WARN, *OPT, "-DSQLITE_CORE", *includes, "-o", str(out / "traceloom"),
          "ext/cli/main.c", *ext_srcs, str(embedded_c), "-lsqlite3", *DEPS_LIBS], cwd=root)
    return out


def build_native(scratch: Path) -> tuple[Path, Path]:
    """Builds the native parts; returns (folder with traceloom.so and traceloom, source root)."""
    root = _source_root()
    mode = os.environ.get("TRACELOOM_NATIVE_BUILD")
    if mode not in (None, "", "make", "direct"):
        raise RuntimeError(f"TRACELOOM_NATIVE_BUILD must be 'make' or 'direct', not {mode!r}")
    use_make = mode != "direct" and root == REPO_ROOT and shutil.which("make") is not None
    if mode == "make" and not use_make:
        raise RuntimeError("TRACELOOM_NATIVE_BUILD=make needs make and the TraceLoom repository")
    native = _build_with_make(root) if use_make else _build_directly(root, scratch / "native")
    for name in ("traceloom.so", "traceloom"):
        if not (native / name).is_file():
            raise RuntimeError(f"traceloom: the native build did not produce {native / name}")
    return native, root


class BuildPyWithNative(build_py):
    """build_py, then the native build copied into the package."""

    def run(self) -> None:
        super().run()
        if self.dry_run:
            return
        native, root = build_native(Path(self.build_temp).resolve())
        pkg = Path(self.build_lib) / "traceloom"
        for sub in ("_native", "rules", "configs"):
            shutil.rmtree(pkg / sub, ignore_errors=True)
            (pkg / sub).mkdir(parents=True)
        shutil.copy2(native / "traceloom.so", pkg / "_native" / "traceloom.so")
        # The CLI goes to bin/: a file named _native/traceloom beside traceloom.so would be
        # what SQLite's load_extension() tries first for the suffix-less loadable_path().
        (pkg / "_native" / "bin").mkdir()
        shutil.copy2(native / "traceloom", pkg / "_native" / "bin" / "traceloom")
        os.chmod(pkg / "_native" / "bin" / "traceloom", 0o755)
        for sub in ("rules", "configs"):
            for yaml in sorted((root / sub).glob("*.yaml")):
                shutil.copy2(yaml, pkg / sub / yaml.name)

    def initialize_options(self) -> None:
        super().initialize_options()
        self.build_temp: str | None = None

    def finalize_options(self) -> None:
        super().finalize_options()
        self.set_undefined_options("build", ("build_temp", "build_temp"))


class SdistWithSources(sdist):
    """An sdist that carries the C sources under _src/, so it builds without the repository."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        if not _is_source_root(REPO_ROOT):
            return  # building an sdist from an sdist: _src/ is already among the files
        dest = Path(base_dir) / "_src"
        for tree in SOURCE_TREES:
            shutil.copytree(REPO_ROOT / tree, dest / tree,
                            ignore=shutil.ignore_patterns("__pycache__", "*.o", "*.pyc"))
        for name in SOURCE_FILES:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, dest / name)


class NativeDistribution(Distribution):
    """The package holds native code: install it as platform-specific (platlib)."""

    def has_ext_modules(self) -> bool:
        return True


cmdclass = {"build_py": BuildPyWithNative, "sdist": SdistWithSources}

if bdist_wheel is not None:

    class PlatformWheel(bdist_wheel):  # type: ignore[misc,valid-type]
        """Not pure, but independent of the Python ABI: py3-none-<platform>."""

        def finalize_options(self) -> None:
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self) -> tuple[str, str, str]:
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = PlatformWheel

setup(cmdclass=cmdclass, distclass=NativeDistribution)

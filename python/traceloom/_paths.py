"""Where the bundled native files, rule manifests and configs of the package are.

An installed package carries them in traceloom/_native/ (the CLI in _native/bin/),
traceloom/rules/ and traceloom/configs/ (setup.py copies them there). Two fallbacks
serve development from a checkout: TRACELOOM_NATIVE_DIR names a folder holding
traceloom.so and traceloom (for example the repository's build/), and the repository's
rules/ and configs/ are used when the package folder has none.
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKOUT_ROOT = PACKAGE_DIR.parent.parent  # <repo>/python/traceloom -> <repo>

#: The configs bundled with TraceLoom, by the name traceloom.bundled_rules() takes.
BUNDLED_CONFIGS = ("scheduler-step", "deepseekv4", "qwen35-serving")


def native_dir() -> Path:
    """The folder that holds traceloom.so and the traceloom CLI."""
    override = os.environ.get("TRACELOOM_NATIVE_DIR")
    return Path(override).resolve() if override else PACKAGE_DIR / "_native"


def _require(path: Path, what: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(
            f"traceloom: the bundled {what} is missing at {path}; reinstall the package "
            "(`pip install ./python` builds it) or set TRACELOOM_NATIVE_DIR to a folder "
            "holding traceloom.so and traceloom (e.g. the repository's build/)"
        )
    return path


def extension_file() -> Path:
    """The bundled loadable extension, with its .so suffix."""
    return _require(native_dir() / "traceloom.so", "loadable extension traceloom.so")


def cli_path() -> Path:
    """The bundled `traceloom` command-line program.

    The package keeps it in _native/bin/; a TRACELOOM_NATIVE_DIR build folder has it beside
    traceloom.so.
    """
    folder = native_dir()
    installed = folder / "bin" / "traceloom"
    return installed if installed.is_file() else _require(folder / "traceloom", "traceloom CLI")


def data_dir(name: str) -> Path:
    """traceloom/<name>/ of the package, or <repo>/<name>/ when running from a checkout."""
    bundled = PACKAGE_DIR / name
    if bundled.is_dir():
        return bundled
    checkout = _CHECKOUT_ROOT / name
    if checkout.is_dir() and (_CHECKOUT_ROOT / "ext" / "traceloom.h").is_file():
        return checkout
    raise FileNotFoundError(f"traceloom: the bundled {name}/ folder is missing at {bundled}")

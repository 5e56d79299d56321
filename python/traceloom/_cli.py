"""The `traceloom` console script: replaces itself with the bundled native CLI."""
from __future__ import annotations

import os
import sys

from . import _paths


def main() -> int:
    """Execs the bundled CLI with this process's arguments (it never returns on success).

    `traceloom cluster ...` is the Python cluster driver instead (traceloom.cluster).
    """
    if sys.argv[1:2] == ["cluster"]:
        from .cluster._cli import main as cluster_main
        return cluster_main(sys.argv[2:])
    try:
        cli = _paths.cli_path()
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(str(cli), [str(cli), *sys.argv[1:]])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())

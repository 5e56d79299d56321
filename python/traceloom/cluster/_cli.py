"""`python -m traceloom cluster RUN_DIR --output cluster.db [--workers N] [--scheduler ADDRESS]`."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

USAGE_EXIT = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="traceloom cluster",
        description="Analyse every rank of a run (one Dask task per rank) into one cluster "
                    "database with cross-rank views (docs/CLUSTER.md).")
    p.add_argument("profiles", nargs="+", metavar="RUN_DIR|PROFILE",
                   help="a run directory (each profile input in it is a rank) or one profile per rank")
    p.add_argument("--output", default="cluster.db", help="the cluster database (default cluster.db)")
    engine = p.add_mutually_exclusive_group()
    engine.add_argument("--workers", type=int, default=None,
                        help="LocalCluster worker processes (default: min(ranks, CPU cores))")
    engine.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="a running Dask scheduler, e.g. tcp://host:8786")
    engine.add_argument("--serial", action="store_true",
                        help="no Dask: the ranks one after another in this process")
    p.add_argument("--threads-per-rank", type=int, default=1, help="--threads of each rank's analysis")
    p.add_argument("--rules-config", default=None, help="a bundled config name or a rules file")
    p.add_argument("--ranks-dir", default=None, help="where the per-rank analyses go "
                   "(default <output stem>.ranks beside the output)")
    p.add_argument("--perfetto-out", default=None,
                   help="also write a multi-rank Perfetto timeline of the ranks")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(sys.argv[2:] if argv is None else argv)
    from . import analyze, export_perfetto   # after parsing: --help stays instant
    client = False if args.serial else args.scheduler
    try:
        result = analyze(args.profiles if len(args.profiles) > 1 else args.profiles[0],
                         output=args.output, client=client, workers=args.workers,
                         threads_per_rank=args.threads_per_rank, rules_config=args.rules_config,
                         ranks_dir=args.ranks_dir, progress=not args.quiet)
    except (FileNotFoundError, IsADirectoryError, TypeError, ValueError) as e:
        print(f"traceloom cluster: {e}", file=sys.stderr)
        return USAGE_EXIT
    ok = len(result.ranks) - len(result.failed)
    print(f"cluster database: {result.path} ({ok} of {len(result.ranks)} rank(s) analysed, "
          f"{result.engine}, {result.elapsed_s:.1f} s, merge {result.merge_s:.2f} s)")
    for r in result.failed:
        print(f"  rank {r.rank} {r.input_path}: {r.error}", file=sys.stderr)
    if args.perfetto_out and ok:
        print(f"perfetto: {export_perfetto(result.path, args.perfetto_out)}")
    return 1 if result.failed else 0

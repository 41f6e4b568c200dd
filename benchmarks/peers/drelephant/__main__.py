"""``python -m benchmarks.peers.drelephant HADOOP_DIR``: one JSON line per job and heuristic at MODERATE or worse,
and counts on stderr."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from benchmarks.peers.drelephant.analysis import HEURISTIC_NAMES, SPEC9_HEURISTICS
from benchmarks.peers.drelephant.config import HDFS_BLOCK_SIZE_DEFAULT
from benchmarks.peers.drelephant.history import scan_history

WARNING = ("MODERATE", "SEVERE", "CRITICAL")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.peers.drelephant", description=__doc__)
    ap.add_argument("hadoop_dir", help="directory holding the job history files (*.jhist), searched recursively")
    ap.add_argument(
        "--all-heuristics",
        action="store_true",
        help="every ported heuristic, with Mapper/Reducer Memory and Exception (default: those section 9 scores)",
    )
    ap.add_argument("--all", action="store_true", help="print every result, NONE and LOW too")
    ap.add_argument(
        "--hdfs-block-size", type=int, default=HDFS_BLOCK_SIZE_DEFAULT, help="bytes (default 128 MiB, dfs.blocksize)"
    )
    args = ap.parse_args(argv)
    names = list(HEURISTIC_NAMES) if args.all_heuristics else [n for n in HEURISTIC_NAMES if n in SPEC9_HEURISTICS]
    scan = scan_history(args.hadoop_dir, heuristics=names, hdfs_block_size=args.hdfs_block_size)
    flagged: Counter[str] = Counter()
    jobs_flagged: set[str] = set()
    for r in scan.results:
        if r["severity"] in WARNING:
            flagged[r["heuristic"]] += 1
            jobs_flagged.add(r["job_id"])
        if args.all or r["severity"] in WARNING:
            print(json.dumps(r, sort_keys=True))
    err = sys.stderr
    print(
        f"dr-elephant: {scan.jobs} jobs, {scan.analyzed} analyzed, {len(scan.skipped)} not analyzable "
        f"(as in Dr. Elephant), {len(scan.errors)} unreadable; {len(jobs_flagged)} jobs at MODERATE or worse",
        file=err,
    )
    for name in HEURISTIC_NAMES:
        if name in names:
            print(f"  {name:<16} {flagged[name]:>5} jobs MODERATE+", file=err)
    for line in (scan.errors + scan.skipped)[:20]:
        print(f"  ! {line}", file=err)
    return 0


if __name__ == "__main__":
    sys.exit(main())

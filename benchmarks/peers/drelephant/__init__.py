"""A Python port of Dr. Elephant's MapReduce heuristics (github.com/linkedin/dr-elephant, Apache 2.0), scored beside
hcep's alerts on the same job history (docs/semantics.md section 9). Entry point: ``analyze_history(hadoop_dir)``."""

from benchmarks.peers.drelephant.analysis import HEURISTIC_NAMES, SPEC9_HEURISTICS, analyze, build_heuristics
from benchmarks.peers.drelephant.history import HistoryScan, analyze_history, scan_history

__all__ = [
    "HEURISTIC_NAMES",
    "SPEC9_HEURISTICS",
    "HistoryScan",
    "analyze",
    "analyze_history",
    "build_heuristics",
    "scan_history",
]

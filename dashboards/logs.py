"""The Hadoop log lines behind a straggling shuffle pull, found in a log tree (a NodeManager's ``userlogs`` or the
simulator's output).

Why search the logs at all: the events say *that* a pull was slow; the reducer's syslog says which fetcher, which
connection and what it was waiting on -- what an operator reads next.  The search is bounded (files and bytes) so a
large log tree cannot stall a page.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_FILES = 400
MAX_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class LogLine:
    path: str
    lineno: int
    text: str


def short_path(path: str | Path, root: str | Path) -> str:
    """``.../nodes/<host>/userlogs/<app>/<container>/syslog`` -> ``<host>/<container>/syslog`` (else relative)."""
    parts = Path(path).parts
    if "userlogs" in parts:
        i = parts.index("userlogs")
        return "/".join((*parts[i - 1 : i], *parts[i + 2 :]))
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return str(path)


def attempt_prefix(task_id: str) -> str | None:
    """``task_<c>_<n>_r_<k>`` -> ``attempt_<c>_<n>_r_<k>_`` (any attempt of the task)."""
    return f"attempt_{task_id[5:]}_" if task_id.startswith("task_") else None


def _candidates(root: Path, app_id: str | None) -> Iterator[Path]:
    seen = 0
    for path in root.rglob("syslog*"):
        if app_id is not None and app_id not in path.parts:
            continue
        if path.is_file():
            seen += 1
            yield path
            if seen >= MAX_FILES:
                return


def straggler_lines(root: str | Path, reducer_task: str, map_task: str | None, limit: int = 40) -> list[LogLine]:
    """Lines of the reducer's container log that mention the map output it pulled slowly (or, without a map task,
    the shuffle lines of the reducer)."""
    root = Path(root)
    reducer = attempt_prefix(reducer_task)
    if reducer is None or not root.is_dir():
        return []
    app_id = "application_" + reducer_task[5:].rsplit("_", 2)[0]
    wanted = attempt_prefix(map_task) if map_task else None
    out: list[LogLine] = []
    for path in _candidates(root, app_id):
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if reducer not in text or "Fetcher" not in text:
            continue  # not the reducer's own container log (the AM's names every attempt but fetches nothing)
        for lineno, line in enumerate(text.splitlines(), 1):
            if (wanted and wanted in line) or (not wanted and "Fetcher" in line):
                out.append(LogLine(str(path), lineno, line))
                if len(out) >= limit:
                    return out
    return out

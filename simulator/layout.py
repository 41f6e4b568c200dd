"""Where the simulated cluster's files go, and how Hadoop prints times -- shared by the artifact writers.

    DIR/hadoop/history/done/YYYY/MM/DD/000000/<job>-<submit>-<user>-<name>-<finish>-<maps>-<reduces>-...jhist
    DIR/hadoop/nodes/<host>/userlogs/<application>/<container>/syslog   (AM: container ..._000001; reducers)

i.e. the history server's done directory and each NodeManager's container log directory, as on a real cluster.
Log timestamps are written in UTC (the collectors' default zone).
"""

from __future__ import annotations

import os
import time
from urllib.parse import quote_plus

from simulator.jobs import Job

_MILLIS = tuple(f",{i:03d} " for i in range(1000))


def render(lines: list[tuple[int, str]]) -> str:
    """Sort ``(ms << 20 | seq, body)`` lines and prefix each with its log4j timestamp (UTC).

    A body may hold several lines of the same millisecond separated by ``\\0``; each gets the timestamp.
    """
    lines.sort()
    out: list[str] = []
    append = out.append
    millis = _MILLIS
    prev = -1
    prefix = ""
    for key, body in lines:
        t_ms = key >> 20
        sec = t_ms // 1000
        if sec != prev:
            prev = sec
            prefix = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(sec))
        stamp = prefix + millis[t_ms - sec * 1000]
        if "\0" in body:
            body = body.replace("\0", "\n" + stamp)
        append(stamp + body)
    out.append("")
    return "\n".join(out)


def ms(t: float) -> int:
    return int(round(t * 1000.0))


def host_names(nodes: int) -> list[str]:
    width = max(4, len(str(nodes)))
    return [f"node{i + 1:0{width}d}.hcep.local" for i in range(nodes)]


def container_dir(root: str, host: str, job: Job, container: int) -> str:
    return os.path.join(root, "hadoop", "nodes", host, "userlogs", job.app_id, job.container_id(container))


def jhist_path(root: str, job: Job, finished_maps: int, finished_reduces: int) -> str:
    day = time.gmtime(job.end)
    serial = f"{job.seq:09d}"[:6]
    name = quote_plus(job.name).replace("-", "%2D")
    fname = (
        f"{job.job_id}-{ms(job.submit)}-{job.user}-{name}-{ms(job.end)}-{finished_maps}-{finished_reduces}-"
        f"{job.status}-{job.queue}-{ms(job.launch)}.jhist"
    )
    return os.path.join(
        root,
        "hadoop",
        "history",
        "done",
        f"{day.tm_year:04d}",
        f"{day.tm_mon:02d}",
        f"{day.tm_mday:02d}",
        serial,
        fname,
    )


def write_text(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)

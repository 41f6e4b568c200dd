"""A successful map attempt's ``host_pace``: its ``pace`` against its own host's recent past, across jobs.

``pace`` compares an attempt with the same job's maps on other hosts, so a host of an older, slower generation
shows 1.2-1.6x on every attempt, and a natural straggler among them can carry a run of five over a gate close to
that.  ``host_pace`` is the attempt's pace over the median pace of the host's previous paced map attempts (of any
job) that had *finished before this attempt started* -- what Hadoop could have known then -- once there are
``HOST_PACE_MIN`` of them: a host that was always 1.5x stays near 1, a host that turns slow shows its slowdown.

The job-history reader sees one job at a time, so this is a pass across jobs: the batch collector holds back the
paced map attempts and annotates them in finish order at the end; the follower annotates each as it arrives (an
attempt that finished before another started has been read by then, unless a file lags behind).
"""

from __future__ import annotations

import bisect
import statistics
from typing import Any

#: The yardstick is the median over at most this many of the host's latest earlier paced attempts.
HOST_PACE_K = 8
#: Fewer earlier paced attempts than this on the host: no ``host_pace`` (too little past to be a yardstick).
HOST_PACE_MIN = 3
#: Per host, how many finished attempts are kept (enough to find K that finished before a long attempt started).
_KEEP = 64


class HostPaces:
    """Per host, the (finish, pace) of its paced map attempts seen so far, sorted by finish."""

    def __init__(self, k: int = HOST_PACE_K, minimum: int = HOST_PACE_MIN) -> None:
        self.k = k
        self.minimum = minimum
        self.done: dict[str, list[tuple[float, float]]] = {}

    def annotate(self, event: dict[str, Any]) -> None:
        """Add ``host_pace`` to a paced ``Mapper`` event when the host's past allows, and remember its pace."""
        pace = event.get("pace")
        host = event.get("host")
        if event.get("type") != "Mapper" or not isinstance(pace, (int, float)) or not isinstance(host, str):
            return
        finish = float(event["ts"])
        start = finish - float(event.get("period") or 0.0)
        past = self.done.setdefault(host, [])
        cut = bisect.bisect_right(past, (start, float("inf")))
        earlier = [p for _, p in past[max(0, cut - self.k) : cut]]
        if len(earlier) >= self.minimum:
            ref = statistics.median(earlier)
            if ref > 0:
                event["host_pace"] = round(float(pace) / ref, 3)
        bisect.insort(past, (finish, float(pace)))
        if len(past) > _KEEP:
            del past[0]

"""A successful map attempt's ``host_pace``: its ``pace`` against its own host's usual pace, across jobs.

``pace`` compares an attempt with the same job's maps on other hosts, so a host of an older, slower generation
shows 1.2-1.6x on every attempt, and a natural straggler among them can carry a run of five over a gate close to
that.  ``host_pace`` is the attempt's pace over its host's *usual* pace: the median pace of the host's paced map
attempts (of any job) that finished between ``HOST_PACE_HORIZON`` and ``HOST_PACE_LAG`` before this attempt
started -- what Hadoop could have known then -- once there are ``HOST_PACE_MIN`` of them; with fewer, the usual pace
is 1 (the job's maps on other hosts) and ``host_pace`` equals ``pace``.  A host that always runs at 1.5x stays near
1; a host that turns slow shows its slowdown.

Why a lagged, long yardstick: a host that turns slow and runs many short maps would otherwise teach its own
yardstick the slowdown within minutes (a median of its last few attempts is soon half slowed ones).  Attempts of the
last ``HOST_PACE_LAG`` never count, and the median over up to an hour before that moves only once slowed attempts are
half of that hour's -- a slowdown of 10-40 minutes cannot make itself usual before a rule has seen it.

The job-history reader sees one job at a time, so this is a pass across jobs: the batch collector holds back the
paced map attempts and annotates them in finish order at the end; the follower annotates each as it arrives (an
attempt that finished well before another started has been read by then, unless a file lags far behind).
"""

from __future__ import annotations

import bisect
import statistics
from typing import Any

#: Attempts that finished within this many seconds before an attempt started are not part of its yardstick.
HOST_PACE_LAG = 600.0
#: ... nor those that finished more than this many seconds before it started.
HOST_PACE_HORIZON = 3600.0
#: Fewer such attempts than this on the host: the yardstick is 1 (``host_pace`` = ``pace``).
HOST_PACE_MIN = 5
#: The median is taken over at most this many of them, evenly spread over the window (a busy host finishes
#: thousands of maps an hour).
HOST_PACE_SAMPLE = 33
#: Per host, attempts that finished this long before the latest one are forgotten (an attempt running longer than
#: this minus the horizon loses the oldest part of its yardstick).
_FORGET = HOST_PACE_HORIZON + 7200.0


class HostPaces:
    """Per host, the (finish, pace) of its paced map attempts seen so far, sorted by finish."""

    def __init__(
        self,
        lag: float = HOST_PACE_LAG,
        horizon: float = HOST_PACE_HORIZON,
        minimum: int = HOST_PACE_MIN,
        sample: int = HOST_PACE_SAMPLE,
    ) -> None:
        self.lag = lag
        self.horizon = horizon
        self.minimum = minimum
        self.sample = sample
        self.done: dict[str, list[tuple[float, float]]] = {}

    def usual(self, host: str, start: float) -> float | None:
        """The host's usual pace for an attempt that started at ``start``; None when it has too little past."""
        past = self.done.get(host, [])
        lo = bisect.bisect_left(past, (start - self.horizon, float("-inf")))
        hi = bisect.bisect_right(past, (start - self.lag, float("inf")))
        n = hi - lo
        if n < self.minimum:
            return None
        step = max(1, -(-n // self.sample))  # ceil: at most `sample` values, evenly spread
        return statistics.median(p for _, p in past[lo:hi:step])

    def annotate(self, event: dict[str, Any]) -> None:
        """Add ``host_pace`` to a paced ``Mapper`` event, and remember its pace."""
        pace = event.get("pace")
        host = event.get("host")
        if (
            event.get("type") != "Mapper"
            or isinstance(pace, bool)
            or not isinstance(pace, (int, float))
            or not isinstance(host, str)
        ):
            return
        finish = float(event["ts"])
        start = finish - float(event.get("period") or 0.0)
        ref = self.usual(host, start)
        event["host_pace"] = round(float(pace) / ref, 3) if ref and ref > 0 else float(pace)
        past = self.done.setdefault(host, [])
        bisect.insort(past, (finish, float(pace)))
        if past[0][0] < past[-1][0] - _FORGET:
            del past[: bisect.bisect_left(past, (past[-1][0] - _FORGET, float("-inf")))]

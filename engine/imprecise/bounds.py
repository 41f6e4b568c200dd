"""Valid intervals by interval shrinking (imprecise-timestamp paper section 4.1, digest-imprecise gaps I3-I5).

For a chain of events that must occur in this order (strictly), each event's interval shrinks to the points at which
it can take part in some matching world: forward valid lower bounds, backward revised upper bounds, then the window
``t_last - t_first < W`` pushed both ways (the paper only tightens upper bounds; I4 shows why lower bounds need it
too).  An empty interval means no world matches: the evaluator uses this to skip the confidence DP.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.events import Event


def valid_intervals(chain: Sequence[Event], window: int | None = None) -> list[tuple[int, int]] | None:
    """``[(vlb, vub), ...]`` for the chain, or ``None`` when some interval becomes empty."""
    n = len(chain)
    lo = [e.tlo for e in chain]
    hi = [e.thi for e in chain]
    for _ in range(2):  # the window pass can tighten bounds that the order passes then propagate again
        for i in range(1, n):  # pass 1: valid lower bounds, forwards
            lo[i] = max(lo[i], lo[i - 1] + 1)
        for i in range(n - 2, -1, -1):  # pass 2: revised upper bounds, backwards
            hi[i] = min(hi[i], hi[i + 1] - 1)
        if window is not None:  # pass 3: t_last - t_first < W, both ways
            hi[-1] = min(hi[-1], hi[0] + window - 1)
            lo[0] = max(lo[0], lo[-1] - window + 1)
        if any(lo[i] > hi[i] for i in range(n)):
            return None
    for i in range(1, n):
        lo[i] = max(lo[i], lo[i - 1] + 1)
    for i in range(n - 2, -1, -1):
        hi[i] = min(hi[i], hi[i + 1] - 1)
    if any(lo[i] > hi[i] for i in range(n)):
        return None
    return list(zip(lo, hi, strict=True))

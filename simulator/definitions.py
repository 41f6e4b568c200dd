"""The anomaly definitions of the simulator's ground truth: what a warning-level operator must be warned about.

The lead engineer fixed these; the truth (``detect.py``, ``truth.py``), the README ("Ground truth") and the tests
all read the constants from here, so they cannot drift apart.  Every time is what the logs show: epoch milliseconds
(the simulator's exact times rounded with ``layout.ms``).  Each kind's class docstring is its definition;
``TEXT`` is the one line written into ``ground_truth.json`` under ``definitions``.
"""

from __future__ import annotations

from typing import ClassVar

GIB = 1 << 30


class SkewedMapper:
    """A job with at least ``MIN_ATTEMPTS`` map attempts in which the longest map attempt (any final status:
    SUCCEEDED, FAILED or KILLED -- a straggler killed after speculation counts) ran at least ``RATIO`` times the median
    duration of the job's successful map attempts and at least ``MIN_EXCESS_S`` seconds longer than it.  Knowable once
    that attempt has ended and the job has ``MIN_ATTEMPTS`` finished map attempts."""

    KIND: ClassVar[str] = "skewed_mapper"
    MIN_ATTEMPTS: ClassVar[int] = 5
    RATIO: ClassVar[float] = 4.0
    MIN_EXCESS_S: ClassVar[float] = 120.0
    TEXT: ClassVar[str] = (
        f"a job with >= {MIN_ATTEMPTS} map attempts whose longest map attempt (any status) ran >= {RATIO:g}x the "
        f"median of its successful map attempts and >= {MIN_EXCESS_S:g} s longer"
    )


class SkewedReducer:
    """The same as :class:`SkewedMapper` over the job's reduce attempts: at least ``MIN_ATTEMPTS`` of them, the
    longest (any status) at least ``RATIO`` times the median of the successful ones and ``MIN_EXCESS_S`` s longer."""

    KIND: ClassVar[str] = "skewed_reducer"
    MIN_ATTEMPTS: ClassVar[int] = 5
    RATIO: ClassVar[float] = 4.0
    MIN_EXCESS_S: ClassVar[float] = 120.0
    TEXT: ClassVar[str] = (
        f"a job with >= {MIN_ATTEMPTS} reduce attempts whose longest reduce attempt (any status) ran >= {RATIO:g}x the "
        f"median of its successful reduce attempts and >= {MIN_EXCESS_S:g} s longer"
    )


class SlowPull:
    """A shuffle fetch (one map output pulled by one reduce attempt; its duration is from the reduce log's "about to
    shuffle" line to its "Read" line) that took at least ``MIN_S`` seconds and at least ``RATIO`` times the mean
    duration of the fetches of that reduce attempt completed strictly before it, of which there are at least
    ``MIN_BEFORE``.  Every such fetch is one anomaly (several in one reducer are separate entries); knowable when it
    completes."""

    KIND: ClassVar[str] = "slow_pull"
    MIN_S: ClassVar[float] = 30.0
    RATIO: ClassVar[float] = 10.0
    MIN_BEFORE: ClassVar[int] = 2
    TEXT: ClassVar[str] = (
        f"a shuffle fetch that took >= {MIN_S:g} s and >= {RATIO:g}x the mean of the same reduce attempt's fetches "
        f"completed strictly before it (at least {MIN_BEFORE} of them)"
    )


class QueuedOutput:
    """A job whose map output was held: an interval of at least ``MIN_HOLD_S`` seconds during which at least
    ``MIN_BYTES`` of its map output had been written (MAP_OUTPUT_MATERIALIZED_BYTES of its finished successful maps,
    counted at the map's finish) and not yet fetched (less the bytes of its completed fetches), with no fetch of the
    job completing inside the interval.  The interval starts at the later of the job's last fetch before it and the
    moment the unfetched bytes reached ``MIN_BYTES``; knowable ``MIN_HOLD_S`` after that start.  One per job."""

    KIND: ClassVar[str] = "queued_output"
    MIN_BYTES: ClassVar[int] = GIB
    MIN_HOLD_S: ClassVar[float] = 180.0
    TEXT: ClassVar[str] = (
        f"a job with >= {MIN_BYTES / GIB:g} GiB of map output written and not yet fetched for >= {MIN_HOLD_S:g} s "
        f"while no fetch of the job completed"
    )


class UnbalancingReducer:
    """A reduce attempt whose own contribution to its host's run queue (exact, from the load model: a normal reducer
    adds at most 1.0, a runaway one ramps up to its peak) reached at least ``MIN_CONTRIBUTION``, and during which
    (between its start and end) the population standard deviation of ``load_one`` over all hosts, in one Ganglia
    sample round, exceeded the pack's imbalance threshold (``SimConfig.imbalance_threshold``) at least once.
    Knowable at the first round during the attempt where its host's ``load_one`` is at least ``HOST_ABOVE_MEAN``
    above that round's cluster mean and the round's std exceeds the threshold (else the first round during it whose
    std exceeds the threshold)."""

    KIND: ClassVar[str] = "unbalancing_reducer"
    MIN_CONTRIBUTION: ClassVar[float] = 8.0
    HOST_ABOVE_MEAN: ClassVar[float] = 10.0
    TEXT: ClassVar[str] = (
        f"a reduce attempt adding >= {MIN_CONTRIBUTION:g} to its host's run queue during which the std-dev of "
        f"load_one over the hosts exceeded the imbalance threshold ({{threshold:g}}) in at least one sample round"
    )


DEFINITIONS = (SkewedMapper, SkewedReducer, SlowPull, QueuedOutput, UnbalancingReducer)
KINDS = tuple(d.KIND for d in DEFINITIONS)


def texts(threshold: float) -> dict[str, str]:
    """Kind -> its one-line definition with the constants (and the run's imbalance threshold)."""
    return {d.KIND: d.TEXT.format(threshold=threshold) for d in DEFINITIONS}

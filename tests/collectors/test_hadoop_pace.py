"""A map attempt's ``pace`` (collectors/hadoop/jhist.py): its time per input byte over the median of the same among the
job's earlier successful maps on other hosts -- what shows a slow host across jobs (the SlowNode rule)."""

from __future__ import annotations

from collectors.hadoop.jhist import PACE_SIBLINGS, _JobState, _pace

MB = 1 << 20


def test_pace_is_per_byte_against_other_hosts() -> None:
    job = _JobState()
    # three maps elsewhere: 60 s for 256 MB, and a short last split of 64 MB in 15 s (the same pace)
    assert _pace(job, "a", 60.0, 256 * MB) is None
    assert _pace(job, "b", 15.0, 64 * MB) is None
    assert _pace(job, "c", 60.0, 256 * MB) is None
    assert PACE_SIBLINGS == 3
    # a short split that took as long per byte is at its usual pace; a whole block 3x slower per byte is at 3
    assert _pace(job, "d", 15.0, 64 * MB) == 1.0
    assert _pace(job, "e", 180.0, 256 * MB) == 3.0


def test_a_hosts_own_maps_do_not_set_its_yardstick() -> None:
    job = _JobState()
    for host in ("slow", "slow", "slow", "x", "y"):
        _pace(job, host, 120.0 if host == "slow" else 60.0, 256 * MB)
    assert _pace(job, "slow", 120.0, 256 * MB) is None  # only two maps elsewhere so far
    job = _JobState()
    for host in ("slow", "slow", "slow", "x", "y", "z"):
        _pace(job, host, 120.0 if host == "slow" else 60.0, 256 * MB)
    assert _pace(job, "slow", 120.0, 256 * MB) == 2.0  # against x, y, z only (with its own three it would be 1.0)


def test_unknown_input_gives_no_pace() -> None:
    job = _JobState()
    assert _pace(job, "a", 60.0, None) is None
    assert _pace(job, "a", 60.0, 0) is None
    assert _pace(job, "a", 0.0, 256 * MB) is None

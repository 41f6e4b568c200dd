"""Dr. Elephant's StatisticsTest.java and SeverityTest.java, case for case."""

from __future__ import annotations

import pytest

from benchmarks.peers.drelephant.severity import Severity, ascending, descending, severity_max, severity_min
from benchmarks.peers.drelephant.statistics import (
    JavaError,
    average,
    describe_factor,
    median,
    percentile,
    readable_timespan,
)


def test_average1() -> None:
    assert average([2, 4, 6, 8, 10]) == 6
    assert average([]) == 0


def test_average2() -> None:
    assert average(list([2, 4, 6, 8, 10])) == 6
    assert average(list()) == 0


def test_median1() -> None:
    with pytest.raises(JavaError, match="Median of an empty list is not defined."):
        median([])


def test_median2() -> None:
    values = [2, 4, 6, 8]
    assert median(values) == 5
    values.append(15)
    assert median(values) == 6


def test_describe_factor() -> None:
    assert describe_factor(0, 0, "test") == ""
    assert describe_factor(10, 2, "test") == "(5.00test)"


def test_readable_timespan() -> None:
    assert readable_timespan(0) == "0 sec"
    assert readable_timespan(1000) == "1 sec"
    assert readable_timespan(60000) == "1 min"
    assert readable_timespan(3600000) == "1 hr"


def test_percentile() -> None:
    finish_times = [i * 10 for i in range(1, 11)]
    assert percentile(finish_times, 100) == 100
    assert percentile(finish_times, 50) == 50
    assert percentile(finish_times, 0) == 0
    assert percentile(finish_times, 10) == 10
    assert percentile(finish_times, 4) == 10
    assert percentile([1, 2, 3, 4, 5], 50) == 3
    single = [10]
    assert percentile(single, 100) == 10
    assert percentile(single, 0) == 0
    assert percentile(single, 10) == 10
    assert percentile(single, 50) == 10


# SeverityTest.java


def test_severity_max() -> None:
    assert severity_max(Severity.CRITICAL) == Severity.CRITICAL
    assert severity_max(Severity.CRITICAL, Severity.SEVERE) == Severity.CRITICAL
    assert severity_max(Severity.LOW, Severity.LOW, Severity.CRITICAL) == Severity.CRITICAL


def test_severity_min() -> None:
    assert severity_min(Severity.NONE, Severity.LOW) == Severity.NONE
    assert severity_min(Severity.LOW, Severity.LOW) == Severity.LOW


def test_severity_ascending() -> None:
    assert ascending(8, 2, 4, 6, 8) == Severity.CRITICAL
    assert ascending(10, 2, 4, 6, 12) == Severity.SEVERE


def test_severity_descending() -> None:
    assert descending(2, 10, 8, 4, 2) == Severity.CRITICAL
    assert descending(5, 10, 8, 4, 2) == Severity.MODERATE

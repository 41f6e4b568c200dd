"""Task-runtime heuristics: ``MapperTimeHeuristic``, ``ReducerTimeHeuristic``, ``MapperSpeedHeuristic``,
``ShuffleSortHeuristic``."""

from __future__ import annotations

from benchmarks.peers.drelephant import data as D
from benchmarks.peers.drelephant.config import DISK_READ_SPEED, limits
from benchmarks.peers.drelephant.heuristic import Heuristic, HeuristicResult
from benchmarks.peers.drelephant.severity import (
    Severity,
    ascending4,
    descending4,
    heuristic_score,
    severity_max,
    severity_min,
)
from benchmarks.peers.drelephant.skew import _byte_count_display
from benchmarks.peers.drelephant.statistics import (
    MINUTE_IN_MS,
    average,
    describe_factor,
    ldiv,
    median,
    readable_timespan,
)


def _minutes(lim: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    return (lim[0] * MINUTE_IN_MS, lim[1] * MINUTE_IN_MS, lim[2] * MINUTE_IN_MS, lim[3] * MINUTE_IN_MS)


class _TimeHeuristic(Heuristic):
    """Mapper/Reducer Time: too short a mean runtime (with many tasks) or too long a one."""

    mappers = True

    def _severity(self, num_tasks: int, average_ms: int) -> Severity:
        short = _minutes(limits(self.params, "short_runtime_severity_in_min", (10, 4, 2, 1)))
        long_ = _minutes(limits(self.params, "long_runtime_severity_in_min", (15, 30, 60, 120)))
        num_tasks_limits = limits(self.params, "num_tasks_severity", (50, 101, 500, 1000))
        short_sev = severity_min(descending4(average_ms, short), ascending4(num_tasks, num_tasks_limits))
        long_sev = ascending4(average_ms, long_)
        return severity_max(short_sev, long_sev)


class MapperTimeHeuristic(_TimeHeuristic):
    """Mean map runtime; tasks with both time and counters count (the input size is reported beside)."""

    name = "Mapper Time"

    def apply(self, data: D.ApplicationData) -> HeuristicResult | None:
        if not data.succeeded:
            return None
        tasks = data.mappers
        present = [t for t in tasks if t.time_and_counter_present]
        input_bytes = [sum(t.counter(c) for c in D.INPUT_BYTES) for t in present]
        runtimes = [t.total_time_ms for t in present]
        average_size, average_ms = average(input_bytes), average(runtimes)
        severity = self._severity(len(tasks), average_ms)
        result = HeuristicResult(self.name, severity, heuristic_score(severity, len(tasks)))
        result.details["Number of tasks"] = str(len(tasks))
        result.details["Average task input size"] = _byte_count_display(average_size)
        result.details["Average task runtime"] = readable_timespan(average_ms)
        result.details["Max task runtime"] = readable_timespan(max(runtimes, default=0))
        result.details["Min task runtime"] = readable_timespan(min(runtimes, default=0))
        return result


class ReducerTimeHeuristic(_TimeHeuristic):
    """Mean reduce runtime; tasks with time data count."""

    name = "Reducer Time"

    def apply(self, data: D.ApplicationData) -> HeuristicResult | None:
        if not data.succeeded:
            return None
        tasks = data.reducers
        runtimes = [t.total_time_ms for t in tasks if t.time_present]
        average_ms = average(runtimes)
        severity = self._severity(len(tasks), average_ms)
        result = HeuristicResult(self.name, severity, heuristic_score(severity, len(tasks)))
        result.details["Number of tasks"] = str(len(tasks))
        result.details["Average task runtime"] = readable_timespan(average_ms)
        result.details["Max task runtime"] = readable_timespan(max(runtimes, default=0))
        result.details["Min task runtime"] = readable_timespan(min(runtimes, default=0))
        return result


class MapperSpeedHeuristic(Heuristic):
    """Median map read speed against the disk's 100 MiB/s, only where the median map runs long."""

    name = "Mapper Speed"

    def apply(self, data: D.ApplicationData) -> HeuristicResult | None:
        if not data.succeeded:
            return None
        disk = limits(self.params, "disk_speed_severity", (1 / 2, 1 / 4, 1 / 8, 1 / 32))
        disk_limits = (
            disk[0] * DISK_READ_SPEED,
            disk[1] * DISK_READ_SPEED,
            disk[2] * DISK_READ_SPEED,
            disk[3] * DISK_READ_SPEED,
        )
        runtime_limits = _minutes(limits(self.params, "runtime_severity_in_min", (5, 10, 15, 30)))
        tasks = data.mappers
        sizes: list[int] = []
        speeds: list[int] = []
        runtimes: list[int] = []
        total_input = 0
        for t in tasks:
            if t.time_and_counter_present:
                input_bytes = sum(t.counter(c) for c in D.INPUT_BYTES)
                runtime_ms = t.total_time_ms
                sizes.append(input_bytes)
                total_input += input_bytes
                runtimes.append(runtime_ms)
                speeds.append(ldiv(1000 * input_bytes, runtime_ms))  # bytes per second; 0 ms throws, as in Java
        if tasks:
            median_speed, median_size, median_runtime = median(speeds), median(sizes), median(runtimes)
        else:
            median_speed = median_size = median_runtime = 0
        severity = descending4(median_speed, disk_limits)
        severity = severity_min(severity, ascending4(median_runtime, runtime_limits))
        result = HeuristicResult(self.name, severity, heuristic_score(severity, len(tasks)))
        result.details["Number of tasks"] = str(len(tasks))
        result.details["Median task input size"] = _byte_count_display(median_size)
        result.details["Median task runtime"] = readable_timespan(median_runtime)
        result.details["Median task speed"] = _byte_count_display(median_speed) + "/s"
        result.details["Total input size in MB"] = repr(total_input * 1.0 / (1024 * 1024))
        return result


class ShuffleSortHeuristic(Heuristic):
    """Mean shuffle or sort time of the reducers, long in itself and against the reduce code's time."""

    name = "Shuffle & Sort"

    def apply(self, data: D.ApplicationData) -> HeuristicResult | None:
        if not data.succeeded:
            return None
        ratio_limits = limits(self.params, "runtime_ratio_severity", (1, 2, 4, 8))
        runtime_limits = _minutes(limits(self.params, "runtime_severity_in_min", (1, 5, 10, 30)))

        def shuffle_sort_severity(runtime_ms: int, codetime_ms: int) -> Severity:
            runtime_sev = ascending4(runtime_ms, runtime_limits)
            if codetime_ms <= 0:
                return runtime_sev
            return severity_min(runtime_sev, ascending4(ldiv(runtime_ms * 2, codetime_ms), ratio_limits))

        tasks = data.reducers
        timed = [t for t in tasks if t.time_present]
        avg_exec = average([t.code_execution_time_ms for t in timed])
        avg_shuffle = average([t.shuffle_time_ms for t in timed])
        avg_sort = average([t.sort_time_ms for t in timed])
        severity = severity_max(shuffle_sort_severity(avg_shuffle, avg_exec), shuffle_sort_severity(avg_sort, avg_exec))
        result = HeuristicResult(self.name, severity, heuristic_score(severity, len(tasks)))
        result.details["Number of tasks"] = str(len(tasks))
        result.details["Average code runtime"] = readable_timespan(avg_exec)
        result.details["Average shuffle time"] = (
            readable_timespan(avg_shuffle) + " " + describe_factor(avg_shuffle, avg_exec, "x")
        )
        result.details["Average sort time"] = (
            readable_timespan(avg_sort) + " " + describe_factor(avg_sort, avg_exec, "x")
        )
        return result

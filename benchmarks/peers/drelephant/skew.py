"""``GenericSkewHeuristic`` with ``MapperSkewHeuristic`` (input: HDFS/S3/S3A/S3N bytes read) and
``ReducerSkewHeuristic`` (input: REDUCE_SHUFFLE_BYTES): two groups by ``findTwoGroups``, on data and on time."""

from __future__ import annotations

from benchmarks.peers.drelephant import data as D
from benchmarks.peers.drelephant.config import limits
from benchmarks.peers.drelephant.heuristic import Heuristic, HeuristicResult
from benchmarks.peers.drelephant.severity import Severity, ascending4, heuristic_score, severity_max, severity_min
from benchmarks.peers.drelephant.statistics import average, find_two_groups, ldiv


def _byte_count_display(size: int) -> str:
    """commons-io ``FileUtils.byteCountToDisplaySize``: whole units, truncated."""
    for unit, power in (("EB", 6), ("PB", 5), ("TB", 4), ("GB", 3), ("MB", 2), ("KB", 1)):
        if size // 1024**power > 0:
            return f"{size // 1024**power} {unit}"
    return f"{size} bytes"


def _hhmmss(ms: int) -> str:
    """``convertTimeMs``: msec below a second, else HH:mm:ss."""
    if ms < 1000:
        return f"{ms} msec"
    s = ms // 1000
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d} HH:MM:SS"


class GenericSkewHeuristic(Heuristic):
    """Skew between two groups of a phase's tasks, on input bytes and on runtime."""

    counter_names: tuple[str, ...] = ()

    def _tasks(self, data: D.ApplicationData) -> list[D.TaskData]:
        raise NotImplementedError

    def apply(self, data: D.ApplicationData) -> HeuristicResult | None:
        if not data.succeeded:
            return None
        num_tasks_limits = limits(self.params, "num_tasks_severity", (10, 50, 100, 200))
        deviation_limits = limits(self.params, "deviation_severity", (2, 4, 8, 16))
        files = limits(self.params, "files_severity", (1 / 8, 1 / 4, 1 / 2, 1))
        files_limits = (
            files[0] * self.hdfs_block_size,
            files[1] * self.hdfs_block_size,
            files[2] * self.hdfs_block_size,
            files[3] * self.hdfs_block_size,
        )

        def deviation_severity(average_min: int, average_diff: int) -> Severity:
            if average_min <= 0:
                average_min = 1
            return ascending4(ldiv(average_diff, average_min), deviation_limits)

        tasks = self._tasks(data)
        time_taken = [t.total_time_ms for t in tasks if t.time_present]
        groups_time = find_two_groups(time_taken)
        time_avg1, time_avg2 = average(groups_time[0]), average(groups_time[1])
        time_avg_sec1, time_avg_sec2 = ldiv(time_avg1, 1000), ldiv(time_avg2, 1000)
        min_time = min(time_avg_sec1, time_avg_sec2)
        diff_time = abs(time_avg_sec1 - time_avg_sec2)
        severity_time = deviation_severity(min_time, diff_time)
        severity_time = severity_min(severity_time, ascending4(len(groups_time[0]), num_tasks_limits))

        input_bytes = [sum(t.counter(c) for c in self.counter_names) for t in tasks if t.counter_present]
        groups = find_two_groups(input_bytes)
        avg1, avg2 = average(groups[0]), average(groups[1])
        severity_data = deviation_severity(min(avg1, avg2), abs(avg2 - avg1))
        severity_data = severity_min(severity_data, ascending4(avg2, files_limits))
        severity_data = severity_min(severity_data, ascending4(len(groups[0]), num_tasks_limits))

        severity = severity_max(severity_data, severity_time)
        result = HeuristicResult(self.name, severity, heuristic_score(severity_data, len(tasks)))
        result.details["Data skew (Number of tasks)"] = str(len(tasks))
        result.details["Data skew (Group A)"] = f"{len(groups[0])} tasks @ {_byte_count_display(avg1)} avg"
        result.details["Data skew (Group B)"] = f"{len(groups[1])} tasks @ {_byte_count_display(avg2)} avg"
        result.details["Time skew (Number of tasks)"] = str(len(tasks))
        result.details["Time skew (Group A)"] = f"{len(groups_time[0])} tasks @ {_hhmmss(time_avg1)} avg"
        result.details["Time skew (Group B)"] = f"{len(groups_time[1])} tasks @ {_hhmmss(time_avg2)} avg"
        return result


class MapperSkewHeuristic(GenericSkewHeuristic):
    """Skew among the mappers, on bytes read from HDFS/S3."""

    name = "Mapper Skew"
    counter_names = D.INPUT_BYTES

    def _tasks(self, data: D.ApplicationData) -> list[D.TaskData]:
        return data.mappers


class ReducerSkewHeuristic(GenericSkewHeuristic):
    """Skew among the reducers, on shuffled bytes."""

    name = "Reducer Skew"
    counter_names = (D.REDUCE_SHUFFLE_BYTES,)

    def _tasks(self, data: D.ApplicationData) -> list[D.TaskData]:
        return data.reducers

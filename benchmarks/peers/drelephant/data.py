"""The data Dr. Elephant's heuristics read: ``MapReduceCounterData``, ``MapReduceTaskData``,
``MapReduceApplicationData`` (mapreduce/data/*.java), with the same defaults and lookups."""

from __future__ import annotations

from dataclasses import dataclass, field

# CounterName -> the counter's name in Hadoop's history (MapReduceCounterData.CounterName's _name)
HDFS_BYTES_READ = "HDFS_BYTES_READ"
S3_BYTES_READ = "S3_BYTES_READ"
S3A_BYTES_READ = "S3A_BYTES_READ"
S3N_BYTES_READ = "S3N_BYTES_READ"
FILE_BYTES_READ = "FILE_BYTES_READ"
MAP_OUTPUT_RECORDS = "MAP_OUTPUT_RECORDS"
MAP_OUTPUT_BYTES = "MAP_OUTPUT_BYTES"
REDUCE_SHUFFLE_BYTES = "REDUCE_SHUFFLE_BYTES"
SPILLED_RECORDS = "SPILLED_RECORDS"
CPU_MILLISECONDS = "CPU_MILLISECONDS"
GC_MILLISECONDS = "GC_TIME_MILLIS"
COMMITTED_HEAP_BYTES = "COMMITTED_HEAP_BYTES"
PHYSICAL_MEMORY_BYTES = "PHYSICAL_MEMORY_BYTES"
VIRTUAL_MEMORY_BYTES = "VIRTUAL_MEMORY_BYTES"

# the group each CounterName belongs to, for ``CounterData.set_named`` (as ``set(CounterName, long)`` does)
_GROUP_OF = {
    HDFS_BYTES_READ: "FileSystemCounters",
    S3_BYTES_READ: "FileSystemCounters",
    S3A_BYTES_READ: "FileSystemCounters",
    S3N_BYTES_READ: "FileSystemCounters",
    FILE_BYTES_READ: "FileSystemCounters",
}

INPUT_BYTES = (HDFS_BYTES_READ, S3_BYTES_READ, S3A_BYTES_READ, S3N_BYTES_READ)


@dataclass
class CounterData:
    """Counters by group; ``get`` finds a name in any group (Hadoop 1 and 2 group names differ), 0 if absent."""

    groups: dict[str, dict[str, int]] = field(default_factory=dict)

    def get(self, name: str) -> int:
        for counters in self.groups.values():
            if name in counters:
                return counters[name]
        return 0

    def set(self, group: str, name: str, value: int) -> None:
        self.groups.setdefault(group, {})[name] = value

    def set_named(self, name: str, value: int) -> None:
        """``set(CounterName, value)``: into the CounterName's own group."""
        self.set(_GROUP_OF.get(name, "MapReduce"), name, value)


@dataclass
class TaskData:
    """One task as the fetcher keeps it: its chosen attempt's times and the task's counters."""

    task_id: str
    attempt_id: str = ""
    state: str = "SUCCEEDED"
    counters: CounterData | None = None
    total_time_ms: int = 0
    shuffle_time_ms: int = 0
    sort_time_ms: int = 0
    start_time_ms: int = 0
    finish_time_ms: int = 0
    time_present: bool = False

    def set_time_and_counter(self, time: list[int] | None, counters: CounterData | None) -> None:
        """``setTimeAndCounter``: time = [total, shuffle, sort, start, finish]."""
        if time is not None:
            self.total_time_ms, self.shuffle_time_ms, self.sort_time_ms = time[0], time[1], time[2]
            self.start_time_ms, self.finish_time_ms = time[3], time[4]
            self.time_present = True
        if counters is not None:
            self.counters = counters

    def set_total_time(self, total_ms: int, present: bool) -> None:
        """``setTotalTimeMs``."""
        self.total_time_ms = total_ms
        self.time_present = present

    @property
    def counter_present(self) -> bool:
        return self.counters is not None

    @property
    def time_and_counter_present(self) -> bool:
        return self.time_present and self.counters is not None

    def counter(self, name: str) -> int:
        """``getCounters().get(name)`` (callers check ``counter_present`` first, as the Java does)."""
        assert self.counters is not None
        return self.counters.get(name)

    @property
    def code_execution_time_ms(self) -> int:
        return self.total_time_ms - self.shuffle_time_ms - self.sort_time_ms


@dataclass
class ApplicationData:
    """``MapReduceApplicationData``: succeeded by default, as in Java."""

    app_id: str = ""
    job_id: str = ""
    succeeded: bool = True
    diagnostic_info: str = ""
    conf: dict[str, str] = field(default_factory=dict)
    counters: CounterData = field(default_factory=CounterData)
    mappers: list[TaskData] = field(default_factory=list)
    reducers: list[TaskData] = field(default_factory=list)
    submit_time_ms: int = 0
    start_time_ms: int = 0
    finish_time_ms: int = 0

    def is_empty(self) -> bool:
        """A succeeded job with no task: Dr. Elephant stores NO_DATA and runs no heuristic."""
        return self.succeeded and not self.mappers and not self.reducers

"""Resource heuristics: ``GenericGCHeuristic`` (Mapper/Reducer GC), ``MapperSpillHeuristic``,
``GenericMemoryHeuristic`` (Mapper/Reducer Memory) and ``ExceptionHeuristic`` (a failed job)."""

from __future__ import annotations

import math
import re

from benchmarks.peers.drelephant import data as D
from benchmarks.peers.drelephant.config import limits
from benchmarks.peers.drelephant.heuristic import Heuristic, HeuristicResult
from benchmarks.peers.drelephant.severity import Severity, ascending4, descending4, heuristic_score, severity_min
from benchmarks.peers.drelephant.skew import _byte_count_display
from benchmarks.peers.drelephant.statistics import MINUTE_IN_MS, average, ldiv, readable_timespan, to_long

ONE_MB = 1024 * 1024
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")


def _java_ratio(num: float, den: float) -> float:
    """Java's double ``num / den``: x/0 is +-Infinity, 0/0 NaN."""
    if den == 0:
        if num == 0:
            return math.nan
        return math.inf if num > 0 else -math.inf
    return num / den


def _parse_long(text: str | None) -> int | None:
    """``Long.parseLong``: digits with an optional sign, nothing else."""
    if text is None or not _JAVA_LONG.fullmatch(text):
        return None
    return int(text)


class _GCHeuristic(Heuristic):
    """GC time over CPU time of a phase's tasks, only where they run long."""

    def _tasks(self, data: D.ApplicationData) -> list[D.TaskData]:
        raise NotImplementedError

    def apply(self, data: D.ApplicationData) -> HeuristicResult | None:
        if not data.succeeded:
            return None
        ratio_limits = limits(self.params, "gc_ratio_severity", (0.01, 0.02, 0.03, 0.04))
        rt = limits(self.params, "runtime_severity_in_min", (5, 10, 12, 15))
        runtime_limits = (rt[0] * MINUTE_IN_MS, rt[1] * MINUTE_IN_MS, rt[2] * MINUTE_IN_MS, rt[3] * MINUTE_IN_MS)
        tasks = self._tasks(data)
        present = [t for t in tasks if t.time_and_counter_present]
        avg_runtime = average([t.total_time_ms for t in present])
        avg_cpu = average([t.counter(D.CPU_MILLISECONDS) for t in present])
        avg_gc = average([t.counter(D.GC_MILLISECONDS) for t in present])
        ratio = avg_gc * 1.0 / avg_cpu if avg_cpu != 0 else 0.0
        if not tasks:
            severity = Severity.NONE
        else:
            gc_ratio = _java_ratio(float(avg_gc), float(avg_cpu))
            severity = severity_min(ascending4(gc_ratio, ratio_limits), ascending4(avg_runtime, runtime_limits))
        result = HeuristicResult(self.name, severity, heuristic_score(severity, len(tasks)))
        result.details["Number of tasks"] = str(len(tasks))
        result.details["Avg task runtime (ms)"] = str(avg_runtime)
        result.details["Avg task CPU time (ms)"] = str(avg_cpu)
        result.details["Avg task GC time (ms)"] = str(avg_gc)
        result.details["Task GC/CPU ratio"] = repr(ratio)
        return result


class MapperGCHeuristic(_GCHeuristic):
    """GC of the mappers."""

    name = "Mapper GC"

    def _tasks(self, data: D.ApplicationData) -> list[D.TaskData]:
        return data.mappers


class ReducerGCHeuristic(_GCHeuristic):
    """GC of the reducers."""

    name = "Reducer GC"

    def _tasks(self, data: D.ApplicationData) -> list[D.TaskData]:
        return data.reducers


THRESHOLD_SPILL_FACTOR = 10000


class MapperSpillHeuristic(Heuristic):
    """Spilled records over map output records, summed over the mappers, where there are many mappers."""

    name = "Mapper Spill"

    def apply(self, data: D.ApplicationData) -> HeuristicResult | None:
        if not data.succeeded:
            return None
        num_tasks_limits = limits(self.params, "num_tasks_severity", (50, 100, 500, 1000))
        sp = limits(self.params, "spill_severity", (2.01, 2.2, 2.5, 3.0))
        f = THRESHOLD_SPILL_FACTOR
        spill_limits = (sp[0] * f, sp[1] * f, sp[2] * f, sp[3] * f)
        tasks = data.mappers
        total_spills = sum(t.counter(D.SPILLED_RECORDS) for t in tasks if t.counter_present)
        total_output = sum(t.counter(D.MAP_OUTPUT_RECORDS) for t in tasks if t.counter_present)
        ratio = 0.0 if total_spills == 0 else _java_ratio(float(total_spills), float(total_output))
        severity = ascending4(to_long(ratio * THRESHOLD_SPILL_FACTOR), spill_limits)
        severity = severity_min(severity, ascending4(len(tasks), num_tasks_limits))
        result = HeuristicResult(self.name, severity, heuristic_score(severity, len(tasks)))
        result.details["Number of tasks"] = str(len(tasks))
        result.details["Avg spilled records per task"] = str(ldiv(total_spills, len(tasks))) if tasks else "0"
        result.details["Avg output records per task"] = str(ldiv(total_output, len(tasks))) if tasks else "0"
        result.details["Ratio of spilled records to output records"] = repr(ratio)
        return result


class _MemoryHeuristic(Heuristic):
    """Mean physical memory of a phase's tasks against a large requested container."""

    container_conf = ""

    def _tasks(self, data: D.ApplicationData) -> list[D.TaskData]:
        raise NotImplementedError

    def _default_mb(self) -> int:
        parsed = _parse_long(self.params.get("container_memory_default_mb"))
        return 2048 if parsed is None else parsed

    def _container_mb(self, conf: dict[str, str]) -> int:
        text = conf.get(self.container_conf)
        mem: int | None = None
        if text is not None:
            mem = _parse_long(text)
            if mem is None and text.startswith("$") and "{" in text and "}" in text:
                mem = _parse_long(conf.get(text[text.index("{") + 1 : text.index("}")]))
        return self._default_mb() if mem is None or mem < 0 else mem

    def apply(self, data: D.ApplicationData) -> HeuristicResult | None:
        if not data.succeeded:
            return None
        ratio_limits = limits(self.params, "memory_ratio_severity", (0.6, 0.5, 0.4, 0.3))
        default_bytes = self._default_mb() * ONE_MB
        ml = limits(self.params, "container_memory_severity", (1.1, 1.5, 2.0, 2.5))
        memory_limits = (ml[0] * default_bytes, ml[1] * default_bytes, ml[2] * default_bytes, ml[3] * default_bytes)
        container_mem = self._container_mb(data.conf) * ONE_MB
        tasks = self._tasks(data)
        present = [t for t in tasks if t.time_and_counter_present]
        pmems = [t.counter(D.PHYSICAL_MEMORY_BYTES) for t in present]
        vmems = [t.counter(D.VIRTUAL_MEMORY_BYTES) for t in present]
        pmem_avg, vmem_avg = average(pmems), average(vmems)
        avg_ms = average([t.total_time_ms for t in present])
        if not tasks:
            severity = Severity.NONE
        else:
            ratio = _java_ratio(float(pmem_avg), float(container_mem))
            severity = severity_min(descending4(ratio, ratio_limits), ascending4(container_mem, memory_limits))
        result = HeuristicResult(self.name, severity, heuristic_score(severity, len(tasks)))
        result.details["Number of tasks"] = str(len(tasks))
        result.details["Avg task runtime"] = readable_timespan(avg_ms)
        result.details["Avg Physical Memory (MB)"] = str(ldiv(pmem_avg, ONE_MB))
        result.details["Max Physical Memory (MB)"] = str(ldiv(max(pmems, default=0), ONE_MB))
        result.details["Min Physical Memory (MB)"] = str(ldiv(min(pmems, default=0), ONE_MB))
        result.details["Avg Virtual Memory (MB)"] = str(ldiv(vmem_avg, ONE_MB))
        result.details["Requested Container Memory"] = _byte_count_display(container_mem)
        return result


class MapperMemoryHeuristic(_MemoryHeuristic):
    """Memory of the mappers against ``mapreduce.map.memory.mb``."""

    name = "Mapper Memory"
    container_conf = "mapreduce.map.memory.mb"

    def _tasks(self, data: D.ApplicationData) -> list[D.TaskData]:
        return data.mappers


class ReducerMemoryHeuristic(_MemoryHeuristic):
    """Memory of the reducers against ``mapreduce.reduce.memory.mb``."""

    name = "Reducer Memory"
    container_conf = "mapreduce.reduce.memory.mb"

    def _tasks(self, data: D.ApplicationData) -> list[D.TaskData]:
        return data.reducers


class ExceptionHeuristic(Heuristic):
    """A job that did not succeed: MODERATE, with its diagnostics."""

    name = "Exception"

    def apply(self, data: D.ApplicationData) -> HeuristicResult | None:
        if data.succeeded:
            return None
        result = HeuristicResult(self.name, Severity.MODERATE, 0)
        if data.diagnostic_info is not None:
            result.details["Error"] = data.diagnostic_info
        else:
            result.details["Error"] = (
                "Unable to find stacktrace info. Please find the real problem in the Jobhistory link above."
                "Exception can happen either in task log or Application Master log."
            )
        return result

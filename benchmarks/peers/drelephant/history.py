"""Dr. Elephant over a directory of job history files: ``MapReduceFSFetcherHadoop2`` then every heuristic.

``analyze_history(hadoop_dir)`` finds every ``*.jhist`` below ``hadoop_dir`` (the done and done_intermediate trees),
reads each as the fetcher does (the 500 MB size limit, sampling off as FetcherConf.xml ships, per task the
successful attempt's start/finish/shuffle-finish/sort-finish times or the failed-due-to attempt's, the task's own
counters) and returns one dict per (job, heuristic). A job whose analysis throws in Java (unparseable file, a job
neither SUCCEEDED nor FAILED, a heuristic's exception) gets no result, as in Dr. Elephant, and is counted in
``HistoryScan.errors`` / ``skipped``.

Deviation: Dr. Elephant also requires the job's ``*_conf.xml``; a missing one is read as an empty configuration here
(the simulator writes none), which only the Memory heuristics read (they then use their 2048 MB default).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.peers.drelephant.analysis import SPEC9_HEURISTICS, analyze, build_heuristics
from benchmarks.peers.drelephant.config import HDFS_BLOCK_SIZE_DEFAULT
from benchmarks.peers.drelephant.data import ApplicationData, CounterData, TaskData
from benchmarks.peers.drelephant.jhist import AttemptInfo, JhistError, JobInfo, TaskInfo, parse_jhist_text
from benchmarks.peers.drelephant.statistics import JavaError

MAX_LOG_SIZE_MB = 500.0
"""``history_log_size_limit_in_mb`` in FetcherConf.xml (and the fetcher's default)."""
ONE_MB = 1024 * 1024
SEVERITY_NAMES = ("NONE", "LOW", "MODERATE", "SEVERE", "CRITICAL")


@dataclass
class HistoryScan:
    """What one pass over a history tree found: results, and jobs without an analysis with the reason."""

    results: list[dict[str, Any]] = field(default_factory=list)
    jobs: int = 0
    analyzed: int = 0
    errors: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _task_exec_time(att: AttemptInfo, is_map: bool) -> list[int]:
    """``getTaskExecTime``: [total, shuffle, sort, start, finish] of one attempt."""
    start, finish = att.start_time, att.finish_time
    if is_map:
        return [finish - start, 0, 0, start, finish]
    shuffle, sort = att.shuffle_finish_time, att.sort_finish_time
    return [finish - start, shuffle - start, sort - shuffle, start, finish]


def task_data(info: TaskInfo) -> TaskData:
    """``getTaskData`` for one task: the successful attempt of a succeeded task, else the one it failed by."""
    if info.status is None:
        raise JavaError(f"NullPointerException: task {info.task_id} has no status")
    attempt_id = info.successful_attempt_id if info.status == "SUCCEEDED" else info.failed_due_to_attempt_id
    task = TaskData(info.task_id, attempt_id or "", info.status)
    time = None
    if attempt_id is not None:
        att = info.attempts.get(attempt_id)
        if att is None:
            raise JavaError(f"NullPointerException: attempt {attempt_id} of {info.task_id} never started")
        time = _task_exec_time(att, info.task_type == "MAP")
    task.set_time_and_counter(time, info.counters if info.counters is not None else CounterData())
    return task


def read_conf(path: str | None) -> dict[str, str]:
    """A job's ``*_conf.xml`` as name -> value (empty when there is none)."""
    if path is None:
        return {}
    root = ET.parse(path).getroot()
    conf: dict[str, str] = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name is not None:
            conf[name] = value or ""
    return conf


def application_data(job: JobInfo, conf: dict[str, str]) -> ApplicationData:
    """``fetchData`` after parsing: the job's state, counters and its mappers and reducers."""
    data = ApplicationData(job_id=job.job_id, app_id=job.job_id.replace("job_", "application_", 1), conf=conf)
    data.submit_time_ms, data.start_time_ms, data.finish_time_ms = job.submit_time, job.launch_time, job.finish_time
    if job.job_status == "SUCCEEDED":
        data.succeeded = True
    elif job.job_status == "FAILED":
        data.succeeded = False
        data.diagnostic_info = job.error_info
    else:
        raise JavaError(f"RuntimeException: job neither succeeded or failed ({job.job_status})")
    data.counters = job.total_counters if job.total_counters is not None else CounterData()
    for info in job.tasks.values():
        (data.mappers if info.task_type == "MAP" else data.reducers).append(task_data(info))
    return data


def fetch(jhist_path: str, conf_path: str | None = None) -> ApplicationData:
    """One job's data from its history file, as ``MapReduceFSFetcherHadoop2.fetchData`` builds it."""
    conf = read_conf(conf_path)
    if os.path.getsize(jhist_path) > MAX_LOG_SIZE_MB * ONE_MB:
        job_id = os.path.basename(jhist_path).split("-")[0]
        return ApplicationData(
            job_id=job_id,
            succeeded=False,
            conf=conf,
            diagnostic_info=f"The history log of MapReduce application: {job_id} is over the limit size of "
            f"{MAX_LOG_SIZE_MB} MB, the parsing process gets throttled.",
        )
    with open(jhist_path, encoding="utf-8", errors="strict") as fh:
        text = fh.read()
    return application_data(parse_jhist_text(text, jhist_path), conf)


def find_history(hadoop_dir: str) -> list[tuple[str, str | None]]:
    """Every job's (history file, conf file or None) below ``hadoop_dir``; one per job id, done before
    done_intermediate."""
    found: dict[str, tuple[str, str | None]] = {}
    for root, dirs, files in sorted(os.walk(hadoop_dir)):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".jhist"):
                continue
            job_id = name.split("-")[0].removesuffix(".jhist")
            conf = next((os.path.join(root, n) for n in files if job_id in n and n.endswith("_conf.xml")), None)
            path = os.path.join(root, name)
            if job_id not in found or "intermediate" in found[job_id][0]:
                found[job_id] = (path, conf)
    return [found[j] for j in sorted(found)]


def scan_history(
    hadoop_dir: str, *, heuristics: Iterable[str] | None = None, hdfs_block_size: int = HDFS_BLOCK_SIZE_DEFAULT
) -> HistoryScan:
    """Dr. Elephant's analysis of every job below ``hadoop_dir``, with the jobs it could not analyze."""
    hs = build_heuristics(heuristics, hdfs_block_size=hdfs_block_size)
    scan = HistoryScan()
    for jhist_path, conf_path in find_history(hadoop_dir):
        scan.jobs += 1
        try:
            data = fetch(jhist_path, conf_path)
            results = analyze(data, hs)
        except (JhistError, OSError, UnicodeDecodeError, ET.ParseError) as exc:
            scan.errors.append(f"{jhist_path}: {exc}")
            continue
        except JavaError as exc:
            scan.skipped.append(f"{jhist_path}: {exc}")
            continue
        scan.analyzed += 1
        for r in results:
            scan.results.append(
                {
                    "job_id": data.job_id,
                    "heuristic": r.heuristic,
                    "severity": SEVERITY_NAMES[int(r.severity)],
                    "score": r.score,
                    "finished": data.finish_time_ms / 1000.0,
                    "submitted": data.submit_time_ms / 1000.0,
                    "details": dict(r.details),
                }
            )
    return scan


def analyze_history(
    hadoop_dir: str,
    heuristics: Iterable[str] | None = SPEC9_HEURISTICS,
    *,
    hdfs_block_size: int = HDFS_BLOCK_SIZE_DEFAULT,
) -> list[dict[str, Any]]:
    """One dict per (job, heuristic) for every job history file below ``hadoop_dir``:
    ``{"job_id", "heuristic", "severity", "score", "finished", "submitted", "details"}``, times in epoch seconds.

    By default the heuristics docs/semantics.md section 9 scores (``SPEC9_HEURISTICS``); ``heuristics=None``
    runs every ported one (adds Mapper/Reducer Memory and Exception, which flags every FAILED job MODERATE)."""
    return scan_history(hadoop_dir, heuristics=heuristics, hdfs_block_size=hdfs_block_size).results

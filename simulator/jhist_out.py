"""Write a job's history file exactly as Hadoop's ``EventWriter`` does in JSON mode.

``Avro-Json``, the ``Event`` schema on one line (Hadoop 2.6+'s, ``data/Event.avsc``), then each event in Avro's JSON
encoding -- unions as ``{"<full record name>": {...}}`` / ``{"string": "..."}`` -- the first right after the schema and
each later one preceded by an empty line, in the order the AM logged them.  Counter groups and names are Hadoop's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from simulator.jobs import Attempt, Job
from simulator.layout import jhist_path, ms, write_text
from simulator.swim import DATA

NS = "org.apache.hadoop.mapreduce.jobhistory."
SCHEMA = (DATA / "Event.avsc").read_text(encoding="utf-8").strip()

_FS = (
    ("org.apache.hadoop.mapreduce.FileSystemCounter", "File System Counters"),
    (
        ("FILE_BYTES_READ", "FILE: Number of bytes read"),
        ("FILE_BYTES_WRITTEN", "FILE: Number of bytes written"),
        ("FILE_READ_OPS", "FILE: Number of read operations"),
        ("FILE_LARGE_READ_OPS", "FILE: Number of large read operations"),
        ("FILE_WRITE_OPS", "FILE: Number of write operations"),
        ("HDFS_BYTES_READ", "HDFS: Number of bytes read"),
        ("HDFS_BYTES_WRITTEN", "HDFS: Number of bytes written"),
        ("HDFS_READ_OPS", "HDFS: Number of read operations"),
        ("HDFS_LARGE_READ_OPS", "HDFS: Number of large read operations"),
        ("HDFS_WRITE_OPS", "HDFS: Number of write operations"),
    ),
)
_MAP_TASK = (
    ("org.apache.hadoop.mapreduce.TaskCounter", "Map-Reduce Framework"),
    (
        ("MAP_INPUT_RECORDS", "Map input records"),
        ("MAP_OUTPUT_RECORDS", "Map output records"),
        ("MAP_OUTPUT_BYTES", "Map output bytes"),
        ("MAP_OUTPUT_MATERIALIZED_BYTES", "Map output materialized bytes"),
        ("SPLIT_RAW_BYTES", "Input split bytes"),
        ("COMBINE_INPUT_RECORDS", "Combine input records"),
        ("SPILLED_RECORDS", "Spilled Records"),
        ("FAILED_SHUFFLE", "Failed Shuffles"),
        ("MERGED_MAP_OUTPUTS", "Merged Map outputs"),
        ("GC_TIME_MILLIS", "GC time elapsed (ms)"),
        ("CPU_MILLISECONDS", "CPU time spent (ms)"),
        ("PHYSICAL_MEMORY_BYTES", "Physical memory (bytes) snapshot"),
        ("VIRTUAL_MEMORY_BYTES", "Virtual memory (bytes) snapshot"),
        ("COMMITTED_HEAP_BYTES", "Total committed heap usage (bytes)"),
    ),
)
_INPUT = (
    ("org.apache.hadoop.mapreduce.lib.input.FileInputFormatCounter", "File Input Format Counters "),
    (("BYTES_READ", "Bytes Read"),),
)
_REDUCE_TASK = (
    ("org.apache.hadoop.mapreduce.TaskCounter", "Map-Reduce Framework"),
    (
        ("COMBINE_INPUT_RECORDS", "Combine input records"),
        ("REDUCE_INPUT_GROUPS", "Reduce input groups"),
        ("REDUCE_SHUFFLE_BYTES", "Reduce shuffle bytes"),
        ("REDUCE_INPUT_RECORDS", "Reduce input records"),
        ("REDUCE_OUTPUT_RECORDS", "Reduce output records"),
        ("SPILLED_RECORDS", "Spilled Records"),
        ("SHUFFLED_MAPS", "Shuffled Maps "),
        ("FAILED_SHUFFLE", "Failed Shuffles"),
        ("MERGED_MAP_OUTPUTS", "Merged Map outputs"),
        ("GC_TIME_MILLIS", "GC time elapsed (ms)"),
        ("CPU_MILLISECONDS", "CPU time spent (ms)"),
        ("PHYSICAL_MEMORY_BYTES", "Physical memory (bytes) snapshot"),
        ("VIRTUAL_MEMORY_BYTES", "Virtual memory (bytes) snapshot"),
        ("COMMITTED_HEAP_BYTES", "Total committed heap usage (bytes)"),
    ),
)
_SHUFFLE_ERRORS = (
    ("Shuffle Errors", "Shuffle Errors"),
    tuple((n, n) for n in ("BAD_ID", "CONNECTION", "IO_ERROR", "WRONG_LENGTH", "WRONG_MAP", "WRONG_REDUCE")),
)
_OUTPUT = (
    ("org.apache.hadoop.mapreduce.lib.output.FileOutputFormatCounter", "File Output Format Counters "),
    (("BYTES_WRITTEN", "Bytes Written"),),
)
_JOB = (
    ("org.apache.hadoop.mapreduce.JobCounter", "Job Counters "),
    (
        ("FAILED_MAPS", "Failed map tasks"),
        ("KILLED_MAPS", "Killed map tasks"),
        ("TOTAL_LAUNCHED_MAPS", "Launched map tasks"),
        ("TOTAL_LAUNCHED_REDUCES", "Launched reduce tasks"),
        ("OTHER_LOCAL_MAPS", "Other local map tasks"),
        ("MILLIS_MAPS", "Total time spent by all map tasks (ms)"),
        ("MILLIS_REDUCES", "Total time spent by all reduce tasks (ms)"),
    ),
)


def _group_template(spec: tuple[tuple[str, str], tuple[tuple[str, str], ...]]) -> list[str]:
    (gname, gdisplay), counters = spec

    def opening(name: str, display: str) -> str:  # '{"name":..,"displayName":..' without the closing brace
        return json.dumps({"name": name, "displayName": display}, separators=(",", ":"))[:-1]

    parts = [opening(gname, gdisplay) + ',"counts":[']
    for i, (name, display) in enumerate(counters):
        parts.append(("," if i else "") + opening(name, display) + ',"value":')
    return parts


_TEMPLATES = {
    id(spec): _group_template(spec) for spec in (_FS, _MAP_TASK, _INPUT, _REDUCE_TASK, _SHUFFLE_ERRORS, _OUTPUT, _JOB)
}


def _group(spec: tuple[Any, ...], values: Sequence[int]) -> str:
    parts = _TEMPLATES[id(spec)]
    out = [parts[0]]
    for frag, value in zip(parts[1:], values, strict=True):
        out.append(frag)
        out.append(str(value))
        out.append("}")
    out.append("]}")
    return "".join(out)


def counters(name: str, groups: Sequence[str]) -> str:
    return '{"name":"' + name + '","groups":[' + ",".join(groups) + "]}"


def _event(etype: str, record: str, body: str) -> str:
    return '{"type":"' + etype + '","event":{"' + NS + record + '":{' + body + "}}}"


def _s(value: str) -> str:
    return json.dumps(value)


_SPLITS = '"clockSplits":[{0}],"cpuUsages":[{1}],"vMemKbytes":[{2}],"physMemKbytes":[{3}]'


def _progress_splits(duration_ms: int, cpu_ms: int) -> str:
    step = max(duration_ms // 12, 1)
    clock = ",".join(str(step) for _ in range(12))
    cpu = ",".join(str(max(cpu_ms // 12, 1)) for _ in range(12))
    vmem = ",".join(str(171_000 * (k + 1)) for k in range(12))
    pmem = ",".join(str(24_000 * (k + 1)) for k in range(12))
    return _SPLITS.format(clock, cpu, vmem, pmem)


class JhistWriter:
    def __init__(self, root: str, hosts: list[str]) -> None:
        self.root = root
        self.hosts = hosts

    # -- per-attempt counters -------------------------------------------------------------------------------------
    def map_counters(self, job: Job, att: Attempt) -> str:
        split = job.split_bytes(att.task)
        out = job.map_out[att.task]
        materialized = job.materialized(att.task) if job.reduces else 0
        records_in = job.input_records(att.task)
        records_out = out // 64 + (1 if out else 0)
        cpu = int((att.end - att.start) * 700)
        spilled = records_out if job.reduces else 0
        # Map output goes to local disk for the shuffle, or straight to HDFS in a map-only job.
        local_written = 118_000 + materialized
        hdfs_written, hdfs_writes = (0, 0) if job.reduces else (out, 2)
        fs = _group(_FS, (0, local_written, 0, 0, 0, split + 124, hdfs_written, 3, 0, hdfs_writes))
        task = _group(
            _MAP_TASK,
            (
                records_in,
                records_out,
                out,
                materialized,
                124,
                0,
                spilled,
                0,
                0,
                cpu // 40,
                cpu,
                301_989_888,
                2_102_390_784,
                284_164_096,
            ),
        )
        return counters("COUNTERS", [fs, task, _group(_INPUT, (split,))])

    def reduce_counters(self, job: Job, att: Attempt) -> str:
        shuffle = att.shuffle_bytes
        out = job.output_bytes // max(job.reduces, 1)
        groups_in = shuffle // 640 + 1
        cpu = int((att.end - att.start) * 650)
        fs = _group(_FS, (shuffle, shuffle + 150_000, 0, 0, 0, 0, out, 0, 0, 2))
        task = _group(
            _REDUCE_TASK,
            (
                0,
                groups_in,
                shuffle,
                groups_in * 3,
                groups_in,
                groups_in * 3,
                att.pulls,
                0,
                att.pulls,
                cpu // 40,
                cpu,
                402_653_184,
                2_112_876_544,
                388_497_408,
            ),
        )
        return counters("COUNTERS", [fs, task, _group(_SHUFFLE_ERRORS, (0,) * 6), _group(_OUTPUT, (out,))])

    # -- the file -----------------------------------------------------------------------------------------------------
    def write(self, job: Job) -> str:
        hosts = self.hosts
        items: list[tuple[int, int, str]] = []
        seq = 0

        def add(t: float, line: str) -> None:
            nonlocal seq
            seq += 1
            items.append((ms(t), seq, line))

        jid = job.job_id
        am_host = hosts[job.am_node]
        add(
            job.am_start,
            _event(
                "AM_STARTED",
                "AMStarted",
                (
                    f'"applicationAttemptId":"appattempt_{job.cts}_{job.seq:04d}_000001","startTime":{ms(job.am_start)},'
                    f'"containerId":"{job.container_id(1)}","nodeManagerHost":"{am_host}","nodeManagerPort":45454,'
                    '"nodeManagerHttpPort":8042'
                ),
            ),
        )
        staging = f"hdfs://nn01.hcep.local:8020/tmp/hadoop-yarn/staging/{job.user}/.staging/{jid}/job.xml"
        add(
            job.init,
            _event(
                "JOB_SUBMITTED",
                "JobSubmitted",
                (
                    f'"jobid":"{jid}","jobName":{_s(job.name)},"userName":"{job.user}","submitTime":{ms(job.submit)},'
                    f'"jobConfPath":"{staging}","acls":{{}},"jobQueueName":"{job.queue}","workflowId":{{"string":""}},'
                    '"workflowName":{"string":""},"workflowNodeName":{"string":""},"workflowAdjacencies":{"string":""},'
                    '"workflowTags":{"string":""}'
                ),
            ),
        )
        add(job.init, _event("JOB_QUEUE_CHANGED", "JobQueueChange", f'"jobid":"{jid}","jobQueueName":"{job.queue}"'))
        add(
            job.launch,
            _event(
                "JOB_INITED",
                "JobInited",
                (
                    f'"jobid":"{jid}","launchTime":{ms(job.launch)},"totalMaps":{job.maps},"totalReduces":{job.reduces},'
                    '"jobStatus":"INITED","uberized":false'
                ),
            ),
        )
        add(
            job.launch,
            _event(
                "JOB_INFO_CHANGED",
                "JobInfoChange",
                (f'"jobid":"{jid}","submitTime":{ms(job.submit)},"launchTime":{ms(job.launch)}'),
            ),
        )
        task_start = job.running + 0.003
        for kind, count, ttype in (("m", job.maps, "MAP"), ("r", job.reduces, "REDUCE")):
            for task in range(count):
                add(
                    task_start,
                    _event(
                        "TASK_STARTED",
                        "TaskStarted",
                        (
                            f'"taskid":"{job.task_id(kind, task)}","taskType":"{ttype}","startTime":{ms(task_start)},'
                            '"splitLocations":""'
                        ),
                    ),
                )
        finished_maps = failed_maps = killed_maps = 0
        millis_maps = millis_reduces = 0
        for att in job.attempts:
            ttype = "MAP" if att.kind == "m" else "REDUCE"
            aid = job.attempt_id(att.kind, att.task, att.n)
            tid = job.task_id(att.kind, att.task)
            host = hosts[att.node]
            add(
                att.start,
                _event(
                    f"{ttype}_ATTEMPT_STARTED",
                    "TaskAttemptStarted",
                    (
                        f'"taskid":"{tid}","taskType":"{ttype}","attemptId":"{aid}","startTime":{ms(att.start)},'
                        f'"trackerName":"{host}","httpPort":8042,"shufflePort":13562,'
                        f'"containerId":"{job.container_id(att.container)}","locality":{{"string":"NODE_LOCAL"}},'
                        f'"avataar":{{"string":"{"SPECULATIVE" if att.speculative else "VIRGIN"}"}}'
                    ),
                ),
            )
            duration = ms(att.end) - ms(att.start)
            splits = _progress_splits(duration, int(duration * 0.7))
            if att.status == "SUCCEEDED":
                if att.kind == "m":
                    finished_maps += 1
                    millis_maps += duration
                    cnt = self.map_counters(job, att)
                    add(
                        att.end,
                        _event(
                            "MAP_ATTEMPT_FINISHED",
                            "MapAttemptFinished",
                            (
                                f'"taskid":"{tid}","attemptId":"{aid}","taskType":"MAP","taskStatus":"SUCCEEDED",'
                                f'"mapFinishTime":{ms(att.end) - 180},"finishTime":{ms(att.end)},"hostname":"{host}",'
                                f'"port":45454,"rackname":"/default-rack","state":"map","counters":{cnt},{splits}'
                            ),
                        ),
                    )
                else:
                    millis_reduces += duration
                    cnt = self.reduce_counters(job, att)
                    add(
                        att.end,
                        _event(
                            "REDUCE_ATTEMPT_FINISHED",
                            "ReduceAttemptFinished",
                            (
                                f'"taskid":"{tid}","attemptId":"{aid}","taskType":"REDUCE","taskStatus":"SUCCEEDED",'
                                f'"shuffleFinishTime":{ms(att.shuffle_end)},"sortFinishTime":{ms(att.sort_end)},'
                                f'"finishTime":{ms(att.end)},"hostname":"{host}","port":45454,"rackname":"/default-rack",'
                                f'"state":"reduce > reduce","counters":{cnt},{splits}'
                            ),
                        ),
                    )
                add(
                    att.end,
                    _event(
                        "TASK_FINISHED",
                        "TaskFinished",
                        (
                            f'"taskid":"{tid}","taskType":"{ttype}","finishTime":{ms(att.end)},"status":"SUCCEEDED",'
                            f'"counters":{cnt},"successfulAttemptId":{{"string":"{aid}"}}'
                        ),
                    ),
                )
            else:
                failed_maps += att.status == "FAILED"
                killed_maps += att.status == "KILLED"
                empty = '{"' + NS + 'JhCounters":{"name":"COUNTERS","groups":[]}}'
                add(
                    att.end,
                    _event(
                        f"{ttype}_ATTEMPT_{att.status}",
                        "TaskAttemptUnsuccessfulCompletion",
                        (
                            f'"taskid":"{tid}","taskType":"{ttype}","attemptId":"{aid}","finishTime":{ms(att.end)},'
                            f'"hostname":"{host}","port":45454,"rackname":"/default-rack","status":"{att.status}",'
                            f'"error":{_s(att.error)},"counters":{empty},{splits}'
                        ),
                    ),
                )
        launched_maps = sum(1 for a in job.attempts if a.kind == "m")
        job_group = _group(
            _JOB, (failed_maps, killed_maps, launched_maps, job.reduces, launched_maps, millis_maps, millis_reduces)
        )
        add(
            job.end,
            _event(
                "JOB_FINISHED",
                "JobFinished",
                (
                    f'"jobid":"{jid}","finishTime":{ms(job.end)},"finishedMaps":{finished_maps},'
                    f'"finishedReduces":{job.reduces},"failedMaps":{failed_maps},"failedReduces":0,'
                    f'"totalCounters":{counters("TOTAL_COUNTERS", [job_group])},'
                    '"mapCounters":{"name":"MAP_COUNTERS","groups":[]},"reduceCounters":{"name":"REDUCE_COUNTERS","groups":[]}'
                ),
            ),
        )
        items.sort()
        lines = [line for _, _, line in items]
        text = "Avro-Json\n" + SCHEMA + "\n" + lines[0] + "\n" + "".join("\n" + line + "\n" for line in lines[1:])
        path = jhist_path(self.root, job, finished_maps, job.reduces)
        write_text(path, text)
        return path

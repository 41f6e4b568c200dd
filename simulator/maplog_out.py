"""Write each map attempt's container syslog as Hadoop 2.x's YarnChild/MapTask write it.

The line that matters to an operator while the map runs is ``MapTask: Processing split: <path>:<start>+<length>``
(``FileSplit.toString()``), logged when the task opens its input: the split's length is known long before the job
history's counters.  A job's input is a set of files, each cut into whole blocks and a short last split; a split is
named by its file and offset.
"""

from __future__ import annotations

from simulator.jobs import Attempt, Job
from simulator.layout import container_dir, ms, render, write_text

_NN = "hdfs://nn01.hcep.local:8020"
_MAIN = "INFO [main] "


def split_locations(job: Job) -> list[tuple[str, int]]:
    """(file path, offset) of each map's split: consecutive whole blocks of a file, the file ending at a short
    split (or a split bigger than a block: a file read whole)."""
    cached: list[tuple[str, int]] | None = getattr(job, "_split_locations", None)
    if cached is not None:
        return cached
    block = job.block
    out: list[tuple[str, int]] = []
    part = offset = 0
    base = f"{_NN}/user/{job.user}/swim/{job.name}/in"
    for size in job.splits:
        out.append((f"{base}/part-{part:05d}", offset))
        offset += size
        if size != block:  # a file's last split (or one read whole): the next split opens the next file
            part, offset = part + 1, 0
    setattr(job, "_split_locations", out)  # noqa: B010 - a cache the Job dataclass does not declare
    return out


class MapLogWriter:
    def __init__(self, root: str, hosts: list[str]) -> None:
        self.root = root
        self.hosts = hosts

    def write(self, job: Job) -> int:
        """Write the syslog of every map attempt of ``job``; returns how many."""
        n = 0
        for att in job.attempts:
            if att.kind == "m":
                self._attempt(job, att)
                n += 1
        return n

    def _attempt(self, job: Job, att: Attempt) -> None:
        aid = job.attempt_id("m", att.task, att.n)
        path, offset = split_locations(job)[att.task]
        length = job.split_bytes(att.task)
        s, e = ms(att.start), ms(att.end)
        opened = min(s + 900 + (att.container * 37) % 600, (s + e) // 2)
        lines: list[tuple[int, str]] = []

        def log(t: int, body: str, level: str = "INFO", thread: str = "main") -> None:
            lines.append(((t << 20) + len(lines), f"{level} [{thread}] {body}"))

        log(s + 300, "org.apache.hadoop.metrics2.impl.MetricsConfig: loaded properties from hadoop-metrics2.properties")
        log(s + 380, "org.apache.hadoop.metrics2.impl.MetricsSystemImpl: Scheduled snapshot period at 10 second(s).")
        log(s + 380, "org.apache.hadoop.metrics2.impl.MetricsSystemImpl: MapTask metrics system started")
        log(s + 395, "org.apache.hadoop.mapred.YarnChild: Executing with tokens:")
        log(s + 450, "org.apache.hadoop.mapred.YarnChild: Sleeping for 0ms before retrying again. Got null now.")
        log(
            s + 500,
            "org.apache.hadoop.mapred.YarnChild: mapreduce.cluster.local.dir for child: "
            f"/data/1/yarn/local/usercache/{job.user}/appcache/{job.app_id}",
        )
        log(s + 600, "org.apache.hadoop.mapred.Task:  Using ResourceCalculatorProcessTree : [ ]")
        log(opened, f"org.apache.hadoop.mapred.MapTask: Processing split: {path}:{offset}+{length}")
        if job.reduces:
            log(opened + 20, f"org.apache.hadoop.mapred.MapTask: numReduceTasks: {job.reduces}")
            log(opened + 60, "org.apache.hadoop.mapred.MapTask: (EQUATOR) 0 kvi 26214396(104857584)")
            log(opened + 60, "org.apache.hadoop.mapred.MapTask: mapreduce.task.io.sort.mb: 100")
        if att.status == "SUCCEEDED":
            if job.reduces:
                log(e - 400, "org.apache.hadoop.mapred.MapTask: Starting flush of map output")
                log(e - 390, "org.apache.hadoop.mapred.MapTask: Spilling map output")
                log(e - 250, "org.apache.hadoop.mapred.MapTask: Finished spill 0")
            log(e - 200, f"org.apache.hadoop.mapred.Task: Task:{aid} is done. And is in the process of committing")
            log(e - 150, f"org.apache.hadoop.mapred.Task: Task '{aid}' done.")
        elif att.status == "FAILED":
            log(
                e - 30,
                "org.apache.hadoop.mapred.YarnChild: Error running child : java.lang.OutOfMemoryError: Java heap "
                "space\n\tat org.apache.hadoop.mapred.MapTask$MapOutputBuffer.init(MapTask.java:986)",
                "FATAL",
            )
        # a KILLED attempt's log just stops: the NodeManager killed its container
        write_text(container_dir(self.root, self.hosts[att.node], job, att.container) + "/syslog", render(lines))

"""Write a reduce attempt's container syslog: YarnChild start-up, the shuffle, the merge and the commit.

The shuffle lines are Hadoop 2.x's ``ShuffleSchedulerImpl`` / ``Fetcher`` / ``InMemoryMapOutput`` / ``OnDiskMapOutput``
/ ``MergeManagerImpl`` INFO lines, per connection (Assigning, assigned, "for url=... sent hash and received reply",
"freed by fetcher#N in Xms") and per map output ("about to shuffle output of map ... to MEMORY|DISK", "Read N bytes
from map-output for ...", "closeInMemoryFile -> ..."), with the MergeManager's memory accounting.
"""

from __future__ import annotations

from collections.abc import Callable

from simulator.jobs import Attempt, Job, Pull
from simulator.layout import container_dir, ms, render, write_text
from simulator.shuffle import Shuffle

_R = "org.apache.hadoop.mapreduce.task.reduce."
_MEMORY_LIMIT = 668_309_888
_MAX_SINGLE = 167_077_472
_MERGE_THRESHOLD = 441_084_544
_NN = "hdfs://nn01.hcep.local:8020"


def map_attempt_ids(job: Job) -> list[str]:
    """The successful attempt id of every map of the job (what reducers fetch from), cached on the job."""
    cached: list[str] | None = getattr(job, "_map_ids", None)
    if cached is None:
        cached = [job.attempt_id("m", m, a.n if a is not None else 0) for m, a in enumerate(job.map_ok)]
        setattr(job, "_map_ids", cached)  # noqa: B010 - a cache the Job dataclass does not declare
    return cached


class ReduceLogWriter:
    def __init__(self, root: str, hosts: list[str], log_format: str = "hadoop2") -> None:
        self.root = root
        self.hosts = hosts
        self.debug_lines = log_format == "hadoop2"  # lines Hadoop 3 logs at DEBUG

    def write(self, job: Job, att: Attempt, shuffle: Shuffle) -> str:
        hosts = self.hosts
        jid = job.job_id
        aid = job.attempt_id("r", att.task, att.n)
        ids = map_attempt_ids(job)
        lines: list[tuple[int, str]] = []
        add = lines.append
        seq = 0
        s = ms(att.start)
        ev = shuffle.events_start_ms
        main = "INFO [main] "
        head_lines = (
            (900, "org.apache.hadoop.metrics2.impl.MetricsConfig: loaded properties from hadoop-metrics2.properties"),
            (980, "org.apache.hadoop.metrics2.impl.MetricsSystemImpl: Scheduled snapshot period at 10 second(s)."),
            (980, "org.apache.hadoop.metrics2.impl.MetricsSystemImpl: ReduceTask metrics system started"),
            (995, "org.apache.hadoop.mapred.YarnChild: Executing with tokens:"),
            (
                995,
                f"org.apache.hadoop.mapred.YarnChild: Kind: mapreduce.job, Service: {jid}, Ident: "
                f"(org.apache.hadoop.mapreduce.security.token.JobTokenIdentifier@{(job.seq * 2654435761) % 2**31:x})",
            ),
            (1050, "org.apache.hadoop.mapred.YarnChild: Sleeping for 0ms before retrying again. Got null now."),
            (
                1100,
                "org.apache.hadoop.mapred.YarnChild: mapreduce.cluster.local.dir for child: "
                f"/data/1/yarn/local/usercache/{job.user}/appcache/{job.app_id}",
            ),
            (
                1150,
                "org.apache.hadoop.conf.Configuration.deprecation: session.id is deprecated. Instead, use "
                "dfs.metrics.session-id",
            ),
            (1200, "org.apache.hadoop.mapred.Task:  Using ResourceCalculatorProcessTree : [ ]"),
        )
        for offset, body in head_lines:
            add(((min(s + offset, ev - 20) << 20) + seq, main + body))
            seq += 1
        add(
            (
                ((ev - 15) << 20) + seq,
                main + "org.apache.hadoop.mapred.ReduceTask: Using ShuffleConsumerPlugin: "
                f"{_R}Shuffle@{(att.container * 40503) % 2**31:x}",
            )
        )
        add(
            (
                ((ev - 5) << 20) + seq + 1,
                main + f"{_R}MergeManagerImpl: MergerManager: memoryLimit={_MEMORY_LIMIT}, "
                f"maxSingleShuffleLimit={_MAX_SINGLE}, mergeThreshold={_MERGE_THRESHOLD}, ioSortFactor=10, "
                "memToMemMergeOutputsThreshold=10",
            )
        )
        evf = "INFO [EventFetcher for fetching Map Completion Events] " + _R + "EventFetcher: "
        add(((ev << 20) + seq + 2, f"{evf}{aid} Thread started: EventFetcher for fetching Map Completion Events"))
        seq += 3
        url_head = f"Fetcher: for url=13562/mapOutput?job={jid}&reduce={att.task}&map="
        heads: dict[int, tuple[str, str]] = {}
        for conn in shuffle.connections:
            f = f"fetcher#{conn.fetcher}"
            head = f"INFO [{f}] {_R}"
            heads[conn.fetcher] = (head, f)
            host = hosts[conn.node]
            if self.debug_lines:
                n = len(conn.pulls)
                maps = ",".join([ids[p.map_task] for p in conn.pulls])
                add(
                    (
                        (conn.start_ms << 20) + seq,
                        f"{head}ShuffleSchedulerImpl: Assigning {host}:13562 with {n} to "
                        f"{f}\0{head}ShuffleSchedulerImpl: assigned {n} of {n} to {host}:13562 to {f}",
                    )
                )
                add(((conn.url_ms << 20) + seq + 2, f"{head}{url_head}{maps} sent hash and received reply"))
            add(
                (
                    (conn.freed_ms << 20) + seq + 3,
                    f"{head}ShuffleSchedulerImpl: {host}:13562 freed by {f} in {conn.freed_ms - conn.start_ms}ms",
                )
            )
            seq += 4
        used = n_mem = disk = 0
        for p in shuffle.by_end:
            head, f = heads[p.fetcher]
            m_att = ids[p.map_task]
            length = p.length
            decomp = length - 4
            end_key = p.end_ms << 20
            if p.timeouts:
                seq = self._timeouts(add, seq, p, head, f, hosts[p.node], m_att, decomp, length, url_head)
            if decomp > _MAX_SINGLE:
                disk += 1
                add(
                    (
                        (p.start_ms << 20) + seq,
                        f"{head}Fetcher: {f} about to shuffle output of map {m_att} "
                        f"decomp: {decomp} len: {length} to DISK",
                    )
                )
                add((end_key + seq + 1, f"{head}OnDiskMapOutput: Read {length} bytes from map-output for {m_att}"))
            else:
                add(
                    (
                        (p.start_ms << 20) + seq,
                        f"{head}Fetcher: {f} about to shuffle output of map {m_att} "
                        f"decomp: {decomp} len: {length} to MEMORY",
                    )
                )
                merge = ""
                if used + decomp > _MERGE_THRESHOLD and n_mem:
                    merge = (
                        f"\0{head}MergeManagerImpl: Starting inMemoryMerger's merge since commitMemory={used} > "
                        f"mergeThreshold={_MERGE_THRESHOLD}. Current usedMemory={used}"
                    )
                    used = n_mem = 0
                    disk += 1
                n_mem += 1
                add(
                    (
                        end_key + seq + 1,
                        f"{head}InMemoryMapOutput: Read {decomp} bytes from map-output for {m_att}"
                        f"{merge}\0{head}MergeManagerImpl: closeInMemoryFile -> map-output of size: {decomp}, "
                        f"inMemoryMapOutputs.size() -> {n_mem}, commitMemory -> {used}, usedMemory ->{used + decomp}",
                    )
                )
                used += decomp
            seq += 2
        t = ms(att.shuffle_end)
        total = shuffle.total_bytes
        sort_end = ms(att.sort_end)
        tail: tuple[tuple[int, str], ...] = (
            (t + 5, f"{evf}EventFetcher is interrupted.. Returning"),
            (
                t + 10,
                main + f"{_R}MergeManagerImpl: finalMerge called with {n_mem} in-memory map-outputs and {disk} "
                "on-disk map-outputs",
            ),
            (t + 20, main + f"org.apache.hadoop.mapred.Merger: Merging {max(n_mem, 1)} sorted segments"),
            (
                t + 21,
                main + "org.apache.hadoop.mapred.Merger: Down to the last merge-pass, with "
                f"{max(n_mem, 1)} segments left of total size: {max(used - 6 * n_mem, 0)} bytes",
            ),
            (
                t + 40,
                main + f"{_R}MergeManagerImpl: Merged {n_mem} segments, {used} bytes to disk to satisfy reduce "
                "memory limit",
            ),
            (t + 41, main + f"{_R}MergeManagerImpl: Merging {disk + 1} files, {total} bytes from disk"),
            (t + 42, main + f"{_R}MergeManagerImpl: Merging 0 segments, 0 bytes from memory into reduce"),
            (t + 43, main + f"org.apache.hadoop.mapred.Merger: Merging {disk + 1} sorted segments"),
            (
                sort_end,
                main + "org.apache.hadoop.mapred.Merger: Down to the last merge-pass, with "
                f"{disk + 1} segments left of total size: {max(total - 6 * att.pulls, 0)} bytes",
            ),
            (
                sort_end + 120,
                main + "org.apache.hadoop.conf.Configuration.deprecation: mapred.skip.on is "
                "deprecated. Instead, use mapreduce.job.skiprecords",
            ),
        )
        e = ms(att.end)
        out_dir = f"{_NN}/user/{job.user}/swim/{job.name}/out/_temporary/1/{job.task_id('r', att.task)}"
        tail += (
            (e - 300, main + f"org.apache.hadoop.mapred.Task: Task:{aid} is done. And is in the process of committing"),
            (e - 210, main + f"org.apache.hadoop.mapred.Task: Task {aid} is allowed to commit now"),
            (
                e - 110,
                main + "org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter: Saved output of task "
                f"'{aid}' to {out_dir}",
            ),
            (e - 25, main + f"org.apache.hadoop.mapred.Task: Task '{aid}' done."),
        )
        for t_ms, body in tail:
            add(((t_ms << 20) + seq, body))
            seq += 1
        path = container_dir(self.root, hosts[att.node], job, att.container) + "/syslog"
        write_text(path, render(lines))
        return path

    def _timeouts(
        self,
        add: Callable[[tuple[int, str]], None],
        seq: int,
        p: Pull,
        head: str,
        f: str,
        host: str,
        m_att: str,
        decomp: int,
        length: int,
        url_head: str,
    ) -> int:
        """A stalled fetch's failed tries as Hadoop's Fetcher logs them: the read timeout's WARN and stack trace, the
        fetch failure reported, the host freed; then the retry (Assigning again, about to shuffle again)."""
        warn = head.replace("INFO [", "WARN [", 1)
        start = p.start_ms
        where = "MEMORY" if decomp <= _MAX_SINGLE else "DISK"
        for failed, retry in p.timeouts:
            add(
                (
                    (failed << 20) + seq,
                    f"{warn}Fetcher: Failed to shuffle output of {m_att} from {host}:13562\n"
                    "java.net.SocketTimeoutException: Read timed out\n"
                    "\tat java.net.SocketInputStream.socketRead0(Native Method)\n"
                    "\tat java.net.SocketInputStream.read(SocketInputStream.java:152)\n"
                    f"\tat {_R}Fetcher.copyMapOutput(Fetcher.java:534)"
                    f"\0{warn}Fetcher: copyMapOutput failed for tasks [{m_att}]"
                    f"\0{head}ShuffleSchedulerImpl: Reporting fetch failure for {m_att} to MRAppMaster."
                    f"\0{head}ShuffleSchedulerImpl: {host}:13562 freed by {f} in {failed - start}ms",
                )
            )
            body = (
                f"{head}Fetcher: {f} about to shuffle output of map {m_att} decomp: {decomp} len: {length} to {where}"
            )
            if self.debug_lines:
                body = (
                    f"{head}ShuffleSchedulerImpl: Assigning {host}:13562 with 1 to {f}\0{head}ShuffleSchedulerImpl: "
                    f"assigned 1 of 1 to {host}:13562 to {f}\0{head}{url_head}{m_att} sent hash and received reply\0"
                    + body
                )
            add(((retry << 20) + seq + 1, body))
            start = retry
            seq += 2
        return seq

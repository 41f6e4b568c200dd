"""A map attempt's ``host_pace`` (collectors/hadoop/hostpace.py): its ``pace`` over its own host's usual pace, the
median pace of the host's map attempts of any job that finished between an hour and ten minutes before it started
(what Hadoop knew then, and what a slowdown that began minutes ago cannot have moved); ``pace`` itself while the host
has too little such past.

The batch collector reads one job-history file at a time, so the last tests write several jobs' history files
(Hadoop's Avro-Json form) with maps of one host spread over them and check what ``hcep collect hadoop`` makes of
them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from collectors.hadoop.collect import collect
from collectors.hadoop.hostpace import HOST_PACE_HORIZON, HOST_PACE_LAG, HOST_PACE_MIN, HostPaces

MB = 1 << 20
T0 = 1_700_000_000_000  # ms


def mapper(finish: float, period: float, pace: float | None, host: str = "n1") -> dict[str, Any]:
    ev: dict[str, Any] = {"type": "Mapper", "ts": finish, "host": host, "period": period, "status": "SUCCEEDED"}
    if pace is not None:
        ev["pace"] = pace
    return ev


def test_only_attempts_finished_well_before_the_start_set_the_yardstick() -> None:
    hp = HostPaces()
    for k in range(HOST_PACE_MIN):
        first = mapper(100.0 + 10 * k, 50.0, 1.0)
        hp.annotate(first)
        assert first["host_pace"] == 1.0  # no past yet: the yardstick is the job's maps elsewhere (pace itself)
    # started less than HOST_PACE_LAG after they finished: they are not its yardstick yet
    soon = mapper(100.0 + HOST_PACE_LAG + 50.0, 60.0, 2.0)
    hp.annotate(soon)
    assert soon["host_pace"] == 2.0
    # started HOST_PACE_LAG after the fifth finished: 2.0 against their 1.0 (soon's 2.0 is too recent to count)
    later = mapper(140.0 + HOST_PACE_LAG + 30.0, 30.0, 3.0)
    hp.annotate(later)
    assert later["host_pace"] == 3.0
    # started more than HOST_PACE_HORIZON after them: they are forgotten again
    much_later = mapper(140.0 + HOST_PACE_HORIZON + 100.0, 30.0, 1.5)
    hp.annotate(much_later)
    assert much_later["host_pace"] == 1.5


def test_an_older_host_is_judged_against_its_own_usual_pace() -> None:
    hp = HostPaces()
    events = [mapper(100.0 + 60 * k, 50.0, p, "old") for k, p in enumerate((1.5, 1.4, 1.6, 1.5, 1.45))]
    events += [mapper(100.0 + 60 * k, 50.0, p, "new") for k, p in enumerate((1.0, 0.9, 1.1, 1.0, 1.0))]
    events += [mapper(1500.0, 50.0, 1.8, "old"), mapper(1500.0, 50.0, 2.0, "new")]
    for ev in sorted(events, key=lambda e: e["ts"]):
        hp.annotate(ev)
    assert events[-2]["host_pace"] == 1.2  # 1.8 on a host that runs at 1.5: barely slower than usual
    assert events[-1]["host_pace"] == 2.0  # 2.0 on a host that runs at 1.0: twice as slow as usual


def test_a_slowdown_does_not_become_its_hosts_usual_pace_while_it_lasts() -> None:
    # Half an hour of ordinary maps every 10 s, then the host turns 2.5x slower and finishes a short map every 4 s
    # for 20 minutes (12 slots, many short maps: its own slow attempts soon outnumber any short recent past).
    hp = HostPaces()
    onset = 1800.0
    for k in range(180):
        hp.annotate(mapper(10.0 * k + 20.0, 20.0, 1.0))
    slowed = [mapper(onset + 4.0 * k + 50.0, 50.0, 2.5) for k in range(300)]
    for ev in slowed:
        hp.annotate(ev)
    assert {ev["host_pace"] for ev in slowed} == {2.5}


def test_unpaced_and_other_events_are_left_alone() -> None:
    hp = HostPaces()
    for k in range(5):
        hp.annotate(mapper(100.0 + 10 * k, 5.0, 1.0))
    killed = {**mapper(200.0, 5.0, None), "status": "KILLED"}
    reducer = {"type": "Reducer", "ts": 200.0, "host": "n1", "period": 5.0, "pace": 3.0}
    hp.annotate(killed)
    hp.annotate(reducer)
    assert "host_pace" not in killed and "host_pace" not in reducer


# --------------------------------------------------------------------------- job history files, collected in batch
def _history(path: Path, job: int, maps: list[tuple[str, int, int, int]]) -> None:
    """A job's history (Avro-Json): for each map (host, start ms, finish ms, input bytes) its attempt's start and
    successful finish with its HDFS_BYTES_READ counter."""
    lines = ["Avro-Json"]
    for m, (host, start, finish, nbytes) in enumerate(maps):
        task = f"task_1700000000000_{job:04d}_m_{m:06d}"
        attempt = f"attempt_1700000000000_{job:04d}_m_{m:06d}_0"
        started = {
            "taskid": task,
            "taskType": "MAP",
            "attemptId": attempt,
            "startTime": start,
            "trackerName": host,
            "httpPort": 8042,
            "shufflePort": 13562,
            "containerId": f"container_1700000000000_{job:04d}_01_{m + 2:06d}",
        }
        counts = [{"name": "HDFS_BYTES_READ", "displayName": "HDFS: Number of bytes read", "value": nbytes}]
        counters = {"name": "COUNTERS", "groups": [{"name": "fs", "displayName": "fs", "counts": counts}]}
        finished = {
            "taskid": task,
            "attemptId": attempt,
            "taskType": "MAP",
            "taskStatus": "SUCCEEDED",
            "mapFinishTime": finish,
            "finishTime": finish,
            "hostname": host,
            "port": 45454,
            "rackname": "/default-rack",
            "state": "map",
            "counters": counters,
        }
        ns = "org.apache.hadoop.mapreduce.jobhistory."
        lines.append(json.dumps({"type": "MAP_ATTEMPT_STARTED", "event": {ns + "TaskAttemptStarted": started}}))
        lines.append(json.dumps({"type": "MAP_ATTEMPT_FINISHED", "event": {ns + "MapAttemptFinished": finished}}))
    path.write_text("\n".join(lines) + "\n")


def _job(job: int, start_s: int, slow_host_seconds: int) -> list[tuple[str, int, int, int]]:
    """Three maps of 256 MB elsewhere in 60 s each, then one on host 'h' in the given time."""
    s = T0 + start_s * 1000
    maps = [(f"other{k}", s, s + 60_000, 256 * MB) for k in range(3)]
    maps.append(("h", s + 61_000, s + 61_000 + slow_host_seconds * 1000, 256 * MB))
    return maps


#: Host h runs one map of each of nine jobs, 400 s apart: 1.5x its jobs' maps elsewhere (an older host) in the first
#: seven, then 3x.  A job's map on h has the h maps of the jobs two or more before it as its yardstick (finished 10
#: minutes before it started).
PLAN = [(j, 400 * (j - 1), 90 if j <= 7 else 180) for j in range(1, 10)]
#: the first six have fewer than five such maps (host_pace = pace); the seventh ran as usual; the last two twice as
#: slow as usual
EXPECTED = [1.5] * 6 + [1.0, 2.0, 2.0]


def test_batch_collect_compares_a_host_with_its_past_across_job_files(tmp_path: Path) -> None:
    # Files are read in name order, which is not the order of the attempts.
    for job, start, took in PLAN:
        _history(tmp_path / f"job_{10 - job}.jhist", job, _job(job, start, took))
    maps = [e for e in collect([str(tmp_path)]) if e["type"] == "Mapper" and e["host"] == "h"]
    maps.sort(key=lambda e: e["ts"])
    assert [e["pace"] for e in maps] == [1.5] * 7 + [3.0, 3.0]
    assert [e.get("host_pace") for e in maps] == EXPECTED


def test_the_follower_gives_the_same_host_pace_across_restarts(tmp_path: Path) -> None:
    # Live, each job's history appears as the job runs; the follower is restarted between jobs (its read positions
    # kept, the host's past rebuilt from the lines it re-reads): the same host_pace as the batch collector's.
    import argparse

    from app.commands import collect_hadoop

    logs, out, state = tmp_path / "logs", tmp_path / "events.jsonl", tmp_path / "state.json"
    logs.mkdir()
    argv = [str(logs), "--follow", "--out", str(out), "--state", str(state), "--poll", "0", "--max-polls", "1"]
    for job, start, took in PLAN:
        _history(logs / f"job_{job}.jhist", job, _job(job, start, took))
        parser = argparse.ArgumentParser()
        collect_hadoop.configure(parser)
        assert collect_hadoop.run(parser.parse_args(argv)) == 0
    events = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    maps = sorted((e for e in events if e["type"] == "Mapper" and e["host"] == "h"), key=lambda e: e["ts"])
    assert [e.get("host_pace") for e in maps] == EXPECTED

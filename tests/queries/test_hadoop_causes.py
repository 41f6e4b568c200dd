"""The Hadoop pack's rules name causes (docs/semantics.md section 9): each fires on the event shapes its cause leaves in
Hadoop's logs, names the cause's entity, and stays quiet on the natural look-alike beside it.

The traces are small and hand-built from the collectors' vocabulary (Hadoop events 0.5 s wide, Ganglia rounds 7.5 s,
one LoadStd round every 15 s, as the collectors emit them); what each rule must do is written next to it.  The
simulated-cluster check (one injected fault of each kind) is in ``test_hadoop_faults.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.matching.judge import judge
from engine import event_from_json
from engine.language.packs import load_pack

PACK = Path(__file__).resolve().parents[2] / "queries" / "hadoop.yaml"
T0 = 1_700_000_000.0
J = "job_1700000000000_0001"
GIB = 1 << 30


@pytest.fixture(scope="module")
def pack() -> Any:
    return load_pack(PACK)


def rounds(until: float, every: float = 15.0) -> list[dict[str, Any]]:
    """The cluster-wide Ganglia rounds: one LoadStd every ``every`` seconds from T0 to T0 + until."""
    n = int(until // every)
    return [{"type": "LoadStd", "ts": T0 + k * every, "delta": 7.5, "val": 0.3, "mean": 1.0} for k in range(n + 1)]


def hadoop(etype: str, at: float, **attrs: Any) -> dict[str, Any]:
    return {"type": etype, "ts": T0 + at, "delta": 0.5, **attrs}


def warnings(pack: Any, events: list[dict[str, Any]]) -> list[tuple[str, str, float]]:
    """(alertname, entity label value, startsAt - T0) of every firing warning or worse, in order."""
    objs = sorted(events, key=lambda e: e["ts"])
    evs = [event_from_json({"id": f"e{i}", **o}, seq=i, tick=pack.tick) for i, o in enumerate(objs)]
    out = []
    for alert in judge(pack, evs):
        labels = alert.labels
        if alert.ends_at is None and labels["severity"] in ("warning", "critical"):
            entity = labels.get("task_id") or labels.get("job_id") or labels.get("host") or ""
            out.append((labels["alertname"], entity, round(alert.starts_at - T0, 1)))
    return out


def container(n: int) -> str:
    return f"container_1700000000000_0001_01_{n:06d}"


def map_job(split_of: dict[int, int], runs: dict[int, float], start: float = 10.0) -> list[dict[str, Any]]:
    """A job of len(split_of) maps started together: the AM's input line, each map's split (its task log) and its end
    (the job history's Mapper, with the bytes it read) after runs[i] seconds."""
    total = sum(split_of.values())
    out = [hadoop("JobInput", start - 2, job_id=J, input_bytes=total, splits=len(split_of))]
    for i, size in split_of.items():
        c = container(i + 2)
        out.append(hadoop("MapSplit", start + 1, job_id=J, split_bytes=size, container_id=c))
        out.append(
            hadoop(
                "Mapper",
                start + runs[i],
                job_id=J,
                task_id=f"task_1700000000000_0001_m_{i:06d}",
                attempt_id=f"attempt_1700000000000_0001_m_{i:06d}_0",
                host=f"node{i:02d}",
                period=runs[i],
                status="SUCCEEDED",
                speculative=False,
                container_id=c,
                input_bytes=size,
            )
        )
    return out


def test_input_skew_warns_while_the_skewed_map_runs(pack: Any) -> None:
    # Map 3 reads 6x its siblings' splits and runs 400 s against their 60 s: the warning comes 2 minutes after its
    # siblings ended (70 s; the first round >= 120 s later, 195 s, decided once no event can still fall before that
    # round: 2 x 7.5 s and the next event later), long before it (and its job) ends.
    splits = {i: 128 << 20 for i in range(8)} | {3: 6 * (128 << 20)}
    runs = {i: 60.0 for i in range(8)} | {3: 400.0}
    got = warnings(pack, map_job(splits, runs) + rounds(600))
    assert got == [("MapDataSkew", J, 240.0), ("MapDataSkewDone", J, 435.0)]  # and again from its counters


def test_a_whole_block_among_short_last_splits_is_not_data_skew(pack: Any) -> None:
    # A file's whole 256 MB block among five short last splits of 48 MB: 5.3x their mean, yet an ordinary split; it
    # runs 130 s against their 30 s and ends 100 s after them (the job barely waits): no warning, though it still
    # ran 2 minutes after its start.
    splits = {i: 48 << 20 for i in range(6)} | {0: 256 << 20}
    runs = {i: 30.0 for i in range(6)} | {0: 130.0}
    assert warnings(pack, map_job(splits, runs) + rounds(600)) == []


def test_a_straggler_that_reads_its_siblings_input_is_not_data_skew(pack: Any) -> None:
    # The same job with even splits and one map 8x slower (costly records, a slow disk): time skew, not input skew.
    splits = {i: 128 << 20 for i in range(8)}
    runs = {i: 60.0 for i in range(8)} | {3: 480.0}
    assert warnings(pack, map_job(splits, runs) + rounds(600)) == []


def test_a_big_split_that_ends_soon_does_not_warn(pack: Any) -> None:
    # 6x split, but the job's maps take 10 s: the big one ends after 60 s, before anyone waits 2 minutes for it.
    splits = {i: 1 << 20 for i in range(8)} | {3: 6 << 20}
    runs = {i: 10.0 for i in range(8)} | {3: 60.0}
    assert warnings(pack, map_job(splits, runs) + rounds(600)) == []


def reduce_job(partitions: list[int], reduce_runs: list[float]) -> list[dict[str, Any]]:
    """Four maps (their output summed in DataIO's ``written``), then reducers whose shuffles end at 100 s with
    ``partitions[r]`` bytes and which end ``reduce_runs[r]`` seconds after their shuffle."""
    total = sum(partitions)
    out = []
    for m in range(4):
        out.append(
            hadoop("DataIO", 20.0 + m, job_id=J, size=total // 4, written=(m + 1) * (total // 4), maps_done=m + 1)
        )
        out[-1].update(maps=4, reduces=len(partitions), task_id=f"task_1700000000000_0001_m_{m:06d}")
    for r, (size, run) in enumerate(zip(partitions, reduce_runs, strict=True)):
        attempt = f"attempt_1700000000000_0001_r_{r:06d}_0"
        task = f"task_1700000000000_0001_r_{r:06d}"
        out.append(hadoop("ShuffleDone", 100.0 + r, job_id=J, task_id=task, attempt_id=attempt, bytes=size, maps=4))
        out.append(hadoop("ReducerEnd", 100.0 + r + run, job_id=J, task_id=task, attempt_id=attempt, host="n1"))
    return out


def test_reduce_key_skew_warns_after_its_shuffle(pack: Any) -> None:
    # Reducer 2's partition is 5x the others'; a minute after its shuffle it still reduces (the others ended).
    got = warnings(pack, reduce_job([100, 100, 500, 100, 100], [20, 20, 400, 20, 20]) + rounds(600))
    assert got == [("ReduceDataSkew", J, 210.0)]  # the round at 165 s, decided at the round 45 s later


def test_even_partitions_do_not_warn(pack: Any) -> None:
    # Even partitions, one reducer slow (a slow disk): not key skew.
    assert warnings(pack, reduce_job([100] * 5, [20, 20, 400, 20, 20]) + rounds(600)) == []


def fetch(at: float, m: int, done_after: float | None, nbytes: int = 1000) -> list[dict[str, Any]]:
    reducer = "task_1700000000000_0001_r_000000"
    attrs = {"job_id": J, "task_id": reducer, "map_task": f"task_1700000000000_0001_m_{m:06d}", "host": "n7"}
    attrs["map_attempt"] = f"attempt_1700000000000_0001_m_{m:06d}_0"
    out = [hadoop("FetchStart", at, bytes=nbytes, **attrs)]
    if done_after is not None:
        out.append(hadoop("DataPull", at + done_after, period=done_after, **attrs))
    return out


def test_a_fetch_that_has_not_finished_a_minute_later_warns_while_it_hangs(pack: Any) -> None:
    # Fetches of maps 0-2 take 0.2-15 s; map 3's (1 kB) never ends (or ends at 180 s with a timeout and a retry): the
    # warning names the reducer while it still hangs -- the first round more than 20 s after 100 s (135 s: the
    # rounds' 7.5 s width), decided 45 s later here (rounds every 15 s, no other event; in a busy stream the next
    # event comes sooner): 80 s after the stall began.
    events = fetch(50, 0, 0.2) + fetch(51, 1, 15.0) + fetch(52, 2, 0.3) + fetch(100, 3, None) + rounds(400)
    assert warnings(pack, events) == [("HungFetch", "task_1700000000000_0001_r_000000", 180.0)]


def test_small_fetches_that_finish_within_twenty_seconds_do_not_warn(pack: Any) -> None:
    assert warnings(pack, fetch(50, 0, 18.0) + fetch(100, 1, 12.0) + rounds(400)) == []


def test_a_big_map_output_takes_its_time_at_the_links_rate(pack: Any) -> None:
    # 2 GB over a gigabit link (about 110 MB/s) takes 18 s, 40 s when the link is shared: not a stall.  The same
    # fetch stalled (never done) warns once it has waited 20 s plus its bytes at 25 MB/s (100 s).
    big = 2_000_000_000
    assert warnings(pack, fetch(50, 0, 18.0, big) + fetch(100, 1, 40.0, big) + rounds(400)) == []
    got = warnings(pack, fetch(50, 0, 18.0, big) + fetch(100, 1, None, big) + rounds(400))
    assert len(got) == 1 and got[0][:2] == ("HungFetch", "task_1700000000000_0001_r_000000")
    assert 200.0 <= got[0][2] <= 260.0


def held_job(reducer_at: float, gib: float) -> list[dict[str, Any]]:
    """Slowstart at 100 s, map output written at 60-160 s (``gib`` in all), the first reducer starting at
    ``reducer_at``."""
    out = [hadoop("ReduceSlowstart", 100.0, job_id=J)]
    for m in range(10):
        size = int(gib * GIB / 10)
        out.append(hadoop("DataIO", 60.0 + 10 * m, job_id=J, size=size, written=(m + 1) * size, maps_done=m + 1))
        out[-1].update(maps=10, reduces=2, task_id=f"task_1700000000000_0001_m_{m:06d}")
    task = "task_1700000000000_0001_r_000000"
    out.append(hadoop("ReducerStart", reducer_at, job_id=J, task_id=task, host="n3"))
    return out


def test_held_output_warns_three_minutes_after_slowstart(pack: Any) -> None:
    # No reducer gets a container until 700 s; 2 GiB written by then: the round at 285 s (180 s after the
    # slowstart point), decided at the round 45 s later.
    assert warnings(pack, held_job(700.0, 2.0) + rounds(900)) == [("HeldMapOutput", J, 330.0)]


def test_reducers_that_start_soon_or_small_output_do_not_warn(pack: Any) -> None:
    assert warnings(pack, held_job(105.0, 2.0) + rounds(900)) == []  # reducers started at once
    assert warnings(pack, held_job(700.0, 0.5) + rounds(900)) == []  # held, but half a GiB waits


def attempt(
    at: float, host: str, job: int, *, status: str = "SUCCEEDED", pace: float | None = 1.0, usual: float = 1.0
) -> dict[str, Any]:
    """A finished map attempt: ``pace`` is its time per input byte over its job's maps elsewhere, ``host_pace`` that
    over its host's ``usual`` pace (the collector's; ``usual`` is 1 while the host has no past)."""
    attrs: dict[str, Any] = {"job_id": f"job_1700000000000_{job:04d}", "host": host, "status": status}
    attrs.update(speculative=False, period=60.0)
    if pace is not None:
        attrs.update(pace=pace, host_pace=round(pace / usual, 3))
    return hadoop("Mapper", at, **attrs)


def test_a_slow_host_shows_across_jobs(pack: Any) -> None:
    # node9's attempts of six jobs lose to their speculative copies, then run 2.5-3x slower per byte than their jobs'
    # maps elsewhere, one after another; node1 runs the same jobs at their usual pace, with one natural straggler.
    slow = [attempt(100 + 60 * k, "node9", k, status="KILLED", pace=None) for k in range(3)]
    slow += [attempt(300 + 60 * k, "node9", 3 + k, pace=2.5 + 0.25 * k) for k in range(3)]
    healthy = [attempt(100 + 40 * k, "node1", k, pace=1.1) for k in range(10)] + [attempt(500, "node1", 9, pace=4)]
    got = warnings(pack, slow + healthy)
    # Its third lost race (260 s, three jobs within 5 minutes); its fifth slow attempt in a row (360 s, the run from
    # the first lost race).
    assert got == [("SlowNodeKills", "node9", 260.0), ("SlowNode", "node9", 360.0)]


def test_a_slow_host_shows_through_its_pace_alone(pack: Any) -> None:
    # No race lost (its attempts are too short to be speculated): five maps in a row, of three jobs, at 2.2-3x.
    events = [attempt(100 + 50 * k, "node4", (0, 1, 2, 1, 0)[k], pace=(2.2, 3.0, 2.6, 2.4, 2.1)[k]) for k in range(5)]
    events += [attempt(90 + 30 * k, "node5", k % 3, pace=1.0) for k in range(8)]
    assert warnings(pack, events) == [("SlowNode", "node4", 300.0)]


def test_a_slow_host_running_one_jobs_maps_shows_against_that_jobs_maps_elsewhere(pack: Any) -> None:
    # A failing disk doubles every attempt's time; for ten minutes the host runs only maps of one big job (as in the
    # live demo).  Against that job's maps on other hosts, each of its maps runs 1.8-2.3x slower per byte: the fifth
    # in a row warns.
    events = [attempt(200 + 60 * k, "node6", 7, pace=(1.9, 2.3, 1.8, 2.1, 2.0, 2.2)[k]) for k in range(6)]
    events += [attempt(190 + 20 * k, f"node{10 + k % 5}", 7, pace=(0.9, 1.0, 1.2, 0.95, 1.1)[k % 5]) for k in range(20)]
    assert warnings(pack, events) == [("SlowNode", "node6", 440.0)]


def test_an_older_host_with_its_stragglers_does_not_warn(pack: Any) -> None:
    # A host of the older hardware generation runs every attempt up to 1.5x slower (1.3-1.6x per byte with the
    # per-task noise), and natural stragglers (2-9x) now and then among them: never five in a row at 1.7x.
    paces = [1.4, 1.6, 2.4, 1.5, 1.3, 9.0, 1.6, 1.5, 1.45, 3.1, 1.55, 1.6, 1.35]
    events = [attempt(100 + 40 * k, "node8", k % 4, pace=p) for k, p in enumerate(paces)]
    assert warnings(pack, events) == []


def test_an_older_hosts_ordinary_run_near_the_gate_does_not_warn_against_its_usual_pace(pack: Any) -> None:
    # An older host whose usual pace is 1.45 runs five attempts in a row at 1.7-2.1x its jobs' maps elsewhere (its
    # ordinary noise and a mild straggler): against its own usual pace they are 1.17-1.45x, not a slowdown.  When the
    # same host turns 2x slower (2.6-3.2x per byte, 1.8-2.2x its usual), the fifth in a row warns.
    calm = [attempt(2000 + 40 * k, "node8", k, pace=p, usual=1.45) for k, p in enumerate((1.75, 1.9, 1.7, 2.1, 1.8))]
    assert warnings(pack, calm) == []
    slow = [attempt(2000 + 40 * k, "node8", k, pace=p, usual=1.45) for k, p in enumerate((2.6, 3.0, 2.7, 3.2, 2.8))]
    assert warnings(pack, slow) == [("SlowNode", "node8", 2160.0)]


def test_natural_stragglers_scattered_over_hosts_do_not_warn(pack: Any) -> None:
    events = [attempt(100 + 30 * k, f"node{k}", k, pace=5.0) for k in range(12)]
    events += [attempt(110 + 30 * k, f"node{k}", 20 + k, status="KILLED", pace=None) for k in range(12)]
    # and on one host, two lost races 5 minutes apart and a third later: no host loses three in 5 minutes
    events += [attempt(t, "node3", 40 + i, status="KILLED", pace=None) for i, t in enumerate((700, 950, 1300))]
    # and on one host three stragglers in a row, then an attempt at its usual pace: the run stops there
    events += [attempt(1500 + 40 * k, "node7", 60 + k, pace=(6.0, 2.5, 9.0, 1.1, 3.0)[k]) for k in range(5)]
    assert warnings(pack, events) == []


def test_long_stragglers_of_other_jobs_ending_one_after_another_do_not_warn(pack: Any) -> None:
    # On a large cluster a host may hold a few natural stragglers, each of its own job, for half an hour or more
    # (7-30x their jobs' pace: costly records); they end within minutes of one another.  The host's attempts that
    # started meanwhile run at their usual pace.
    events = []
    for k, (pace, period) in enumerate(((9.1, 1850.0), (8.4, 1900.0), (7.2, 2100.0), (2.5, 80.0), (32.0, 2090.0))):
        events.append({**attempt(2200 + 60 * k, "node3", 30 + k, pace=pace), "period": period})
    events += [attempt(2600 + 30 * k, "node3", 40 + k, pace=(0.8, 0.9, 1.0)[k]) for k in range(3)]
    assert warnings(pack, events) == []


def load_rounds(host_load: dict[float, float], until: float = 600.0) -> list[dict[str, Any]]:
    """Ganglia rounds every 15 s: the cluster's mean load 1.0 (std-dev 0.4 over 200 hosts), host n5's load_one
    as given from each time on (1.0 before the first)."""
    out = rounds(until)
    load = 1.0
    for k in range(int(until // 15) + 1):
        at = k * 15.0
        load = next((v for t, v in sorted(host_load.items(), reverse=True) if at >= t), 1.0)
        out.append(
            {
                "type": "Metric",
                "ts": T0 + at,
                "delta": 7.5,
                "host": "n5",
                "metric": "load_one",
                "val": load,
                "cluster_mean": 1.0,
                "cluster_std": 0.4,
            }
        )
    return out


def reducer(start: float, end: float) -> list[dict[str, Any]]:
    task = "task_1700000000000_0001_r_000004"
    attrs = {"job_id": J, "task_id": task, "attempt_id": task.replace("task", "attempt") + "_0", "host": "n5"}
    return [hadoop("ReducerStart", start, **attrs), hadoop("ReducerEnd", end, **attrs)]


def test_a_runaway_reducer_warns_while_it_spins(pack: Any) -> None:
    # A reducer starts at 100 s on n5 (load normal), its host's load_one climbs to 9 above the cluster's mean from
    # 160 s: one host cannot move a 200-host cluster's std-dev above 1, so the rule reads the host's excess.
    got = warnings(pack, reducer(100.0, 500.0) + load_rounds({160.0: 5.0, 190.0: 10.0}))
    assert got[0] == ("RunawayReducer", "task_1700000000000_0001_r_000004", 210.0)
    assert {g[:2] for g in got} == {("RunawayReducer", "task_1700000000000_0001_r_000004")}  # it escalates


def test_a_busy_host_or_a_reducer_started_on_a_loaded_host_does_not_warn(pack: Any) -> None:
    assert warnings(pack, reducer(100.0, 500.0) + load_rounds({160.0: 3.0})) == []  # 2 above the mean: busy
    assert warnings(pack, reducer(100.0, 500.0) + load_rounds({0.0: 9.0})) == []  # loaded before it started


def test_held_output_whose_gib_was_crossed_with_the_slowstart_line(pack: Any) -> None:
    # The map whose end reached the slowstart point also wrote the job's first GiB (the same 0.1 s tick): their
    # order is unknown, so the rule reads any later map's running total (b) as well.
    events = [hadoop("ReduceSlowstart", 100.0, job_id=J), hadoop("ReducerStart", 700.0, job_id=J, task_id="r0")]
    for at, written in ((100.03, 1.2), (130.0, 1.8), (250.0, 2.4)):
        events.append(hadoop("DataIO", at, job_id=J, size=GIB // 2, written=int(written * GIB), maps=9, reduces=2))
    assert warnings(pack, events + rounds(900)) == [("HeldMapOutput", J, 330.0)]


def slow_held_job(reducer_at: float) -> list[dict[str, Any]]:
    """Slowstart at 100 s, then a slow map phase: an eighth of a GiB written every 100 s from 60 s, so the first GiB
    is written at 760 s (660 s after the slowstart point); the first reducer starts at ``reducer_at``."""
    out = [hadoop("ReduceSlowstart", 100.0, job_id=J)]
    size = GIB // 8
    for m in range(16):
        out.append(hadoop("DataIO", 60.0 + 100 * m, job_id=J, size=size, written=(m + 1) * size, maps_done=m + 1))
        out[-1].update(maps=16, reduces=2, task_id=f"task_1700000000000_0001_m_{m:06d}")
    out.append(hadoop("ReducerStart", reducer_at, job_id=J, task_id="task_1700000000000_0001_r_000000", host="n3"))
    return out


def test_held_output_whose_first_gib_comes_late_in_a_slow_map_phase(pack: Any) -> None:
    # The case seed 6 (fb2010, 20 nodes) showed: no reducer from the slowstart point on, the GiB reached 11 minutes
    # later, beyond HeldOutput's 8-minute window; HeldMapOutputLate warns within a round or two of the GiB's map end.
    got = warnings(pack, slow_held_job(2200.0) + rounds(2400))
    assert [(name, entity) for name, entity, _ in got] == [("HeldMapOutputLate", J)]
    assert 760.0 < got[0][2] <= 830.0


def test_a_slow_map_phase_whose_reducers_started_does_not_warn(pack: Any) -> None:
    assert warnings(pack, slow_held_job(400.0) + rounds(2400)) == []  # a reducer ran before the GiB was written

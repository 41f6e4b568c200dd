"""The dashboard's test data, made at test time by running the Hadoop pack (as ``hcep match`` and ``hcep match
--alerts`` do) over the shipped sample trace and the hand-checked trace.

The hand-checked trace uses relative times (10 s ... 86700 s); it is shifted to start right after the sample
(``HANDCHECK_OFFSET``) so both read as one cluster's day.  Planted anomalies (asserted by the tests):
a straggling mapper in ``STRAGGLER_JOB``, a slow shuffle pull of ``SLOW_PULL_TASK`` and a reducer during a load
imbalance, ``IMBALANCE_TASK``.

Alerts: the pack's rules are gated for real clusters, so on these small traces ``hcep match --alerts`` with the
current pack (MapDataSkew ... RunawayReducer) gives no alert at all (``alerts.jsonl`` is empty; the new queries have no
record on them either).  The alerts the views are tested with are written to a store (``hcep.sqlite``) as ``hcep run``
writes its outbox: transitions of :class:`contracts.alerts.Alert` (see :data:`STORE_ALERTS`), hand-made, whose
evidence names the fixture's own match records: as the traces hold no record of the rules' own queries, each names a
record of the fact query of the same job or reducer (Q1, Q2, Q3, Q4, Q5), so the views' record lookup is exercised.

``history/`` holds the Spark history tables in ``hcep history``'s schema (:mod:`app.spark.history`), computed here
with pandas and the same skew function, so the tests need no JVM.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "queries" / "hadoop.yaml"
SAMPLE = ROOT / "queries" / "samples" / "hadoop_sample.jsonl"
HANDCHECK = ROOT / "tests" / "data" / "hadoop_handcheck.jsonl"
HANDCHECK_OFFSET = 1_700_000_390.0

STRAGGLER_JOB = "job_1700000000000_0001"
STRAGGLER_MAPPER = "task_1700000000000_0001_m_000003"
SLOW_PULL_TASK = "task_1700000000000_0001_r_000001"
IMBALANCE_TASK = "task_1700000000000_0002_r_000001"
IMBALANCE_HOST = "worker-02"
OTHER_JOB = "job_1700000000000_0002"
#: The host of the fixture's slow-node alert.
SLOW_HOST = "worker-01"
#: The alert transitions of the fixture's store: (rule, query, evidence query, severity, tier, job, task, host, fired,
#: resolved). The ReduceDataSkew group escalates (its warning resolves when the critical one fires); HeldMapOutput,
#: RunawayReducer and SlowNode resolve.  HungFetch has a fixed severity (no tier).
STORE_ALERTS = [
    ("HungFetch", "HungFetch", "Q3", "warning", None, STRAGGLER_JOB, SLOW_PULL_TASK, None, 1_700_000_160.0, None),
    ("MapDataSkewDone", "MapSkewDone", "Q1", "critical", "severe", STRAGGLER_JOB, None, None, 1_700_000_200.0, None),
    (
        "ReduceDataSkew",
        "ReduceSkew",
        "Q2",
        "warning",
        "moderate",
        OTHER_JOB,
        None,
        None,
        1_700_000_300.0,
        1_700_000_320.0,
    ),
    ("ReduceDataSkew", "ReduceSkew", "Q2", "critical", "severe", OTHER_JOB, None, None, 1_700_000_320.0, None),
    ("MapDataSkewDone", "MapSkewDone", "Q1", "info", "low", OTHER_JOB, None, None, 1_700_000_310.0, None),
    (
        "HeldMapOutput",
        "HeldOutput",
        "Q4",
        "warning",
        "moderate",
        OTHER_JOB,
        None,
        None,
        1_700_000_250.0,
        1_700_000_280.0,
    ),
    (
        "RunawayReducer",
        "RunawayHost",
        "Q5",
        "warning",
        "moderate",
        OTHER_JOB,
        IMBALANCE_TASK,
        IMBALANCE_HOST,
        1_700_000_230.0,
        1_700_000_270.0,
    ),
    ("SlowNode", "SlowHost", None, "warning", "moderate", None, None, SLOW_HOST, 1_700_000_240.0, 1_700_000_290.0),
]


def _match(events: Path) -> list[dict]:
    from app.matching.packs import compiled_queries
    from app.matching.read import read_events
    from engine import match_events

    args = argparse.Namespace(
        pack=str(PACK), query=None, query_text=None, strategy=None, output=None, confidence=None, tick=None
    )
    compiled, tick = compiled_queries(args)
    return [json.loads(json.dumps(r)) for r in match_events(compiled, read_events(events, tick))]


def _judge(events: Path) -> list[dict]:
    """What ``hcep match EVENTS --pack PACK --alerts`` prints."""
    from app.matching.judge import judge
    from app.matching.packs import pack_tick
    from app.matching.read import read_events
    from engine.language.packs import load_pack

    pack = load_pack(str(PACK))
    return [a.to_json() for a in judge(pack, read_events(events, pack_tick(pack)))]


#: The ``kind`` label of each rule (queries/hadoop.yaml).
KIND = {
    "HungFetch": "hung_fetch",
    "MapDataSkewDone": "map_data_skew",
    "ReduceDataSkew": "reduce_data_skew",
    "HeldMapOutput": "held_output",
    "RunawayReducer": "runaway_reducer",
    "SlowNode": "slow_node",
}


def store_alerts(records: list[dict]) -> list:
    """:data:`STORE_ALERTS` as :class:`contracts.alerts.Alert` transitions, in the order the rules decided them, each
    with the evidence of a fixture record of its query and job (or reducer)."""
    from contracts.alerts import Alert
    from contracts.records import record_id

    out = []
    for rule, query, shown, severity, tier, job, task, host, fired, resolved in STORE_ALERTS:
        mine = [
            r
            for r in records
            if r["query"] == shown
            and (r["return"].get("task_id") == task if task else r["return"].get("job_id") == job)
        ]
        record = mine[-1] if mine else None
        labels = {
            "alertname": rule,
            "severity": severity,
            "pack": "hadoop",
            "query": query,
            **({"tier": tier} if tier else {}),
            **({"job_id": job} if job else {}),
            **({"task_id": task} if task else {}),
            **({"host": host} if host else {}),
            "kind": KIND[rule],
        }
        evidence = {
            "query": shown if record else query,
            "record_id": record_id(record) if record else None,
            "records": 1,
            "match": record["match"] if record else {},
            "return": record["return"] if record else {},
        }
        notes = {
            "summary": f"{rule} of {task or job or host} ({tier or severity})",
            "description": f"what {rule} means",
            "confidence": "1.0",
            "evidence": json.dumps(evidence),
            "value": "5.0",
        }
        alert = Alert(labels, notes, fired, at=fired)
        out.append(alert)
        if resolved is not None:
            out.append(alert.resolved(resolved))
    return sorted(out, key=lambda a: a.at)


def write_store(path: Path, alerts: list) -> None:
    """The transitions into a store's outbox, as ``hcep run`` writes them (``app.service``'s row layout)."""
    from app.store import Batch, Store

    store = Store(str(path))
    rows = [
        (
            a.transition_id,
            a.labels["alertname"],
            "ops",
            a.severity,
            json.dumps(a.to_webhook()),
            "unrouted",
            a.at,
            a.at,
            "fixture",
            a.fingerprint,
            a.status,
            a.starts_at,
            a.ends_at,
        )
        for a in alerts
    ]
    store.commit(Batch([], rows, [], [], None))
    store.close()


def build(out: Path) -> Path:
    """Write ``sample_events.jsonl``, ``handcheck_events.jsonl``, ``matches.jsonl``, ``alerts.jsonl``, the store
    ``hcep.sqlite`` (alert transitions only) and ``history/`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SAMPLE, out / "sample_events.jsonl")
    shifted = out / "handcheck_events.jsonl"
    with HANDCHECK.open() as src, shifted.open("w") as dst:
        for line in src:
            if line.strip():
                obj = json.loads(line)
                obj["ts"] = obj["ts"] + HANDCHECK_OFFSET
                dst.write(json.dumps(obj) + "\n")
    found = []
    with (out / "matches.jsonl").open("w") as dst:
        for events in (out / "sample_events.jsonl", shifted):
            for record in _match(events):
                found.append(record)
                dst.write(json.dumps(record) + "\n")
    with (out / "alerts.jsonl").open("w") as dst:
        for events in (out / "sample_events.jsonl", shifted):
            dst.writelines(json.dumps(a) + "\n" for a in _judge(events))
    write_store(out / "hcep.sqlite", store_alerts(found))
    build_history(out, out / "history")
    return out


def _read(paths: list[Path]) -> list[dict]:
    return [json.loads(line) for p in paths for line in p.read_text().splitlines() if line.strip()]


def build_history(data: Path, out: Path, bucket: float = 300.0) -> Path:
    """The four history tables of ``data``'s events and matches, as ``hcep history --out`` lays them out."""
    import pandas as pd

    from app.spark.history import QUANTILES, skew

    events = pd.DataFrame(_read([data / "sample_events.jsonl", data / "handcheck_events.jsonl"]))
    tasks = events[events["type"].isin(["Mapper", "Reducer"])][["job_id", "task_id", "host", "type", "period"]]
    starts = events[events["type"] == "JobStart"][["job_id", "user", "queue"]]
    tasks = tasks.merge(starts, on="job_id", how="left").fillna("unknown")
    frames = []
    for level, column in (("job", "job_id"), ("queue", "queue"), ("user", "user"), ("host", "host")):
        for (key, kind), group in tasks.groupby([column, "type"]):
            row = {
                "level": level,
                "key": key,
                "kind": kind,
                "tasks": len(group),
                "mean": group["period"].mean(),
                "min": group["period"].min(),
            }
            row.update({f"p{round(q * 100)}": group["period"].quantile(q, interpolation="lower") for q in QUANTILES})
            row["max"] = group["period"].max()
            frames.append(row)
    skews = [
        {"job_id": job, "kind": kind, **skew(list(group["period"]))}
        for (job, kind), group in tasks.groupby(["job_id", "type"])
    ]
    io = events[events["type"] == "DataIO"].sort_values("ts", kind="stable")
    io = io.assign(queued=io.groupby("job_id")["size"].cumsum())[["job_id", "task_id", "ts", "size", "queued"]]
    matches = pd.DataFrame(_read([data / "matches.jsonl"]))
    kinds = {"Q3": "straggler", "Q5": "imbalance", "Q6": "imbalance"}
    tagged = matches[matches["query"].isin(list(kinds))].assign(
        kind=lambda f: f["query"].map(kinds), bucket=lambda f: (f["end"] // bucket) * bucket
    )
    anomalies = tagged.groupby(["bucket", "kind", "query"]).size().rename("count").reset_index()
    for name, frame in (
        ("durations", pd.DataFrame(frames)),
        ("skew", pd.DataFrame(skews)),
        ("queued", io),
        ("anomalies", anomalies),
    ):
        (out / name).mkdir(parents=True, exist_ok=True)
        frame.reset_index(drop=True).to_parquet(out / name / "part-00000.parquet")
        (out / name / "_SUCCESS").write_text("")
    return out

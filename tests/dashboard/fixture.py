"""The dashboard's test data, made at test time by running the Hadoop pack (as ``hcep match`` does) over the shipped
sample trace and the hand-checked trace.

The hand-checked trace uses relative times (10 s ... 86700 s); it is shifted to start right after the sample
(``HANDCHECK_OFFSET``) so both read as one cluster's day.  Planted anomalies (asserted by the tests):
a straggling mapper in ``STRAGGLER_JOB``, a slow shuffle pull of ``SLOW_PULL_TASK`` and a reducer during a load
imbalance, ``IMBALANCE_TASK``.

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


def _match(events: Path) -> list[dict]:
    from app.commands.match import compiled_queries, read_events
    from engine import match_events

    args = argparse.Namespace(pack=str(PACK), query=None, query_text=None, strategy=None, output=None,
                              confidence=None, tick=None)
    compiled, tick = compiled_queries(args)
    return [json.loads(json.dumps(r)) for r in match_events(compiled, read_events(events, tick))]


def build(out: Path) -> Path:
    """Write ``sample_events.jsonl``, ``handcheck_events.jsonl``, ``matches.jsonl`` and ``history/`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SAMPLE, out / "sample_events.jsonl")
    shifted = out / "handcheck_events.jsonl"
    with HANDCHECK.open() as src, shifted.open("w") as dst:
        for line in src:
            if line.strip():
                obj = json.loads(line)
                obj["ts"] = obj["ts"] + HANDCHECK_OFFSET
                dst.write(json.dumps(obj) + "\n")
    with (out / "matches.jsonl").open("w") as dst:
        for events in (out / "sample_events.jsonl", shifted):
            for record in _match(events):
                dst.write(json.dumps(record) + "\n")
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
            row = {"level": level, "key": key, "kind": kind, "tasks": len(group), "mean": group["period"].mean(),
                   "min": group["period"].min()}
            row.update({f"p{round(q * 100)}": group["period"].quantile(q, interpolation="lower") for q in QUANTILES})
            row["max"] = group["period"].max()
            frames.append(row)
    skews = [{"job_id": job, "kind": kind, **skew(list(group["period"]))}
             for (job, kind), group in tasks.groupby(["job_id", "type"])]
    io = events[events["type"] == "DataIO"].sort_values("ts", kind="stable")
    io = io.assign(queued=io.groupby("job_id")["size"].cumsum())[["job_id", "task_id", "ts", "size", "queued"]]
    matches = pd.DataFrame(_read([data / "matches.jsonl"]))
    kinds = {"Q3": "straggler", "Q5": "imbalance", "Q6": "imbalance"}
    tagged = matches[matches["query"].isin(list(kinds))].assign(
        kind=lambda f: f["query"].map(kinds), bucket=lambda f: (f["end"] // bucket) * bucket)
    anomalies = tagged.groupby(["bucket", "kind", "query"]).size().rename("count").reset_index()
    for name, frame in (("durations", pd.DataFrame(frames)), ("skew", pd.DataFrame(skews)), ("queued", io),
                        ("anomalies", anomalies)):
        (out / name).mkdir(parents=True, exist_ok=True)
        frame.reset_index(drop=True).to_parquet(out / name / "part-00000.parquet")
        (out / name / "_SUCCESS").write_text("")
    return out

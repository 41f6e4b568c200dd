"""Inputs of the ``hcep stream`` tests: the shipped sample and a small simulated cluster, with explicit ids (the
stream names an id-less event by file and line, ``hcep match`` by position: explicit ids make both agree)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACK = ROOT / "queries" / "hadoop.yaml"
SAMPLE = ROOT / "queries" / "samples" / "hadoop_sample.jsonl"


def with_ids(lines: list[str]) -> list[dict]:
    out = []
    for i, line in enumerate(x for x in lines if x.strip()):
        obj = json.loads(line)
        obj.setdefault("id", str(i))
        out.append(obj)
    return out


def write_events(events: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


#: hcep run's broadcast topic's types: what the Hadoop pack's streams send without job or task.
GANGLIA = frozenset({"Metric", "LoadStd", "Balance", "Imbalance"})


def stream_plan(pack: Path = PACK, buckets: int = 3, cut: str = "declared", keyless: frozenset[str] | None = None):
    from app.commands.batch import load_plans
    from app.spark.stream.plan import build_plan

    loader = argparse.Namespace(pack=str(pack), query=None, tick=None, strategy=None, output=None, confidence=None)
    return build_plan(load_plans(loader), max_delta=7.5, buckets=buckets, cut=cut, keyless_types=keyless)


def match(path: Path, pack: Path = PACK) -> list[dict]:
    """``hcep match``'s records (in this process)."""
    import contextlib
    import io

    from app.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["match", str(path), "--pack", str(pack)]) == 0
    return [json.loads(line) for line in buf.getvalue().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def sample_events() -> list[dict]:
    return with_ids(SAMPLE.read_text().splitlines())


@pytest.fixture(scope="session")
def cluster_events(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """A simulated 8-node cluster for 0.3 h (``hcep simulate``'s model, the collectors' events): ~2,700 events."""
    from benchmarks.bench_detection import ganglia_objects, run_config

    work = tmp_path_factory.mktemp("sim")
    run_config(3, "fb2010", 8, 0.3, str(work))
    events = [json.loads(line) for line in (work / "hadoop.jsonl").read_text().splitlines() if line.strip()]
    events.extend(ganglia_objects(work / "sim", 1.0))
    events.sort(key=lambda e: e["ts"])
    return with_ids([json.dumps(e) for e in events])


# A real Alertmanager (deploy/alertmanager/start.sh) and its webhook receiver, for ``--alertmanager``.
from tests.app.alerts.conftest import alertmanager, receiver  # noqa: E402, F401

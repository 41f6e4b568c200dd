"""Helpers of the in-memory flow tests: a broker holding the pipeline tests' workload, a service over it, and a loop
driver that publishes the stream in chunks (a live stream) while the service runs turn by turn."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from app.alerts.webhook import Webhook
from app.stream.config import ServiceConfig
from app.stream.loop import Service
from app.stream.memory import MemoryBroker, MemorySink, MemorySource
from engine.language.packs import load_pack
from tests.pipeline.workload import PACK, hadoop_and_ganglia

HADOOP, GANGLIA = "mem.hadoop", "mem.ganglia"


def workload(jobs: int = 6, seed: int = 7) -> list[tuple[str, dict[str, Any]]]:
    """The pipeline tests' Hadoop + Ganglia stream as ``(topic, event)`` in time order."""
    hadoop, ganglia = hadoop_and_ganglia(jobs=jobs, seed=seed)
    both = [(HADOOP, e) for e in hadoop] + [(GANGLIA, e) for e in ganglia]
    both.sort(key=lambda x: x[1]["ts"])
    return both


def broker(session_timeout: float = 0.0) -> MemoryBroker:
    b = MemoryBroker(session_timeout=session_timeout)
    b.create(HADOOP, 4)
    b.create(GANGLIA, 1)
    return b


def chunks(b: MemoryBroker, stream: list[tuple[str, dict[str, Any]]], n: int) -> Iterator[None]:
    """Publish ``stream`` in ``n`` chunks, one per ``next()`` (Hadoop keyed by job, packed messages too)."""
    size = -(-len(stream) // n)
    for i in range(0, len(stream), size):
        part = stream[i : i + size]
        b.publish(HADOOP, [e for t, e in part if t == HADOOP], key="job_id", pack=3)
        b.publish(GANGLIA, [e for t, e in part if t == GANGLIA], pack=2)
        yield


def config(data_dir: Path, **overrides: Any) -> ServiceConfig:
    settings: dict[str, Any] = dict(
        pack=PACK,
        bootstrap="memory",
        group="g",
        instance="0",
        shared_topics=[HADOOP],
        broadcast_topics=[GANGLIA],
        matches_topic="mem.matches",
        data_dir=str(data_dir),
        metrics_port=None,
        idle_timeout=0.2,
        checkpoint_interval=0.05,
        webhooks={"ops": Webhook("ops", "http://memory/ops")},
        shedding=False,
        session_timeout=0.0,
        exit_when_idle=0.3,
        drain_timeout=5.0,
    )
    settings.update(overrides)
    return ServiceConfig(**settings)


def service(cfg: ServiceConfig, b: MemoryBroker, sink: MemorySink) -> Service:
    return Service(
        cfg,
        load_pack(PACK),
        source=MemorySource(b, cfg.shared_topics, cfg.broadcast_topics, group=cfg.group),
        sink=sink,
    )


def drive(
    svc: Service,
    publish: Iterator[None] | None,
    *,
    every: float = 0.1,
    timeout: float = 60.0,
    hook: Callable[[int], None] | None = None,
) -> None:
    """Run ``svc`` turn by turn, publishing the next chunk every ``every`` seconds, until everything is published
    and the service says it is idle.  ``hook(turn)`` runs before each turn (it may raise to crash the service)."""
    deadline = time.monotonic() + timeout
    turn = 0
    more = publish is not None
    next_at = time.monotonic()
    while time.monotonic() < deadline:
        if more and time.monotonic() >= next_at:
            more = next(publish, False) is not False  # type: ignore[arg-type]
            next_at += every
        if hook is not None:
            hook(turn)
        turn += 1
        if svc.step() and not more:
            return
    raise AssertionError(f"the service did not become idle within {timeout:.0f} s")

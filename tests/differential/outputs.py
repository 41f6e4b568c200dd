"""What the behaviour-unchanged test compares: each command's outputs on fixed inputs, in a canonical text form.

The inputs are the shipped sample trace, the hand-checked trace and a recorded simulated cluster (20 nodes, fb2010,
seed 3, half an hour, both collectors: ``golden/simulated_20n_seed3.events.jsonl.gz``).  The outputs are ``hcep
match`` records (the Hadoop and trends packs), ``hcep match --alerts`` transitions and, through the real broker,
``hcep run``'s store rows (match records and alert transitions).  ``python -m tests.differential.record`` writes
them to ``golden/`` when a change of behaviour is meant; a refactoring must leave them identical.
"""

from __future__ import annotations

import gzip
import io
import json
import sqlite3
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
SIM = GOLDEN / "simulated_20n_seed3.events.jsonl.gz"
HADOOP = ROOT / "queries" / "hadoop.yaml"
TRENDS = ROOT / "queries" / "trends.yaml"
INPUTS = {
    "sample": ROOT / "queries" / "samples" / "hadoop_sample.jsonl",
    "handcheck": ROOT / "tests" / "data" / "hadoop_handcheck.jsonl",
    "simulated": SIM,
}


def canonical(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def events_file(name: str, workdir: Path) -> Path:
    """The input as a plain JSON-lines file (the simulated trace is stored compressed)."""
    path = INPUTS[name]
    if path.suffix != ".gz":
        return path
    out = workdir / f"{name}.jsonl"
    if not out.exists():
        with gzip.open(path, "rt", encoding="utf-8") as src:
            out.write_text(src.read())
    return out


def cli(argv: list[str]) -> list[str]:
    """Run ``hcep`` in-process; its stdout lines (it must exit 0)."""
    from app.cli import main

    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(argv)
    assert code == 0, f"hcep {' '.join(argv)} exited {code}"
    return [line for line in buf.getvalue().splitlines() if line.strip()]


def offline_outputs(workdir: Path) -> dict[str, list[str]]:
    """``match`` and ``match --alerts`` of every input: ``{name: canonical lines}``."""
    out: dict[str, list[str]] = {}
    for name in INPUTS:
        events = str(events_file(name, workdir))
        for pack, tag in ((HADOOP, "hadoop"), (TRENDS, "trends")):
            out[f"{name}.{tag}.match"] = [canonical(json.loads(x)) for x in cli(["match", events, "--pack", str(pack)])]
        out[f"{name}.hadoop.alerts"] = [
            canonical(json.loads(x)) for x in cli(["match", events, "--pack", str(HADOOP), "--alerts"])
        ]
    return out


def store_rows(store_file: Path) -> dict[str, list[str]]:
    """The store rows ``hcep run`` wrote that do not depend on the clock: records and alert transitions by id."""
    db = sqlite3.connect(f"file:{store_file}?mode=ro", uri=True)
    try:
        matches = [
            canonical([rid, query, json.loads(record)])
            for rid, query, record in db.execute("SELECT id, query, record FROM matches ORDER BY id")
        ]
        alerts = [
            canonical([aid, rule, hook, sev, json.loads(alert), fp, state, starts, ends])
            for aid, rule, hook, sev, alert, fp, state, starts, ends in db.execute(
                "SELECT id, query, webhook, severity, alert, fingerprint, state, starts_at, ends_at "
                "FROM alerts ORDER BY id"
            )
        ]
    finally:
        db.close()
    return {"simulated.hadoop.run.matches": matches, "simulated.hadoop.run.alerts": alerts}


def golden_file(key: str) -> Path:
    return GOLDEN / f"{key}.jsonl.gz"


def read_golden(key: str) -> list[str]:
    with gzip.open(golden_file(key), "rt", encoding="utf-8") as f:
        return [line for line in f.read().splitlines() if line]


def write_golden(key: str, lines: list[str]) -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(golden_file(key), "wb", mtime=0) as f:  # mtime 0: the same outputs give the same bytes
        f.write("".join(line + "\n" for line in lines).encode())


GANGLIA_TYPES = frozenset({"Metric", "LoadStd", "Balance", "Imbalance"})


def run_outputs(bootstrap: str, workdir: Path, prefix: str) -> dict[str, list[str]]:
    """Publish the simulated trace to the broker (Hadoop keyed by job, Ganglia broadcast), run ``hcep run`` with the
    Hadoop pack until it has read everything, and read its store."""
    import subprocess

    from app.kafka_io import ensure_topics
    from app.publish import publish
    from tests.pipeline.conftest import run_command, start_service

    events = [json.loads(line) for line in events_file("simulated", workdir).read_text().splitlines() if line]
    ensure_topics(bootstrap, {f"{prefix}.hadoop": 4, f"{prefix}.ganglia": 1})
    publish(
        [e for e in events if e["type"] not in GANGLIA_TYPES], bootstrap, "hadoop", topic=f"{prefix}.hadoop", pack=50
    )
    publish([e for e in events if e["type"] in GANGLIA_TYPES], bootstrap, "ganglia", topic=f"{prefix}.ganglia", pack=50)
    data = workdir / f"{prefix}-data"
    cmd = run_command(
        bootstrap,
        str(HADOOP),
        data,
        prefix=prefix,
        extra=["--exit-when-idle", "5"],
    )
    log = workdir / f"{prefix}-run.log"
    proc = start_service(cmd, log)
    try:
        assert proc.wait(timeout=600) == 0, log.read_text()[-3000:]
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return store_rows(data / "hcep.sqlite")

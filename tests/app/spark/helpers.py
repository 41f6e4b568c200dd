"""Comparing batch and streaming records (docs/semantics.md section 5)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import pytest


def signature(record: dict[str, Any]) -> tuple[str, str, str, str]:
    """A record's identity: its signature, and for a growing run's increment its id and the record it extends."""
    return (
        record["query"],
        json.dumps(record["match"], sort_keys=True),
        record.get("id") or "",
        record.get("extends") or "",
    )


def assert_same_records(batch: Iterable[dict[str, Any]], streaming: Iterable[dict[str, Any]]) -> None:
    """The same signatures, each with the same confidence (1e-9), start, end and RETURN values; no duplicates."""
    batch, streaming = list(batch), list(streaming)
    got = {signature(r): r for r in batch}
    want = {signature(r): r for r in streaming}
    assert len(got) == len(batch), "duplicate signatures in the batch output"
    assert got.keys() == want.keys(), (sorted(got.keys() - want.keys())[:5], sorted(want.keys() - got.keys())[:5])
    for key, ref in want.items():
        rec = got[key]
        assert rec["confidence"] == pytest.approx(ref["confidence"], abs=1e-9), key
        assert (rec["start"], rec["end"]) == (ref["start"], ref["end"]), key
        assert rec["return"] == ref["return"], key


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]], str]:
    """``hcep ARGV`` in this process: exit status, stdout records, stderr."""
    from app.cli import main

    code = main(argv)
    captured = capsys.readouterr()
    records = [json.loads(line) for line in captured.out.splitlines() if line.strip()]
    return code, records, captured.err


def blowup_events(jobs: int, a_count: int, b_count: int) -> list[dict[str, Any]]:
    """An input that blows up under ``tests/app/spark/data/blowup_pack.yaml``: per job ``a_count`` A's, ``b_count``
    B's and one C, a second apart (every subset of the B's per A and C); explicit ids, so every command names the
    events alike."""
    out: list[dict[str, Any]] = []
    t = 1_700_000_000.0
    for k in range(jobs):
        for etype, n in (("A", a_count), ("B", b_count), ("C", 1)):
            for _ in range(n):
                out.append({"type": etype, "ts": t, "job_id": f"job_{k}", "id": f"e{len(out)}"})
                t += 1.0
    return out


def drop_report(err: str) -> dict[str, int]:
    """A command's drop report (stderr, the same line for match, batch, stream and archive): 'dropped partial
    matches (...): kleene 3, next 30 (bounds)' -> per query."""
    found = re.search(r"dropped partial matches \([^)]*\): (.*?) \((?:--max-runs|the pack)", err)
    assert found, err
    return {name: int(n.replace(",", "")) for name, n in (part.split() for part in found.group(1).split(", "))}

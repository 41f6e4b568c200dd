"""One input that blows up, bounded the same way by ``hcep match``, ``hcep batch`` and ``hcep stream`` (issue 26:
one driver, so the pack's ``settings.limits`` apply wherever the engine runs).

The truth is ``hcep match`` with the pack's bounds, and the same command unbounded (``--max-runs-per-key 0``) shows
that the bounds bind.  ``runs_per_key`` is per job: one process holds every job, a group of the Spark commands one,
and the bound is the same either way (see the pack's comment for the total bound, which is not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.app.spark.helpers import assert_same_records, blowup_events, drop_report, run_cli

pytestmark = pytest.mark.spark

PACK = Path(__file__).parent / "data" / "blowup_pack.yaml"
JOBS, AS, BS = 3, 30, 8


def _write(events: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


@pytest.fixture(scope="module")
def truth(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict], dict[str, int]]:
    """The input file, ``hcep match``'s bounded records and its drops per query."""
    import contextlib
    import io

    from app.cli import main

    path = _write(blowup_events(JOBS, AS, BS), tmp_path_factory.mktemp("blowup") / "events.jsonl")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["match", str(path), "--pack", str(PACK)]) == 0
    records = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    return path, records, drop_report(err.getvalue())


def test_the_bounds_bind_under_match(truth, capsys) -> None:
    path, bounded, drops = truth
    code, unbounded, _ = run_cli(["match", str(path), "--pack", str(PACK), "--max-runs-per-key", "0"], capsys)
    assert code == 0
    per_query = {q: sum(1 for r in unbounded if r["query"] == q) for q in ("kleene", "next")}
    assert per_query == {"kleene": JOBS * AS * (2**BS - 1), "next": JOBS * AS}  # every subset, every A
    assert len(bounded) < len(unbounded) // 50
    assert drops["next"] == JOBS * (AS - 20)  # 30 runs per job, 20 kept
    assert drops["kleene"] > 0


def test_batch_is_bounded_like_match(spark, truth, capsys) -> None:
    path, want, drops = truth
    code, got, err = run_cli(["batch", str(path), "--pack", str(PACK), "--master", "local[2]", "--no-progress"], capsys)
    assert code == 0, err
    assert_same_records(got, want)
    assert drop_report(err) == drops  # the command says what the bounds dropped, as hcep match does


def test_stream_is_bounded_like_match(spark, truth, tmp_path: Path, capsys) -> None:
    from app.spark.stream.sink import read_dead, read_records, totals

    path, want, drops = truth
    events = [json.loads(line) for line in path.read_text().splitlines()]
    half = len(events) // 2
    _write(events[:half], tmp_path / "in" / "part-0.jsonl")
    _write(events[half:], tmp_path / "in" / "part-1.jsonl")
    out = tmp_path / "out"
    argv = ["stream", "--pack", str(PACK), "--input", str(tmp_path / "in"), "--output", str(out)]
    argv += ["--checkpoint", str(tmp_path / "ck"), "--available-now", "--master", "local[2]", "--no-progress"]
    code, _, err = run_cli(argv, capsys)
    assert code == 0, err
    assert not read_dead(str(out))
    assert_same_records(read_records(str(out)), want)
    assert totals(str(out))["dropped"] == drops
    assert drop_report(err) == drops

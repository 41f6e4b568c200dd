"""``hcep archive --pack`` matches as ``hcep match`` does (issue 26: one driver, the same memory bounds everywhere):
on an input that blows up, the archive holds exactly ``hcep match``'s bounded records and says what the bounds
dropped in ``hcep match``'s line.  The truth is ``hcep match`` itself, and the same command unbounded shows that the
bounds bind.  No Spark: files are archived with pyarrow alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.app.spark.helpers import blowup_events, drop_report, run_cli

PACK = Path(__file__).resolve().parents[2] / "app" / "spark" / "data" / "blowup_pack.yaml"
JOBS, AS, BS = 2, 30, 6


@pytest.fixture
def blowup(tmp_path: Path) -> Path:
    """Per job: 30 A's, 6 B's, one C, a second apart (the blowup pack: every subset of the B's per A and C)."""
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in blowup_events(JOBS, AS, BS)))
    return path


def test_archive_is_bounded_like_match(blowup: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyarrow")
    from app.spark.archive import MATCHES_DIR, read_table, record_from_row

    code, want, err = run_cli(["match", str(blowup), "--pack", str(PACK)], capsys)
    assert code == 0, err
    code, unbounded, _ = run_cli(["match", str(blowup), "--pack", str(PACK), "--max-runs-per-key", "0"], capsys)
    assert code == 0
    assert len(want) < len(unbounded) // 5  # the bounds bind
    drops = drop_report(err)
    assert drops["next"] == JOBS * (AS - 20) and drops["kleene"] > 0

    code, _, archive_err = run_cli(["archive", str(blowup), "--to", str(tmp_path / "a"), "--pack", str(PACK)], capsys)
    assert code == 0, archive_err
    assert drop_report(archive_err) == drops  # the same bounds, said the same way
    got = [record_from_row(row) for row in read_table(str(tmp_path / "a"), MATCHES_DIR).to_pylist()]
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    assert sorted(map(key, got)) == sorted(map(key, want))

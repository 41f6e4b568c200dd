"""``hcep archive --pack`` matches as ``hcep match`` does (issue 26: one driver, the same memory bounds everywhere):
on an input that blows up, the archive holds exactly ``hcep match``'s bounded records and says what the bounds
dropped in ``hcep match``'s line.  The truth is ``hcep match`` itself, and the same command unbounded shows that the
bounds bind.  No Spark: files are archived with pyarrow alone."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

PACK = Path(__file__).resolve().parents[2] / "app" / "spark" / "data" / "blowup_pack.yaml"
JOBS, AS, BS = 2, 30, 6


def _hcep(argv: list[str]) -> tuple[int, str, str]:
    from app.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _drops(err: str) -> dict[str, int]:
    found = re.search(r"dropped partial matches \([^)]*\): (.*?) \(", err)
    assert found, err
    return {name: int(n.replace(",", "")) for name, n in (part.split() for part in found.group(1).split(", "))}


@pytest.fixture
def blowup(tmp_path: Path) -> Path:
    """Per job: 30 A's, 6 B's, one C, a second apart (the blowup pack: every subset of the B's per A and C)."""
    events, t = [], 1_700_000_000.0
    for k in range(JOBS):
        for etype, n in (("A", AS), ("B", BS), ("C", 1)):
            for _ in range(n):
                events.append({"type": etype, "ts": t, "job_id": f"job_{k}", "id": f"e{len(events)}"})
                t += 1.0
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_archive_is_bounded_like_match(blowup: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from app.spark.archive import MATCHES_DIR, read_table, record_from_row

    code, out, err = _hcep(["match", str(blowup), "--pack", str(PACK)])
    assert code == 0, err
    want = [json.loads(line) for line in out.splitlines() if line.strip()]
    code, out, _ = _hcep(["match", str(blowup), "--pack", str(PACK), "--max-runs-per-key", "0"])
    assert code == 0
    assert len(want) < len(out.splitlines()) // 5  # the bounds bind
    drops = _drops(err)
    assert drops["next"] == JOBS * (AS - 20) and drops["kleene"] > 0

    code, _, archive_err = _hcep(["archive", str(blowup), "--to", str(tmp_path / "a"), "--pack", str(PACK)])
    assert code == 0, archive_err
    assert _drops(archive_err) == drops  # the same bounds, said the same way
    got = [record_from_row(row) for row in read_table(str(tmp_path / "a"), MATCHES_DIR).to_pylist()]
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    assert sorted(map(key, got)) == sorted(map(key, want))

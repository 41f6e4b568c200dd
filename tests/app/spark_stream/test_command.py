"""``hcep stream``'s command line without Spark: its help, and the input errors it reports in one line (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.spark.helpers import run_cli
from tests.app.spark_stream.conftest import PACK


def test_help_names_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["stream", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--input", "--bootstrap", "--output", "--checkpoint", "--available-now", "--keyless-types"):
        assert option in text


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["--input", "/nonexistent/dir"], "no such directory"),
        (["--input", "{tmp}", "--matches-topic", "t"], "--matches-topic needs --bootstrap"),
        (["--input", "{tmp}", "--alertmanager", "127.0.0.1:9093"], "Alertmanager URL must be http(s)://HOST:PORT"),
    ],
)
def test_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], reason: str) -> None:
    argv = ["stream", "--pack", str(PACK), "--output", str(tmp_path / "o"), "--checkpoint", str(tmp_path / "c")]
    code, _, err = run_cli([*argv, *(x.format(tmp=tmp_path) for x in extra)], capsys)
    assert code == 2 and reason in err and len(err.strip().splitlines()) == 1


def test_a_changed_plan_is_refused(tmp_path: Path) -> None:
    from app.spark.stream.job import PlanMismatch, check_plan
    from tests.app.spark_stream.conftest import stream_plan

    check_plan(str(tmp_path), stream_plan(buckets=2))
    check_plan(str(tmp_path), stream_plan(buckets=2))  # the same plan: accepted
    with pytest.raises(PlanMismatch):
        check_plan(str(tmp_path), stream_plan(buckets=3))


@pytest.mark.parametrize(
    ("extra", "want"),
    [([], 10.0), (["--available-now"], 0.0), (["--trigger", "0"], 0.0), (["--trigger", "2.5", "--available-now"], 2.5)],
)
def test_trigger_defaults_to_ten_seconds_unless_available_now(tmp_path: Path, extra: list[str], want: float) -> None:
    """A running stream batches every 10 s by default (back to back cost about twice the CPU: issue 28); an
    ``--available-now`` run finishes what is there without waiting between batches; an explicit value wins."""
    import argparse

    from app.commands.stream import configure, trigger_seconds

    parser = argparse.ArgumentParser()
    configure(parser)
    argv = ["--pack", str(PACK), "--input", str(tmp_path), "--output", "o", "--checkpoint", "c", *extra]
    args = parser.parse_args(argv)
    assert trigger_seconds(args) == want


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_a_negative_trigger_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    argv = ["stream", "--pack", str(PACK), "--input", str(tmp_path), "--output", str(tmp_path / "o")]
    code, _, err = run_cli([*argv, "--checkpoint", str(tmp_path / "c"), "--trigger", value], capsys)
    assert code == 2 and "--trigger must be 0" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["", "4 g", "0g", "lots", "-1g"])
def test_a_bad_driver_memory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    argv = ["stream", "--pack", str(PACK), "--input", str(tmp_path), "--output", str(tmp_path / "o")]
    code, _, err = run_cli([*argv, "--checkpoint", str(tmp_path / "c"), f"--driver-memory={value}"], capsys)
    assert code == 2 and "--driver-memory takes a size" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("extra", "want"), [([], "4g"), (["--driver-memory", "6G"], "6G")])
def test_the_driver_memory_reaches_the_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, extra: list[str], want: str
) -> None:
    """Spark's own 1g heap ran out at 20,000 events/s on local[2] (issue 28, cut 14): hcep stream asks for 4g."""
    from app.spark import session

    seen: dict[str, object] = {}

    def no_session(master: str | None = None, **options: object) -> None:
        seen.update(options)
        raise RuntimeError("no session in this test")

    monkeypatch.setattr(session, "spark_session", no_session)
    argv = ["stream", "--pack", str(PACK), "--input", str(tmp_path), "--output", str(tmp_path / "o")]
    with pytest.raises(RuntimeError, match="no session"):
        run_cli([*argv, "--checkpoint", str(tmp_path / "c"), "--master", "local[1]", *extra], capsys)
    assert seen["driver_memory"] == want

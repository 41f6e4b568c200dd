"""How ``hcep stream`` takes SIGTERM and Ctrl-C (the real stop, in its own process, is in test_crash): the first
signal asks for a stop after the batch in progress, a second for a stop at once; the blocking waits of
``--available-now`` give way to a signal; the sink refuses batches once its gate is closed."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.app.spark_stream.conftest import PACK


def test_first_signal_asks_for_a_stop_the_second_for_now() -> None:
    from app.spark.stream.job import StopSignals

    signals = StopSignals()
    before = signal.getsignal(signal.SIGINT)
    with signals.installed():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        assert signals.requested.is_set() and not signals.now.is_set()
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert signals.now.is_set()
    assert signal.getsignal(signal.SIGINT) is before  # the handlers are given back


def test_a_blocking_wait_gives_way_to_a_signal() -> None:
    from app.spark.stream.job import StopSignals, _until_signal

    signals = StopSignals()
    release = threading.Event()
    threading.Timer(0.2, signals.requested.set).start()
    started = time.monotonic()
    assert _until_signal(lambda: release.wait(30), signals) is False
    assert time.monotonic() - started < 5
    release.set()
    assert _until_signal(lambda: None, StopSignals()) is True
    with pytest.raises(ValueError, match="boom"):
        _until_signal(lambda: (_ for _ in ()).throw(ValueError("boom")), StopSignals())


class _HeldFrame:
    """A batch's frame whose ``collect`` (which runs the batch) holds it in the sink until ``leave`` is set."""

    def __init__(self) -> None:
        self.inside, self.leave = threading.Event(), threading.Event()

    def collect(self) -> list:
        self.inside.set()
        self.leave.wait(30)
        return []


def _batch_in_sink(tmp_path: Path) -> tuple[Any, _HeldFrame, threading.Thread]:
    """A sink with batch 0 inside it, held there (the sink, the batch's frame, its thread)."""
    from app.matching.packs import load_pack
    from app.spark.stream.sink import StreamSink

    sink = StreamSink(str(tmp_path), load_pack(PACK), 0.1)
    frame = _HeldFrame()
    batch = threading.Thread(target=sink, args=(frame, 0))
    batch.start()
    assert frame.inside.wait(30)
    return sink, frame, batch


def test_a_closed_gate_waits_for_the_batch_in_the_sink_and_refuses_the_next(tmp_path: Path) -> None:
    from app.spark.stream.sink import STOP_MARK, StopRequested

    sink, frame, batch = _batch_in_sink(tmp_path)
    assert sink.busy
    assert sink.close_gate(0.1) is False  # the batch is still in the sink
    frame.leave.set()
    assert sink.close_gate(30) is True
    batch.join(30)
    assert sink.committed(0)
    with pytest.raises(StopRequested, match=STOP_MARK):
        sink(_HeldFrame(), 1)
    assert not sink.committed(1) and not sink.busy


class _Query:
    """The two calls stop_between_batches makes of a streaming query."""

    def __init__(self) -> None:
        self.isActive = True
        self.stopped = threading.Event()

    def stop(self) -> None:
        self.stopped.set()
        self.isActive = False


@pytest.mark.parametrize("second_signal", [False, True])
def test_the_stop_waits_for_the_batch_unless_signalled_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], second_signal: bool
) -> None:
    from app.spark.stream.job import StopSignals, stop_between_batches

    sink, frame, batch = _batch_in_sink(tmp_path)
    query, signals = _Query(), StopSignals()
    signals.requested.set()
    stopper = threading.Thread(target=stop_between_batches, args=(query, sink, signals))
    stopper.start()
    assert not query.stopped.wait(0.6)  # the batch is still in the sink
    if second_signal:
        signals.now.set()
        assert query.stopped.wait(5) and not sink.committed(0)
        frame.leave.set()
    else:
        frame.leave.set()
        assert query.stopped.wait(5) and sink.committed(0)
    stopper.join(5)
    batch.join(30)
    err = capsys.readouterr().err
    assert "stopping after the batch in progress" in err
    assert ("stopping now" in err) is second_signal

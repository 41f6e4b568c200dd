"""A broker restart must not end ``hcep run``: kafka-python 2.3 can complete a group join for a generation that a
rejoin (``unsubscribe`` + ``subscribe``, the service's watchdog) reset meanwhile, and raises ``AssertionError:
Coordinator selected invalid assignment protocol: None`` out of ``poll`` (found by
``tests/pipeline/test_pipeline.py::test_broker_restart_and_receiver_outage``: the service died in 2 of 3 runs)."""

from __future__ import annotations

from typing import Any

import pytest

from app.kafka_io import GroupConsumer


class _Stub:
    def __init__(self, error: BaseException) -> None:
        self.error: BaseException | None = error
        self.calls: list[str] = []

    def poll(self, **_kw: Any) -> dict:
        if self.error is not None:
            err, self.error = self.error, None
            raise err
        return {}

    def unsubscribe(self) -> None:
        self.calls.append("unsubscribe")

    def subscribe(self, **_kw: Any) -> None:
        self.calls.append("subscribe")


def _consumer(stub: _Stub) -> GroupConsumer:
    consumer = object.__new__(GroupConsumer)
    consumer._c = stub
    consumer._topics = ["t"]
    consumer._listener = None
    return consumer


def test_a_join_without_a_generation_is_joined_again() -> None:
    stub = _Stub(AssertionError("Coordinator selected invalid assignment protocol: None"))
    consumer = _consumer(stub)
    assert consumer.poll(0.01) == []
    assert stub.calls == ["unsubscribe", "subscribe"]
    assert consumer.poll(0.01) == []  # and it polls on


def test_other_assertion_errors_are_not_hidden() -> None:
    consumer = _consumer(_Stub(AssertionError("something else")))
    with pytest.raises(AssertionError, match="something else"):
        consumer.poll(0.01)

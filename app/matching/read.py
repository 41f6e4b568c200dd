"""Events files for a pack: JSON lines -> events, a block at a time, every bad line an error naming its place
(docs/semantics.md sections 1 and 8)."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from app.errors import CommandError

if TYPE_CHECKING:
    from engine.events import Event, EventDecoder, Stamp
    from engine.plan.compiler import CompiledQuery


def read_events(
    path: str | os.PathLike[str], tick: float, max_delta: float | None = None, built: frozenset[str] | None = None
) -> list[Event | Stamp]:
    """Read JSON-lines events from ``path`` (``"-"``: stdin).  Blank lines are skipped.

    Raises :class:`CommandError` with ``"FILE:LINE: reason"`` for a line that is not JSON or not a valid event, or
    (``max_delta`` given) an event wider than ``hcep run`` would accept: its ``too_wide`` rule, in ticks.
    ``built``: the event types to build (None: all); an event of another type is read and checked all the same but
    kept as its clock only (an :class:`engine.events.Stamp`), which is all a pack feeder needs of a type no query
    reads (:func:`built_types`).
    """
    from engine.events import EventDecoder

    decoder = EventDecoder(tick, max_delta)
    path = str(path)
    label = "<stdin>" if path == "-" else path
    if path == "-":
        return parse_blocks(sys.stdin.buffer, label, decoder, built)
    try:
        with open(path, "rb") as stream:
            return parse_blocks(stream, label, decoder, built)
    except OSError as err:
        raise CommandError(f"{label}: cannot read events: {err.strerror or err}") from None


def built_types(cqs: Iterable[CompiledQuery]) -> frozenset[str] | None:
    """The event types the compiled queries' evaluators read (None: all), as :class:`engine.evaluate.PackFeeder`
    routes them: an event of any other type only moves their clocks."""
    from engine.evaluate import feed_types

    types: set[str] = set()
    for cq in cqs:
        needed = feed_types(cq)
        if needed is None:
            return None
        types |= needed
    return frozenset(types)


def decode_line(raw: bytes, first: bool) -> Any:
    """One JSON-lines line -> the decoded value (``None`` for a blank line); ``ValueError`` with the reason
    (:func:`engine.events.loads_json`)."""
    from engine.events import loads_json

    return loads_json(raw, first)


#: Bytes read at a time: lines are decoded a block at a time (:meth:`engine.events.EventDecoder.decode_block`).
BLOCK = 1 << 20


def blocks(stream: BinaryIO, size: int = BLOCK) -> Iterator[bytes]:
    """The bytes of ``stream`` (binary, ``read(n)``) in blocks of whole lines, about ``size`` bytes each (a longer
    line is one block); the last block may lack its final newline."""
    read = stream.read
    parts: list[bytes] = []
    while True:
        chunk = read(size)
        if not chunk:
            break
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:
            parts.append(chunk)
            continue
        if parts:
            parts.append(chunk[:cut])
            yield b"".join(parts)
            parts = []
        else:
            yield chunk if cut == len(chunk) else chunk[:cut]
        if cut < len(chunk):
            parts.append(chunk[cut:])
    if parts:
        yield b"".join(parts)


def parse_blocks(
    stream: BinaryIO, label: str, decoder: EventDecoder, built: frozenset[str] | None = None, size: int = BLOCK
) -> list[Event | Stamp]:
    """Decode every line with ``decoder`` (an :class:`engine.events.EventDecoder`), ``size`` bytes at a time; the
    first bad line is an error, named by its line number."""
    from engine.events import LineError

    events: list[Event | Stamp] = []
    lineno = 0
    with no_collection():  # events hold no cycles: collections while they pile up would only scan them again
        for block in blocks(stream, size):
            try:
                got, lines = decoder.decode_block(block, len(events), built, first=lineno == 0)
            except LineError as err:
                raise CommandError(f"{label}:{lineno + err.index + 1}: {err.message}") from None
            events.extend(got)
            lineno += lines
    return events


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """The cyclic garbage collector off for the block (as it was after)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextlib.contextmanager
def frozen() -> Iterator[None]:
    """Every object alive now out of the cyclic collector's reach (:func:`gc.freeze`), and the collector off for the
    block (as it was after): the events read live until the end and hold no cycles, and matching makes no cyclic
    garbage (a run, a Kleene cell, a record, a buffer are freed by their reference counts:
    ``tests/app/test_match_gc.py`` checks the pack and its alerts leave nothing for the collector).  With the collector
    on, each collection while matching scanned the evaluators' growing state again and again: 1.3 of the 5.0 CPU s of
    the issue-25 pack (0.85 s in six full collections), 0.2 s of Q4's 2.1.  What the block made is frozen too before
    the collector is back: all of it is still in the youngest generation, which the next allocation would have the
    collector scan whole (0.33 CPU s after the pack).  Both are left frozen: the command ends there, and unfreezing
    cost Q1 of the issue-20 benchmark a tenth of its time; frozen objects are still freed when their last reference
    goes (only cyclic garbage among them would stay -- an evaluator that holds a bound method of its own, once
    dropped -- in a process that runs ``hcep match`` in-process many times)."""
    gc.freeze()
    with no_collection():
        try:
            yield
        finally:
            gc.freeze()


def parse_lines(stream: Iterable[bytes], label: str, decoder: EventDecoder) -> list[Event]:
    """Decode every line with ``decoder`` (an :class:`engine.events.EventDecoder`); the first bad one is an error."""
    from engine.events import EventError

    events: list[Event] = []
    for lineno, raw in enumerate(stream, 1):
        try:
            obj = decoder.loads(raw, lineno == 1)
        except ValueError as err:
            raise CommandError(f"{label}:{lineno}: {err}") from None
        if obj is None:
            continue
        try:
            # seq: the event's 0-based input position (its id when it has none).
            ev = decoder.event(obj, len(events))
        except EventError as err:
            raise CommandError(f"{label}:{lineno}: invalid event: {err}") from None
        if decoder.too_wide(ev.tlo, ev.thi):
            raise CommandError(f"{label}:{lineno}: {decoder.wide_reason(ev)}")
        events.append(ev)
    return events

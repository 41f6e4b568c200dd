"""Read one event log incrementally: decode each file, return complete lines, know when the log is finished.

A file is read through one open handle, so the rename of ``X.inprogress`` to ``X`` (same inode) changes nothing for
the reader; a rolling log's file N is finished once file N+1 exists (Spark closes N before it opens N+1), and the
whole log once ``appstatus_<app>`` has lost its ``.inprogress``.  Only complete lines are handed on while the log
grows; a finished file's last line counts even without its newline.  A block that does not decode stops that file
(dead letter ``file@offset``): a block codec cannot resynchronise.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import BinaryIO

from collectors.spark import layout
from collectors.spark.codecs import CodecError, Decoder, decoder
from collectors.spark.events import Event
from collectors.spark.listener import ListenerParser

CHUNK = 1 << 20


class FileReader:
    """One file's complete lines, as they appear."""

    def __init__(self, file: layout.LogFile) -> None:
        self.file = file
        self.path = file.path
        # A single ``X.inprogress`` may be renamed to ``X`` between the listing and the open.
        self._renamed = file.path[: -len(layout.IN_PROGRESS)] if file.path.endswith(layout.IN_PROGRESS) else None
        self.lineno = 0
        self.broken = False
        self._handle: BinaryIO | None = None
        self._decoder: Decoder = decoder(file.codec)
        self._rest = b""  # decoded bytes after the last newline

    def lines(self, on_bytes: Callable[[int], None] | None = None) -> Iterator[tuple[int, str]]:
        """The complete lines written since the last call (raises :class:`CodecError` on a corrupt block)."""
        if self.broken:
            return
        if self._handle is None:
            try:
                self._handle = open(self.path, "rb")  # noqa: SIM115 - closed by close(); kept open across the rename
            except FileNotFoundError:
                if self._renamed is None:
                    raise
                self.path = self._renamed
                self._handle = open(self.path, "rb")  # noqa: SIM115
        while True:
            data = self._handle.read(CHUNK)
            if not data:
                return
            if on_bytes is not None:
                on_bytes(len(data))
            try:
                text = self._rest + self._decoder.feed(data)
            except CodecError:
                self.broken = True
                raise
            cut = text.rfind(b"\n")
            if cut < 0:
                self._rest = text
                continue
            self._rest = text[cut + 1 :]
            for raw in text[:cut].split(b"\n"):
                self.lineno += 1
                yield self.lineno, raw.rstrip(b"\r").decode("utf-8", errors="replace")

    def tail(self) -> tuple[str | None, str | None]:
        """At the end of a finished file: its last line if it had no newline, and why the stream ended badly."""
        rest, self._rest = self._rest, b""
        line = rest.rstrip(b"\r").decode("utf-8", errors="replace") if rest.strip() else None
        if line is not None:
            self.lineno += 1
        return line, self._decoder.close()

    def unfinished(self) -> bool:
        """Bytes the writer has not finished: a line without its newline, or half a compressed block."""
        return bool(self._rest.strip()) or self._decoder.pending > 0

    @property
    def offset(self) -> int:
        return self._decoder.offset

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class LogTail:
    """One event log followed to its end: :meth:`events` yields the events of what was written since the last look.

    ``committed`` maps a file (by :meth:`layout.EventLog.source`, stable across the rename) to the lines consumed
    before a restart: they are fed to the parser again as replays (its state rebuilds, their events are not emitted
    twice).  ``consumed`` is the same for this run.
    """

    def __init__(self, log: layout.EventLog, parser: ListenerParser, committed: dict[str, int] | None = None) -> None:
        self.log = log
        self.parser = parser
        self.committed = dict(committed or {})
        self.consumed: dict[str, int] = {}
        self.done = False
        self.files_read = 0
        self._reader: FileReader | None = None
        self._finished_index = 0  # rolling: files up to this index are finished

    def events(self, batch: bool = False, on_bytes: Callable[[int], None] | None = None) -> Iterator[Event]:
        """New events.  ``batch``: this is the only look (an unfinished log's partial last line is counted as such)."""
        if self.done:
            return
        self._refresh()
        while True:
            if self._reader is None:
                nxt = self._next_file()
                if nxt is None:
                    break
                self._reader = FileReader(nxt)
                self.parser.source, self.parser.path = self.log.source(nxt), nxt.path
                self.files_read += 1
            reader = self._reader
            yield from self._drain(reader, on_bytes)
            if not self._file_finished(reader.file):
                if batch and not reader.broken and reader.unfinished():
                    self.parser.partial()
                break
            yield from self._end_file(reader)
            self._reader = None
            if not self.log.rolling:
                break
        if batch or (self._reader is None and self.log.complete and self._next_file() is None):
            yield from self.parser.finish()
            self.done = True
            self.close()

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # -- internals ---------------------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        """Look at the log's files again: the rename of a single file, new rolling files, the app status."""
        log = self.log
        if log.rolling:
            fresh = layout.rolling_log(log.path)
            if fresh is not None:
                log.files, log.complete = fresh.files, fresh.complete
            return
        if log.complete:
            return
        final = os.path.join(os.path.dirname(log.path), log.key)
        if os.path.exists(final):  # renamed: the writer closed it, everything is in
            log.complete = True
        elif not os.path.exists(log.path):
            log.complete = True  # deleted under us: finish what the open handle still reads

    def _next_file(self) -> layout.LogFile | None:
        if not self.log.rolling:
            return self.log.files[0] if self.files_read == 0 else None
        for file in self.log.files:
            if file.index > self._finished_index:
                return file
        return None

    def _file_finished(self, file: layout.LogFile) -> bool:
        if not self.log.rolling:
            return self.log.complete
        return self.log.complete or any(f.index > file.index for f in self.log.files)

    def _drain(self, reader: FileReader, on_bytes: Callable[[int], None] | None) -> Iterator[Event]:
        name = self.log.source(reader.file)  # stable across the rename
        replay_until = self.committed.get(name, 0)
        try:
            for lineno, text in reader.lines(on_bytes):
                yield from self.parser.feed(text, lineno, replay=lineno <= replay_until)
                self.consumed[name] = lineno
        except CodecError as err:
            self.parser.dead(f"{reader.path}@{err.offset}", f"undecodable event log, rest of the file skipped: {err}")
        except OSError as err:
            reader.broken = True
            self.parser.dead(reader.path, f"unreadable event log: {err}")

    def _end_file(self, reader: FileReader) -> Iterator[Event]:
        if not reader.broken:
            line, problem = reader.tail()
            if problem is not None:  # the file ends inside a compressed block: the text after it is a fragment
                self.parser.dead(f"{reader.path}@{reader.offset}", f"truncated event log: {problem}", line or "")
            elif line is not None:
                name = self.log.source(reader.file)
                yield from self.parser.feed(line, reader.lineno, replay=reader.lineno <= self.committed.get(name, 0))
                self.consumed[name] = reader.lineno
        reader.close()
        self._finished_index = reader.file.index

"""Follow growing log files through rotation, with read positions persisted so a restart neither skips nor repeats.

- Only complete lines are returned; a partial last line waits for its newline (a rotated-away file is finished, so
  its last line counts even without one).
- Rotation by rename (``syslog`` -> ``syslog.1``, new ``syslog``): the old file is read to its end through the still
  open handle, then the new one from its start.  Rotation by copy-and-truncate: a file that shrank, or whose first
  line changed, is read again from its start.  Each such restart of a path is a new *generation*; ``Line.source`` is
  ``path`` for generation 0 and ``path~N`` after, so ids built from (source, line number) stay unique.
- :meth:`Tailer.commit` writes the positions of every line returned so far to a small JSON state file atomically
  (temp file, fsync, rename).  Call it after the events of those lines are safely written: a restart then resumes
  exactly there.  (A crash between writing events and committing repeats that one batch: at-least-once.)
- On restart, a file that was rotated while we were down is found by its inode among its siblings and finished first.
  With ``replay=True`` each file is re-read from its start and the lines already consumed come back flagged
  ``replay`` -- a stateful parser can rebuild its state from them while their events are dropped.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, BinaryIO

_CHUNK = 4 * 1024 * 1024
_HEAD = 4096


@dataclass
class Line:
    path: str
    source: str
    lineno: int
    offset: int
    text: str
    replay: bool = False


@dataclass
class _File:
    path: str
    handle: BinaryIO | None = None
    dev: int = 0
    ino: int = 0
    gen: int = 0
    offset: int = 0  # after the last complete line returned
    lineno: int = 0
    head: str = ""  # hash of the first line, to notice copy-truncate followed by regrowth
    size: int = -1
    replay_until: int = 0  # lines ending at or before this offset are replays
    missing_since: float | None = None
    retired: list[tuple[BinaryIO, int, int, int, int]] = field(default_factory=list)

    @property
    def source(self) -> str:
        return self.path if self.gen == 0 else f"{self.path}~{self.gen}"


def _head_hash(handle: BinaryIO) -> str:
    pos = handle.tell()
    handle.seek(0)
    first = handle.readline(_HEAD)
    handle.seek(pos)
    if not first.endswith(b"\n"):
        return ""
    return hashlib.blake2b(first, digest_size=8).hexdigest()


class Tailer:
    """Follows a set of paths; :meth:`poll` returns the new complete lines of all of them."""

    def __init__(self, state_path: str | None = None, *, replay: bool = True, forget_after: float = 300.0) -> None:
        self.state_path = state_path
        self.replay = replay
        self.forget_after = forget_after
        self.files: dict[str, _File] = {}
        self.extra: dict[str, Any] = {}
        self._saved: dict[str, dict[str, Any]] = {}
        if state_path and os.path.exists(state_path):
            try:
                with open(state_path, encoding="utf-8") as handle:
                    data = json.load(handle)
                self._saved = dict(data.get("files", {}))
                self.extra = dict(data.get("extra", {}))
            except (OSError, ValueError):
                self._saved = {}

    # -- public ------------------------------------------------------------------------------------------------------
    def watch(self, path: str) -> None:
        path = os.path.abspath(path)
        if path not in self.files:
            self.files[path] = _File(path)

    def poll(self) -> list[Line]:
        out: list[Line] = []
        for tracked in list(self.files.values()):
            self._poll_one(tracked, out)
        return out

    def commit(self) -> None:
        """Persist the position after the last line returned by :meth:`poll`, atomically."""
        if not self.state_path:
            return
        files = dict(self._saved)
        for path, f in self.files.items():
            if f.handle is None:
                if f.dev:  # was followed, then forgotten (deleted long ago)
                    files.pop(path, None)
                continue
            files[path] = {
                "dev": f.dev,
                "ino": f.ino,
                "gen": f.gen,
                "offset": f.offset,
                "lineno": f.lineno,
                "head": f.head,
            }
        self._saved = files
        data = {"version": 1, "files": files, "extra": self.extra}
        directory = os.path.dirname(os.path.abspath(self.state_path))
        os.makedirs(directory, exist_ok=True)
        tmp = f"{self.state_path}.tmp.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.state_path)

    def close(self) -> None:
        for f in self.files.values():
            for retired in f.retired:
                retired[0].close()
            f.retired.clear()
            if f.handle is not None:
                f.handle.close()
                f.handle = None

    # -- internals ---------------------------------------------------------------------------------------------------
    def _poll_one(self, f: _File, out: list[Line]) -> None:
        self._drain_retired(f, out)
        try:
            st = os.stat(f.path)
        except OSError:
            if f.handle is not None:  # renamed away or deleted: finish what is there
                self._read(f, out, final=False)
                if f.missing_since is None:
                    f.missing_since = time.monotonic()
                elif time.monotonic() - f.missing_since > self.forget_after:
                    self._read(f, out, final=True)
                    f.handle.close()
                    f.handle = None
            return
        f.missing_since = None
        if f.handle is None:
            self._open(f, st, out)
        elif (st.st_dev, st.st_ino) != (f.dev, f.ino):
            # Rotated by rename: finish the old file (through our handle), then start the new one.
            self._read(f, out, final=True)
            f.handle.close()
            f.handle = None
            f.gen += 1
            self._start(f, st, resume=None)
        elif st.st_size < f.offset or (st.st_size != f.size and f.head and _head_hash(f.handle) != f.head):
            # Copy-truncate (possibly already regrown): the content starts over.
            f.gen += 1
            f.offset = f.lineno = 0
            f.head = ""
            f.replay_until = 0
        f.size = st.st_size
        if f.handle is not None:
            self._read(f, out, final=False)

    def _open(self, f: _File, st: os.stat_result, out: list[Line]) -> None:
        saved = self._saved.get(f.path)
        if saved is None:
            self._start(f, st, resume=None)
            return
        same = (st.st_dev, st.st_ino) == (saved.get("dev"), saved.get("ino"))
        if not same:
            # Rotated while we were down: finish the old file if it can still be found next to the new one.
            old = self._find_rotated(f.path, int(saved.get("dev", -1)), int(saved.get("ino", -1)))
            if old is not None:
                handle = open(old, "rb")  # noqa: SIM115 - kept in f.retired until drained
                offset = int(saved.get("offset", 0))
                start = 0 if self.replay else offset
                f.retired.append(
                    (handle, int(saved.get("gen", 0)), start, offset, 0 if self.replay else int(saved.get("lineno", 0)))
                )
                self._drain_retired(f, out)
            f.gen = int(saved.get("gen", 0)) + 1
            self._start(f, st, resume=None)
            return
        f.gen = int(saved.get("gen", 0))
        self._start(f, st, resume=saved)
        if f.head and saved.get("head") and f.head != saved.get("head") or st.st_size < int(saved.get("offset", 0)):
            f.gen += 1  # truncated (and maybe rewritten) while we were down
            f.offset = f.lineno = f.replay_until = 0

    def _start(self, f: _File, st: os.stat_result, resume: dict[str, Any] | None) -> None:
        f.handle = open(f.path, "rb")  # noqa: SIM115 - closed on rotation or close()
        f.dev, f.ino = st.st_dev, st.st_ino
        f.head = _head_hash(f.handle)
        f.size = st.st_size
        if resume is None:
            f.offset = f.lineno = f.replay_until = 0
        elif self.replay:
            f.offset, f.lineno = 0, 0
            f.replay_until = int(resume.get("offset", 0))
        else:
            f.offset, f.lineno = int(resume.get("offset", 0)), int(resume.get("lineno", 0))
            f.replay_until = 0

    @staticmethod
    def _find_rotated(path: str, dev: int, ino: int) -> str | None:
        directory, base = os.path.split(path)
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return None
        for name in names:
            if name == base or not name.startswith(base):
                continue
            candidate = os.path.join(directory, name)
            try:
                st = os.stat(candidate)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (dev, ino):
                return candidate
        return None

    def _drain_retired(self, f: _File, out: list[Line]) -> None:
        while f.retired:
            handle, gen, start, replay_until, lineno = f.retired.pop(0)
            tmp = _File(f.path, handle=handle, gen=gen, offset=start, lineno=lineno, replay_until=replay_until)
            self._read(tmp, out, final=True)
            handle.close()

    def _read(self, f: _File, out: list[Line], final: bool) -> None:
        assert f.handle is not None
        handle = f.handle
        handle.seek(f.offset)
        source = f.source
        pending = b""
        while True:
            data = handle.read(_CHUNK)
            eof = len(data) < _CHUNK
            data = pending + data
            pending = b""
            if not data:
                break
            cut = len(data) - 1 if final and eof else data.rfind(b"\n")
            if cut < 0:  # no complete line yet (or one longer than a chunk: keep reading)
                if eof:
                    break
                pending = data
                continue
            pos = f.offset
            parts = data[: cut + 1].split(b"\n")
            if parts[-1] == b"":
                parts.pop()
            for part in parts:
                f.lineno += 1
                end = min(pos + len(part) + 1, f.offset + cut + 1)
                text = part.rstrip(b"\r").decode("utf-8", errors="replace")
                out.append(Line(f.path, source, f.lineno, pos, text, replay=end <= f.replay_until))
                pos = end
            f.offset += cut + 1
            if eof:
                break
            pending = data[cut + 1 :]
            handle.seek(f.offset + len(pending))
        if not f.head:
            f.head = _head_hash(handle)

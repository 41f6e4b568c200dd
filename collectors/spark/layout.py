"""Where Spark puts its event logs and how it names them (Spark's ``EventLogFileWriters``), nothing else.

``spark.eventLog.dir`` is flat.  In it:

- a **single-file** log ``<app>[_<attempt>][.<codec>]``, named ``....inprogress`` while the application runs and
  renamed when it stops (``spark.eventLog.rolling.enabled=false``);
- a **rolling** log (Spark 4's default): a directory ``eventlog_v2_<app>[_<attempt>]`` holding ``events_<N>_<app>
  [.<codec>]`` files (the writer closes file N before it opens N+1) and an empty ``appstatus_<app>[.inprogress]``
  that loses its suffix when the application stops.  The history server may compact old files into
  ``events_<N>_<app>[.<codec>].compact``, which then replaces the files before it.

``<app>`` is the App ID as Spark sanitised it for a file name; ``<codec>`` one of :data:`codecs.CODECS`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from collectors.spark.codecs import CODECS

IN_PROGRESS = ".inprogress"
COMPACTED = ".compact"
ROLLING_DIR = "eventlog_v2_"
_EVENTS_RE = re.compile(r"^events_(\d+)_(.+)$")


@dataclass(frozen=True)
class LogFile:
    """One file of an event log."""

    path: str
    codec: str | None
    index: int = 0  # rolling: the N of events_<N>_...; 0 for a single-file log
    compact: bool = False

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


@dataclass
class EventLog:
    """One application attempt's log: ``key`` names it stably (a single file's name without ``.inprogress``, or the
    rolling directory's name); ``app`` is Spark's name for the application attempt."""

    key: str
    app: str
    rolling: bool
    path: str
    files: list[LogFile] = field(default_factory=list)
    complete: bool = False

    def source(self, file: LogFile) -> str:
        """The name the ids of ``file``'s events are built from (stable across the ``.inprogress`` rename)."""
        return f"{self.key}/{file.name}" if self.rolling else self.key


def split_codec(name: str) -> tuple[str, str | None] | None:
    """``local-1.zstd`` -> (``local-1``, ``zstd``); ``local-1`` -> (``local-1``, None); None for another suffix.

    Spark's sanitised app ids hold no dots, so the first dot starts the codec."""
    base, dot, ext = name.partition(".")
    if not base:
        return None
    if not dot:
        return base, None
    return (base, ext) if ext in CODECS else None


def parse_single(name: str) -> tuple[str, str | None, bool] | None:
    """A single-file log's (app, codec, in progress) from its file name, or None if it is not one."""
    if name.startswith((".", ROLLING_DIR, "events_", "appstatus_")):
        return None
    in_progress = name.endswith(IN_PROGRESS)
    split = split_codec(name[: -len(IN_PROGRESS)] if in_progress else name)
    if split is None:
        return None
    return split[0], split[1], in_progress


def _looks_plain(path: str) -> bool:
    """An uncompressed log starts with a JSON object (or is still empty): tells it from stray files."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64).lstrip()
    except OSError:
        return False
    return head[:1] in (b"", b"{")


def single_log(path: str) -> EventLog | None:
    """The single-file log at ``path`` (either name of it), or None if the name is not an event log's."""
    name = os.path.basename(path)
    parsed = parse_single(name)
    if parsed is None:
        return None
    app, codec, in_progress = parsed
    if codec is None and not _looks_plain(path):
        return None
    key = name[: -len(IN_PROGRESS)] if in_progress else name
    return EventLog(key=key, app=app, rolling=False, path=path, files=[LogFile(path, codec)], complete=not in_progress)


def rolling_log(path: str) -> EventLog | None:
    """The rolling log in directory ``path`` with its current files, or None if it is not one."""
    name = os.path.basename(os.path.normpath(path))
    if not name.startswith(ROLLING_DIR) or not os.path.isdir(path):
        return None
    app = name[len(ROLLING_DIR) :]
    log = EventLog(key=name, app=app, rolling=True, path=path)
    try:
        entries = sorted(os.listdir(path))
    except OSError:
        return log
    files: list[LogFile] = []
    for entry in entries:
        if entry == f"appstatus_{app}":
            log.complete = True
            continue
        m = _EVENTS_RE.match(entry)
        if m is None:
            continue
        rest = m.group(2)
        compact = rest.endswith(COMPACTED)
        if compact:
            rest = rest[: -len(COMPACTED)]
        split = split_codec(rest)
        if split is None or split[0] != app:
            continue
        files.append(LogFile(os.path.join(path, entry), split[1], int(m.group(1)), compact))
    last_compact = max((f.index for f in files if f.compact), default=0)
    files = [f for f in files if f.index >= last_compact and (f.compact or f.index > last_compact)]
    log.files = sorted(files, key=lambda f: f.index)
    return log


#: What a file or directory that is not an event log Spark 1.3+ writes looks like, for the message that names it.
_LEGACY_FILES = ("EVENT_LOG_", "SPARK_VERSION_", "APPLICATION_COMPLETE", "COMPRESSION_CODEC_")


def is_legacy_dir(path: str) -> bool:
    """A Spark 1.0-1.2 log directory (``EVENT_LOG_<n>`` beside ``SPARK_VERSION_<v>``)."""
    try:
        return any(e.startswith(_LEGACY_FILES) for e in os.listdir(path))
    except OSError:
        return False


def unread_reason(path: str) -> str:
    """Why ``path`` (found in a log directory, or given) is not read, naming the format when it is a known one."""
    name = os.path.basename(os.path.normpath(path))
    if os.path.isdir(path):
        try:
            entries = os.listdir(path)
        except OSError as err:
            return f"unreadable directory ({err.strerror})"
        if entries and is_legacy_dir(path):
            return (
                "a Spark 1.0-1.2 log directory (EVENT_LOG_<n>, SPARK_VERSION_<v>): the legacy format, which Spark's "
                "own History Server no longer reads either"
            )
        if name.startswith(ROLLING_DIR):
            return "a rolling event-log directory without events_<N>_<app> files"
        return "a directory (event logs sit flat in spark.eventLog.dir; only eventlog_v2_* directories are read)"
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError as err:
        return f"unreadable ({err.strerror})"
    if head[:2] == b"\x1f\x8b":
        return "gzip-compressed (a Databricks rotated event-log part?): Spark itself never writes gzip event logs"
    if name.endswith(".jhist") or head.startswith(b"Avro-Json"):
        return "a Hadoop 2 MapReduce job history file (.jhist): read it with 'hcep collect hadoop'"
    if head.startswith(b'Meta VERSION="1"') or head.startswith(b"Job JOBID="):
        return "a Hadoop 1 (MRv1) JobTracker history file: not read by any hcep collector"
    if head.lstrip()[:5] == b"<?xml":
        return "an XML file (a Hadoop job configuration?)"
    parsed = parse_single(name)
    if parsed is None:
        base, dot, ext = name.partition(".")
        if dot and base and not name.startswith(("events_", "appstatus_")):
            return f"unknown suffix '.{ext}' (Spark names event logs <app>[.{'|.'.join(CODECS)}][.inprogress])"
        return "not named as a Spark event log"
    return "does not start with a JSON object (not a plain event log)"


def discover(root: str, skipped: list[str] | None = None) -> list[EventLog]:
    """The event logs in ``root``: a log directory (flat, as Spark writes it), one rolling log's directory, or one
    single-file log.  A log seen under both names (renamed between two looks) counts once, finished."""
    if os.path.isfile(root):
        log = single_log(root)
        if log is None and skipped is not None:
            skipped.append(root)
        return [log] if log is not None else []
    rolling = rolling_log(root)
    if rolling is not None:
        return [rolling]
    if is_legacy_dir(root):  # given as LOGDIR itself: refused as it is inside one
        if skipped is not None:
            skipped.append(root)
        return []
    logs: dict[str, EventLog] = {}
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        log = rolling_log(path) if os.path.isdir(path) else single_log(path)
        if log is None:
            if skipped is not None and not entry.startswith("."):
                skipped.append(path)
            continue
        known = logs.get(log.key)
        if known is None or (log.complete and not known.complete):
            logs[log.key] = log
    return list(logs.values())

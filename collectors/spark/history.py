"""Read applications from a running Spark History Server instead of a log directory (how Dr. Elephant reads Spark).

The REST API's ``/api/v1/applications/{id}[/{attempt}]/logs`` hands out each application attempt's event log files
as a zip, byte for byte as Spark wrote them (single file or rolling directory, any codec).  They are unpacked into a
private temporary directory and read by the same code as a log directory: the events, and their ids (made from the
log's file names), are those ``hcep collect spark`` gives on the History Server's own ``spark.history.fs.logDirectory``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from collectors.hadoop.deadletter import DeadLetterSink
from collectors.spark.collect import Summary, collect
from collectors.spark.events import DEFAULT_DELTA, Event
from collectors.spark.layout import unread_reason

#: Seconds to wait for one answer (the logs of a large application are tens of MB).
TIMEOUT = 300.0


class HistoryServerError(RuntimeError):
    """The History Server could not be asked (unreachable, not a History Server, an error status)."""


@dataclass(frozen=True)
class Attempt:
    """One application attempt the History Server lists."""

    app_id: str
    attempt: str | None
    completed: bool

    @property
    def path(self) -> str:
        app = urllib.parse.quote(self.app_id, safe="")
        return f"applications/{app}" + (f"/{urllib.parse.quote(self.attempt, safe='')}" if self.attempt else "")

    def __str__(self) -> str:
        return self.app_id + (f" attempt {self.attempt}" if self.attempt else "")


class HistoryClient:
    """The few REST calls the collector needs, over ``urllib`` (``url``: ``http://host:18080``)."""

    def __init__(self, url: str, timeout: float = TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _open(self, path: str) -> Any:
        target = f"{self.url}/api/v1/{path}"
        try:
            return urllib.request.urlopen(target, timeout=self.timeout)  # noqa: S310 - the operator's own URL
        except urllib.error.HTTPError as err:
            raise HistoryServerError(f"{target}: HTTP {err.code} {err.reason}") from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise HistoryServerError(f"cannot reach the History Server at {self.url}: {reason}") from None

    def attempts(self) -> list[Attempt]:
        """Every application attempt it lists, oldest application first."""
        with self._open("applications") as resp:
            try:
                apps = json.loads(resp.read())
            except ValueError as err:
                raise HistoryServerError(f"{self.url}/api/v1/applications is not JSON: {err}") from None
        if not isinstance(apps, list):
            raise HistoryServerError(f"{self.url}/api/v1/applications is not a list: not a Spark History Server?")
        out: list[Attempt] = []
        for app in reversed(apps):  # the API lists the newest first
            for attempt in reversed(app.get("attempts") or []):
                out.append(Attempt(str(app["id"]), attempt.get("attemptId"), bool(attempt.get("completed"))))
        return out

    def download_logs(self, attempt: Attempt, target: str) -> None:
        """Unpack the attempt's event-log files into directory ``target`` (as they sit in the log directory)."""
        zip_path = os.path.join(target, ".logs.zip")
        with self._open(f"{attempt.path}/logs") as resp, open(zip_path, "wb") as out:
            shutil.copyfileobj(resp, out, 1 << 20)
        try:
            with zipfile.ZipFile(zip_path) as archive:
                for info in archive.infolist():
                    name = os.path.normpath(info.filename)
                    if name.startswith(("..", "/")) or os.path.isabs(name):
                        raise HistoryServerError(f"{attempt}: unsafe path in the logs zip: {info.filename!r}")
                    if not info.is_dir():
                        archive.extract(info, target)
        except zipfile.BadZipFile as err:
            raise HistoryServerError(f"{attempt}: the logs are not a zip: {err}") from None
        finally:
            os.remove(zip_path)


class _Relabelled(DeadLetterSink):
    """Dead letters of a downloaded log, named after where it came from (``URL app [attempt]/file:line``): the
    temporary copy they were read from is gone by the time anyone looks."""

    def __init__(self, inner: DeadLetterSink, tmp: str, label: str) -> None:
        super().__init__()
        self.inner, self.tmp, self.label = inner, tmp.rstrip(os.sep) + os.sep, label

    def write(self, source: str, location: str, reason: str, raw: str | bytes) -> None:
        self.inner.write(source.replace(self.tmp, self.label), location.replace(self.tmp, self.label), reason, raw)


def collect_history(
    url: str,
    *,
    delta: float = DEFAULT_DELTA,
    deadletter: DeadLetterSink | None = None,
    summary: Summary | None = None,
    on_bytes: Callable[[int], None] | None = None,
    client: HistoryClient | None = None,
) -> Iterator[Event]:
    """Every event of every application attempt the History Server at ``url`` lists, attempt by attempt.  An attempt
    whose logs cannot be had is named in ``summary.skipped_paths`` (``<url> <app> [attempt]: why``); an unreachable
    server raises :class:`HistoryServerError`."""
    client = client if client is not None else HistoryClient(url)
    summary = summary if summary is not None else Summary()
    deadletter = deadletter if deadletter is not None else DeadLetterSink()
    for attempt in client.attempts():
        with tempfile.TemporaryDirectory(prefix="hcep-spark-history-") as tmp:
            try:
                client.download_logs(attempt, tmp)
            except HistoryServerError as err:
                summary.skipped += 1
                summary.skipped_paths.append(f"{client.url} {attempt}: {err}")
                continue
            part = Summary()
            part.stats = summary.stats
            sink = _Relabelled(deadletter, tmp, f"{client.url} {attempt}/")
            yield from collect(tmp, delta=delta, deadletter=sink, summary=part, on_bytes=on_bytes)
            summary.logs += part.logs
            summary.unfinished += part.unfinished
            summary.files += part.files
            summary.written += part.written
            summary.skipped += part.skipped
            summary.skipped_paths += [
                f"{client.url} {attempt}: {os.path.basename(p)}: {unread_reason(p)}" for p in part.skipped_paths
            ]

"""Read metric history from gmetad's RRD files: ``<rrd_rootdir>/<cluster>/<host>/<metric>.rrd`` (DS ``sum``).

This is how the SASE++ case study fed the engine (gmetad writes RRDs, the engine reads them), and it lets a history be
replayed after the fact.  ``__SummaryInfo__`` directories (gmetad's per-cluster and per-grid sums) are skipped: the
events are per host.  A file that rrdtool cannot read is dead-lettered and skipped, never fatal.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors.hadoop.deadletter import DeadLetterSink

SUMMARY_DIR = "__SummaryInfo__"


class RrdFormatError(ValueError):
    """A file that is not a well-formed RRD (checked before librrd reads it); the message says what is wrong."""


class RrdUnavailable(ImportError):
    """The ``rrdtool`` Python binding is not installed (``bash deploy/ganglia/install.sh`` installs it)."""


def _rrdtool() -> Any:
    try:
        import rrdtool
    except ImportError as err:
        raise RrdUnavailable(
            f"the rrdtool Python binding is missing ({err}): run 'bash deploy/ganglia/install.sh'"
        ) from None
    return rrdtool


@dataclass(frozen=True, slots=True)
class RrdFile:
    cluster: str
    host: str
    metric: str
    path: Path


def discover(
    rootdir: str | os.PathLike[str],
    *,
    cluster: str | None = None,
    hosts: Container[str] | None = None,
    metrics: Container[str] | None = None,
) -> list[RrdFile]:
    """The per-host RRD files under ``rootdir``, sorted.  Raises FileNotFoundError when ``rootdir`` is not a dir."""
    root = Path(rootdir)
    if not root.is_dir():
        raise FileNotFoundError(f"no RRD directory {root}")
    found: list[RrdFile] = []
    for cdir in sorted(p for p in root.iterdir() if p.is_dir() and p.name != SUMMARY_DIR):
        if cluster is not None and cdir.name != cluster:
            continue
        for hdir in sorted(p for p in cdir.iterdir() if p.is_dir() and p.name != SUMMARY_DIR):
            if hosts is not None and hdir.name not in hosts:
                continue
            for f in sorted(hdir.glob("*.rrd")):
                if metrics is None or f.stem in metrics:
                    found.append(RrdFile(cdir.name, hdir.name, f.stem, f))
    return found


# The on-disk layout of rrdtool's format versions 0003/0004 on a 64-bit little-endian host (rrd_format.h).
_HEAD = 128  # stat_head: cookie[4], version[5], float_cookie (at 16), ds_cnt, rra_cnt, pdp_step, par[10]
_DS_DEF = 120  # ds_nam[20], dst[20], par[10]
_RRA_DEF = 120  # cf_nam[20], row_cnt (at 24), pdp_cnt, par[10] (xff first)
_LIVE = 16  # last_up, last_up_usec
_PDP_PREP = 112  # last_ds[30], scratch[10]
_CDP_PREP = 80  # scratch[10], per DS and RRA
_FLOAT_COOKIE = 8.642135e130
_DS_TYPES = {b"GAUGE", b"COUNTER", b"DERIVE", b"ABSOLUTE", b"DCOUNTER", b"DDERIVE"}
_CFS = {b"AVERAGE", b"MIN", b"MAX", b"LAST"}


def check_rrd(path: str | os.PathLike[str]) -> None:
    """Raise :class:`RrdFormatError` unless the file's header and size are those of an RRD that gmetad writes.

    librrd trusts the header: a corrupt count or name made it corrupt the heap and abort the process (found by
    fuzzing), so the structure is checked here first -- magic, version, counts, names, data-source types,
    consolidation functions, row pointers and the exact size they imply.  Only the number values are left to it.
    """
    import struct

    with open(path, "rb") as f:
        data = f.read(_HEAD + 1000 * (_DS_DEF + _RRA_DEF))  # enough for every header this accepts
        size = os.fstat(f.fileno()).st_size
    if len(data) < _HEAD:
        raise RrdFormatError(f"too short for an RRD header ({size} bytes)")
    if data[:4] != b"RRD\0" or data[4:9] not in (b"0003\0", b"0004\0"):
        raise RrdFormatError("not an RRD file of format version 0003/0004")
    if struct.unpack_from("<d", data, 16)[0] != _FLOAT_COOKIE:
        raise RrdFormatError("wrong float cookie (another architecture, or corrupt)")
    ds_cnt, rra_cnt, pdp_step = struct.unpack_from("<QQQ", data, 24)
    if not (1 <= ds_cnt <= 1000 and 1 <= rra_cnt <= 1000 and 1 <= pdp_step <= 10**9):
        raise RrdFormatError(f"absurd header: {ds_cnt} data sources, {rra_cnt} archives, step {pdp_step}")
    defs_end = _HEAD + ds_cnt * _DS_DEF + rra_cnt * _RRA_DEF
    if len(data) < defs_end:
        raise RrdFormatError(f"cut short in its definitions ({size} bytes)")

    def name(raw: bytes, what: str) -> bytes:
        end = raw.find(b"\0")
        if end <= 0 or not raw[:end].replace(b"_", b"").replace(b"-", b"").isalnum():
            raise RrdFormatError(f"bad {what} name {raw[: max(end, 0)]!r}")
        return raw[:end]

    for i in range(ds_cnt):
        off = _HEAD + i * _DS_DEF
        name(data[off : off + 20], "data source")
        dst = name(data[off + 20 : off + 40], "data source type")
        if dst not in _DS_TYPES:
            raise RrdFormatError(f"unsupported data source type {dst!r}")
    rows = []
    for i in range(rra_cnt):
        off = _HEAD + ds_cnt * _DS_DEF + i * _RRA_DEF
        cf = name(data[off : off + 20], "consolidation function")
        if cf not in _CFS:
            raise RrdFormatError(f"unsupported consolidation function {cf!r}")
        row_cnt, pdp_cnt = struct.unpack_from("<QQ", data, off + 24)
        xff = struct.unpack_from("<d", data, off + 40)[0]
        if not (1 <= row_cnt <= 10**8 and 1 <= pdp_cnt <= 10**8 and 0.0 <= xff <= 1.0):
            raise RrdFormatError(f"absurd archive #{i}: {row_cnt} rows of {pdp_cnt} steps, xff {xff}")
        rows.append(row_cnt)
    ptr_off = defs_end + _LIVE + ds_cnt * _PDP_PREP + ds_cnt * rra_cnt * _CDP_PREP
    expected = ptr_off + 8 * rra_cnt + 8 * ds_cnt * sum(rows)
    if size != expected:
        raise RrdFormatError(f"{size} bytes where its header implies {expected}")
    with open(path, "rb") as f:
        f.seek(ptr_off)
        ptrs = struct.unpack(f"<{rra_cnt}Q", f.read(8 * rra_cnt))
    for i, (cur, n) in enumerate(zip(ptrs, rows, strict=True)):
        if cur >= n:
            raise RrdFormatError(f"archive #{i}: row pointer {cur} beyond its {n} rows")


def fetch(
    path: str | os.PathLike[str], since: float, until: float | None = None, cf: str = "AVERAGE"
) -> list[tuple[float, float]]:
    """``(ts, value)`` rows of one RRD's first data source with ``since <= ts <= until``, unknown rows left out.

    A row's time is the end of its consolidation interval (as ``rrdtool fetch`` prints it).  Raises
    ``rrdtool.OperationalError`` for an unreadable file and :class:`RrdFormatError` for one that is not a well-formed
    RRD (:func:`check_rrd`: librrd is never handed a corrupt header).
    """
    rrdtool = _rrdtool()
    check_rrd(path)
    end = time.time() if until is None else until
    # Rows after the last update are unknown: not asking for them keeps a stale file's fetch short (years of rows).
    end = min(end, float(rrdtool.last(str(path))))
    if end < since:
        return []
    start = math.floor(since) - 1  # rrdtool returns the rows ending after --start: include the one ending at since
    stop = max(math.ceil(end), start + 1)
    (first, _last, step), _names, rows = rrdtool.fetch(str(path), cf, "--start", str(start), "--end", str(stop))
    out: list[tuple[float, float]] = []
    for i, row in enumerate(rows):
        ts = float(first + (i + 1) * step)
        value = row[0] if row else None
        if value is not None and since <= ts <= end:
            out.append((ts, float(value)))
    return out


def read_history(
    rootdir: str | os.PathLike[str],
    since: float,
    until: float | None = None,
    *,
    cluster: str | None = None,
    metrics: Container[str] | None = None,
    deadletter: DeadLetterSink | None = None,
) -> list[tuple[float, str, str, str, float]]:
    """Every known value since ``since``: ``(ts, cluster, host, metric, value)`` sorted by time (then cluster, host,
    metric).  Unreadable files go to ``deadletter`` and are skipped."""
    rrdtool = _rrdtool()
    rows: list[tuple[float, str, str, str, float]] = []
    for f in discover(rootdir, cluster=cluster, metrics=metrics):
        try:
            values = fetch(f.path, since, until)
        except (RrdFormatError, OSError) as err:
            if deadletter is not None:
                deadletter.write("ganglia-rrd", str(f.path), f"not a valid RRD file: {err}", "")
            continue
        except (rrdtool.OperationalError, SystemError) as err:  # SystemError: the binding's own error reporting
            if deadletter is not None:
                deadletter.write("ganglia-rrd", str(f.path), f"rrdtool cannot read it: {err}", "")
            continue
        rows.extend((ts, f.cluster, f.host, f.metric, v) for ts, v in values)
    rows.sort()
    return rows

"""Parse the XML that gmond (port 8649) and gmetad (port 8651) dump: GANGLIA_XML > GRID* > CLUSTER > HOST > METRIC.

The shape follows the DTD both daemons print at the top of every document (GRID, CLUSTER, HOST, METRIC with
EXTRA_DATA; gmetad adds HOSTS and METRICS summaries, which carry nothing per host and are skipped).  Parsing is a
single expat pass with start/end handlers and no tree, because a collector parses a whole cluster's dump every 15 s.

:func:`parse_document` raises :class:`GangliaXmlError` with a reason; :class:`XmlParser` wraps it for collectors:
never raises, counts every document, and dead-letters each bad one with its reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from xml.parsers import expat

from collectors.hadoop.deadletter import DeadLetterSink

#: METRIC/@TYPE values of the DTD.  ``string`` and ``timestamp`` values stay text; the rest are numbers.
NUMERIC_TYPES = frozenset({"int8", "uint8", "int16", "uint16", "int32", "uint32", "float", "double"})
METRIC_TYPES = NUMERIC_TYPES | {"string", "timestamp"}

#: Where each known element may appear (its allowed parents).  Unknown elements are skipped with their subtree, so a
#: newer gmond's additions do not break the collector.
_PARENTS: dict[str, frozenset[str | None]] = {
    "GANGLIA_XML": frozenset({None}),
    "GRID": frozenset({"GANGLIA_XML", "GRID"}),
    "CLUSTER": frozenset({"GANGLIA_XML", "GRID"}),
    "HOST": frozenset({"GANGLIA_XML", "CLUSTER"}),
    "METRIC": frozenset({"HOST"}),
    "HOSTS": frozenset({"GRID", "CLUSTER"}),
    "METRICS": frozenset({"GRID", "CLUSTER"}),
    "EXTRA_DATA": frozenset({"METRIC", "METRICS"}),
    "EXTRA_ELEMENT": frozenset({"EXTRA_DATA"}),
}


class GangliaXmlError(ValueError):
    """A document that is not well-formed Ganglia XML; the message is the reason."""


@dataclass(slots=True)
class MetricData:
    """One METRIC: ``val`` is a float for numeric types, the text otherwise; ``tn`` = seconds since it was reported."""

    name: str
    val: float | str
    type: str
    units: str = ""
    tn: int = 0
    tmax: int = 0
    dmax: int = 0
    slope: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def numeric(self) -> bool:
        return isinstance(self.val, float)


@dataclass(slots=True)
class HostData:
    """One HOST: ``reported`` = epoch seconds of its last heartbeat, ``tn`` = seconds since then."""

    name: str
    ip: str
    reported: int
    tn: int = 0
    tmax: int = 0
    dmax: int = 0
    metrics: dict[str, MetricData] = field(default_factory=dict)

    def is_up(self) -> bool:
        """Ganglia's own rule (web frontend, gmetad summaries): a host silent for more than 4 x TMAX is down."""
        return self.tmax <= 0 or self.tn <= 4 * self.tmax


@dataclass(slots=True)
class ClusterData:
    """One CLUSTER (``name`` is ``""`` for hosts a gmond without a cluster tag lists directly)."""

    name: str
    localtime: int | None
    hosts: list[HostData] = field(default_factory=list)
    grid: str | None = None


@dataclass(slots=True)
class GangliaDocument:
    """A parsed dump: ``source`` is ``gmond`` or ``gmetad``."""

    version: str
    source: str
    clusters: list[ClusterData] = field(default_factory=list)

    def host_count(self) -> int:
        return sum(len(c.hosts) for c in self.clusters)

    def metric_count(self) -> int:
        return sum(len(h.metrics) for c in self.clusters for h in c.hosts)


class _Builder:
    """expat handlers that build a :class:`GangliaDocument`, validating structure and attributes as they go."""

    def __init__(self) -> None:
        self.doc: GangliaDocument | None = None
        self.stack: list[str | None] = [None]  # open known elements; None stands for "no parent"
        self.skip_depth = 0
        self.grids: list[str] = []
        self.cluster: ClusterData | None = None
        self.host: HostData | None = None
        self.metric: MetricData | None = None
        self.loose: ClusterData | None = None  # hosts directly under GANGLIA_XML
        self._starts = {
            "GANGLIA_XML": self._start_GANGLIA_XML,
            "GRID": self._start_GRID,
            "CLUSTER": self._start_CLUSTER,
            "HOST": self._start_HOST,
            "HOSTS": self._start_summary,
            "METRICS": self._start_summary,
        }

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        if self.skip_depth:
            self.skip_depth += 1
            return
        stack = self.stack
        parent = stack[-1]
        # Fast paths first: a gmond dump is mostly METRIC > EXTRA_DATA > 3 x EXTRA_ELEMENT.
        if tag == "EXTRA_ELEMENT":
            if parent != "EXTRA_DATA":
                raise GangliaXmlError(f"<EXTRA_ELEMENT> inside <{parent}>")
            stack.append(tag)
            metric = self.metric
            if metric is not None and "NAME" in attrs:
                metric.extra[attrs["NAME"]] = attrs.get("VAL", "")
            return
        if tag == "EXTRA_DATA":
            if parent != "METRIC" and parent != "METRICS":
                raise GangliaXmlError(f"<EXTRA_DATA> inside <{parent}>")
            stack.append(tag)
            return
        if tag == "METRIC":
            if parent != "HOST":
                raise GangliaXmlError(f"<METRIC> inside <{parent}>" if parent else "<METRIC> as the root")
            stack.append(tag)
            self._start_METRIC(attrs)
            return
        allowed = _PARENTS.get(tag)
        if allowed is None:
            if parent is None:
                raise GangliaXmlError(f"root element is <{tag}>, expected <GANGLIA_XML>")
            self.skip_depth = 1
            return
        if parent not in allowed:
            raise GangliaXmlError(f"<{tag}> inside <{parent}>" if parent else f"<{tag}> as the root")
        stack.append(tag)
        self._starts[tag](attrs)

    def end(self, tag: str) -> None:
        if self.skip_depth:
            self.skip_depth -= 1
            return
        self.stack.pop()
        if tag == "METRIC":
            host, metric = self.host, self.metric
            assert host is not None and metric is not None
            host.metrics[metric.name] = metric
            self.metric = None
        elif tag == "HOST":
            self.host = None
        elif tag == "CLUSTER":
            self.cluster = None
        elif tag == "GRID":
            self.grids.pop()

    def _start_GANGLIA_XML(self, a: dict[str, str]) -> None:
        self.doc = GangliaDocument(version=a.get("VERSION", ""), source=a.get("SOURCE", ""))

    def _start_GRID(self, a: dict[str, str]) -> None:
        self.grids.append(_required(a, "NAME", "GRID"))

    def _start_CLUSTER(self, a: dict[str, str]) -> None:
        name = _required(a, "NAME", "CLUSTER")
        localtime = _int(a, "LOCALTIME", "CLUSTER") if "LOCALTIME" in a else None
        self.cluster = ClusterData(name, localtime, grid=self.grids[-1] if self.grids else None)
        assert self.doc is not None
        self.doc.clusters.append(self.cluster)

    def _start_HOST(self, a: dict[str, str]) -> None:
        name = _required(a, "NAME", "HOST")
        host = HostData(
            name,
            a.get("IP", ""),
            _int(a, "REPORTED", "HOST", required=True),
            _int(a, "TN", "HOST"),
            _int(a, "TMAX", "HOST"),
            _int(a, "DMAX", "HOST"),
        )
        cluster = self.cluster
        if cluster is None:
            if self.loose is None:
                self.loose = ClusterData("", None)
                assert self.doc is not None
                self.doc.clusters.append(self.loose)
            cluster = self.loose
        cluster.hosts.append(host)
        self.host = host

    def _start_METRIC(self, a: dict[str, str]) -> None:
        # The hot path (one call per metric per host per poll): positional construction, one try for the numbers.
        name = a.get("NAME")
        mtype = a.get("TYPE")
        raw = a.get("VAL")
        if not name or mtype is None or raw is None:
            missing = "NAME" if not name else "TYPE" if mtype is None else "VAL"
            raise GangliaXmlError(f"<METRIC {name or ''}> without {missing}")
        try:
            if mtype in NUMERIC_TYPES:
                val: float | str = float(raw)
            elif mtype in METRIC_TYPES:
                val = raw
            else:
                raise GangliaXmlError(f"METRIC {name!r}: unknown TYPE {mtype!r}")
            tn, tmax, dmax = int(a.get("TN", 0)), int(a.get("TMAX", 0)), int(a.get("DMAX", 0))
            if abs(tn) > TIME_LIMIT or abs(tmax) > TIME_LIMIT or abs(dmax) > TIME_LIMIT:
                raise GangliaXmlError(f"METRIC {name!r}: TN/TMAX/DMAX out of range (|value| <= {TIME_LIMIT:g} s)")
        except ValueError:
            for key in ("VAL", "TN", "TMAX", "DMAX"):
                try:
                    float(a[key]) if key == "VAL" else int(a.get(key, 0))
                except ValueError:
                    raise GangliaXmlError(f"METRIC {name!r}: {key}={a[key]!r} is not a number") from None
            raise  # unreachable: one of the keys failed
        self.metric = MetricData(name, val, mtype, a.get("UNITS", "").strip(), tn, tmax, dmax, a.get("SLOPE", ""))

    def _start_summary(self, a: dict[str, str]) -> None:
        """HOSTS and METRICS (gmetad's summaries) carry nothing per host."""


def _required(attrs: dict[str, str], key: str, tag: str) -> str:
    value = attrs.get(key)
    if not value:
        raise GangliaXmlError(f"<{tag}> without {key}")
    return value


def _int(attrs: dict[str, str], key: str, tag: str, *, required: bool = False) -> int:
    raw = attrs.get(key)
    if raw is None:
        if required:
            raise GangliaXmlError(f"<{tag}> without {key}")
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise GangliaXmlError(f"<{tag} {attrs.get('NAME', '')}>: {key}={raw[:40]!r} is not an integer") from None
    if abs(value) > TIME_LIMIT:
        raise GangliaXmlError(
            f"<{tag} {attrs.get('NAME', '')}>: {key}={raw[:40]} is out of range (|{key}| <= {TIME_LIMIT:g} s)"
        )
    return value


#: The largest |LOCALTIME|, |REPORTED|, |TN|, |TMAX|, |DMAX| accepted, in seconds: half the engine's largest time
#: (engine.events.MAX_SECONDS), so that a metric's time LOCALTIME - TN is always one the engine accepts (a
#: LOCALTIME of 99999999999999 made events hcep run rejects -- found by fuzzing).
TIME_LIMIT = 5e10


def _reject_entities(*_args: object) -> None:
    # Ganglia's DTD declares no entities; refusing them rules out entity-expansion bombs.
    raise GangliaXmlError("entity declarations are not allowed")


def parse_document(data: bytes | str) -> GangliaDocument:
    """Parse one gmond/gmetad dump.  Raises :class:`GangliaXmlError` naming the reason (with line and column for XML
    syntax errors)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
        parser = expat.ParserCreate(encoding="UTF-8")  # the str was decoded already: ignore the declared encoding
    else:
        parser = expat.ParserCreate()
    if not data.strip():
        raise GangliaXmlError("empty document")
    builder = _Builder()
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.EntityDeclHandler = _reject_entities
    parser.UnparsedEntityDeclHandler = _reject_entities
    try:
        parser.Parse(data, True)
    except expat.ExpatError as err:
        raise GangliaXmlError(
            f"not well-formed XML ({expat.ErrorString(err.code)}): line {err.lineno}, column {err.offset}"
        ) from None
    except RecursionError:
        raise GangliaXmlError("nesting too deep") from None
    except LookupError as err:  # <?xml encoding="..."?> naming a codec Python lacks (found by fuzzing)
        raise GangliaXmlError(f"unsupported XML encoding declaration: {err}") from None
    if builder.doc is None:
        raise GangliaXmlError("no <GANGLIA_XML> element")
    return builder.doc


@dataclass(slots=True)
class ParseStats:
    documents: int = 0
    bad: int = 0
    hosts: int = 0
    metrics: int = 0
    sink_errors: int = 0  # dead letters the sink could not write (e.g. disk full)


class XmlParser:
    """The collectors' parser: counts documents and dead-letters the bad ones; :meth:`parse` never raises.

    The sink is the project's shared one (``collectors.hadoop.deadletter``); by default an in-memory sink, whose
    ``records`` tests and status lines read.
    """

    def __init__(self, deadletter: DeadLetterSink | None = None, source: str = "ganglia-xml") -> None:
        self.deadletter = deadletter if deadletter is not None else DeadLetterSink.memory()
        self.source = source
        self.stats = ParseStats()
        self.last_reason = ""  # why the last bad document was rejected

    def parse(self, data: bytes | str, origin: str = "") -> GangliaDocument | None:
        """The document, or ``None`` after counting and dead-lettering a bad one."""
        self.stats.documents += 1
        try:
            doc = parse_document(data)
        except GangliaXmlError as err:
            reason = str(err)
        except Exception as err:  # the contract is "never raises": anything else is a bad document too
            reason = f"unexpected {type(err).__name__}: {err}"
        else:
            self.stats.hosts += doc.host_count()
            self.stats.metrics += doc.metric_count()
            return doc
        self.stats.bad += 1
        self.last_reason = reason
        try:
            self.deadletter.write(self.source, origin or "<document>", reason, data)
        except (OSError, ValueError):
            self.stats.sink_errors += 1
        return None


def finite(value: float | str) -> bool:
    """True for a finite number (NaN and infinities cannot go into JSON events)."""
    return isinstance(value, float) and math.isfinite(value)

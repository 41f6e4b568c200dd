"""``hcep demo``: the whole system, live, with one command.

In order, each step waiting until its part answers:

1. the Kafka broker (``deploy/kafka/start.sh``) and 2. gmond + gmetad (``deploy/ganglia/start.sh``, gmond muted so
   that the cluster it reports is only the simulated nodes) -- reused when they already run, stopped at the end only
   if the demo started them;
3. a webhook receiver for the pack's alerts (in this process), Prometheus Alertmanager (``deploy/alertmanager/
   start.sh``, notifying that receiver; its URL is :attr:`Demo.alertmanager_url`) and 4. the streaming service
   ``hcep run`` with the Hadoop pack, reading this run's topics, keeping its store under the demo dir, serving
   metrics and delivering its alerts to the receiver's webhook and to Alertmanager (``--alertmanager``);
5. the collectors, publishing to Kafka: ``hcep collect hadoop DIR --follow --kafka`` on the simulated cluster's log
   tree and ``hcep collect ganglia --gmond --kafka`` polling gmond;
6. the simulated cluster, live (``hcep simulate --live``): it writes its Hadoop logs and sends its Ganglia rounds as
   the wall clock passes, with the showcase faults (one of each kind) injected in the first seconds;
7. the dashboard (``hcep dashboard``) on the service's store (its match records and alert transitions) and
   metrics, Alertmanager, the collectors' event copies and the log tree.

With ``--spark`` (the default; ``--no-spark`` leaves it out) a Spark side runs beside the Hadoop one: a second
``hcep run`` with the Spark pack (``queries/spark.yaml``, its own consumer group, topics, store and metrics port;
the service runs one pack, and the Spark pack's millisecond tick would not suit the Hadoop pack's imprecise Ganglia
events), ``hcep collect spark --follow --kafka`` on the event-log dir, and a small real PySpark application
(:mod:`app.demo.spark_app`, ``local[2]``) writing its event log there, with a spilling stage and a skewed one planted
at the pack's production sizes.  The dashboard reads both stores and shows both packs.

Then it prints the dashboard's URL and what to look for, and supervises: a child that dies stops the demo (with its
name, exit status and log) and the exit status is 1; Ctrl-C or SIGTERM (or the end of ``--duration``) stops every
child -- each runs in a process group of its own, stopped group-wide -- then the daemons it started, and exits 0.
Everything binds to 127.0.0.1.  Files go under the demo dir (``--dir``); see :class:`Layout`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.demo import guide, services
from app.demo.receiver import Receiver
from app.demo.supervisor import Child, Supervisor

ROOT = services.ROOT
LOOPBACK = "127.0.0.1"
#: Ganglia cluster name of the demo's gmond (and the simulator's samples).
CLUSTER = "hcep-demo"
STEPS = 7


@dataclass
class Options:
    dir: Path
    pack: Path
    nodes: int = 20
    seed: int = 1
    minutes: float = 60.0
    duration: float | None = None
    dashboard: bool = True
    kafka_dir: Path = ROOT / ".run" / "kafka"
    kafka_port: int = 9092
    zk_port: int = 2181
    gmond_port: int = 8649
    gmetad_port: int = 8651
    gmetad_interactive_port: int = 8652
    metrics_port: int = 9464
    dashboard_port: int = 8501
    alertmanager_port: int = 9093
    spark: bool = True  #: run the Spark side (the Spark pack's service, its collector and a PySpark application)
    spark_pack: Path = ROOT / "queries" / "spark.yaml"
    spark_metrics_port: int = 9465
    step: int = 5  #: seconds between Ganglia rounds (simulator, collector poll, gmetad)
    refresh: float = 5.0  #: dashboard auto-refresh
    showcase_every: float = 600.0
    allowed_lateness: float = 5.0
    start_timeout: float = 180.0  #: per step


@dataclass
class Layout:
    """Where the demo's files go (all under ``root``, the demo dir)."""

    root: Path

    @property
    def cluster(self) -> Path:  # the simulated cluster: hadoop/, ganglia/samples.jsonl, ground_truth.json
        return self.root / "cluster"

    @property
    def events(self) -> Path:  # the collectors' copies of their events (the dashboard's --data)
        return self.root / "events"

    @property
    def service(self) -> Path:  # hcep run's data dir: hcep.sqlite
        return self.root / "service"

    @property
    def spark(self) -> Path:  # the Spark application's event-log dir (spark.eventLog.dir)
        return self.root / "spark"

    @property
    def spark_service(self) -> Path:  # the Spark pack's hcep run data dir: hcep.sqlite
        return self.root / "service-spark"

    @property
    def logs(self) -> Path:  # one log per child and deploy script
        return self.root / "logs"

    @property
    def ganglia(self) -> Path:  # gmond/gmetad run dir: configs, PID files, logs, RRDs
        return self.root / "ganglia"

    @property
    def alertmanager(self) -> Path:  # Alertmanager's run dir: config, silences, log, PID file
        return self.root / "alertmanager"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def info(self) -> Path:  # what runs where (ports, PIDs, URL), for tools and tests
        return self.root / "demo.json"

    def reset(self) -> None:
        """Remove the previous run's files (not ganglia/ or alertmanager/, which may belong to daemons still
        running)."""
        for path in (self.cluster, self.events, self.service, self.logs, self.state, self.spark, self.spark_service):
            if path.exists():
                shutil.rmtree(path)
        for name in ("alerts.jsonl", "alertmanager.jsonl", "demo.json", "dashboard_acks.json", "demo.tmp"):
            (self.root / name).unlink(missing_ok=True)
        for path in (self.cluster, self.events, self.service, self.logs, self.state, self.spark, self.spark_service):
            path.mkdir(parents=True, exist_ok=True)


class Stop(Exception):
    """Ctrl-C / SIGTERM / the end of --duration: stop cleanly (exit 0)."""


class Failed(Exception):
    """A part did not start or died: stop everything and exit 1."""


def _say(text: str = "") -> None:
    print(text, flush=True)


class Demo:
    def __init__(self, opts: Options, say: Callable[[str], None] = _say) -> None:
        self.opts = opts
        self.say = say
        self.layout = Layout(opts.dir.resolve())
        self.run_id = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        self.sup = Supervisor(say=say)
        self.daemons: list[services.Service] = []
        self.receiver: Receiver | None = None
        self.stopping = ""
        self.bootstrap = f"{LOOPBACK}:{opts.kafka_port}"
        prefix = f"hcep.demo.{self.run_id}"
        self.topics = {"hadoop": f"{prefix}.hadoop", "ganglia": f"{prefix}.ganglia", "matches": f"{prefix}.matches"}
        if opts.spark:
            self.topics.update({"spark": f"{prefix}.spark", "spark_matches": f"{prefix}.spark-matches"})
        self.metrics_url = f"http://{LOOPBACK}:{opts.metrics_port}/metrics"
        self.spark_metrics_url = f"http://{LOOPBACK}:{opts.spark_metrics_port}/metrics"
        #: Alertmanager's base URL: where ``hcep run`` posts its alerts (``POST /api/v2/alerts``) and the dashboard
        #: reads the open ones.
        self.alertmanager_url = f"http://{LOOPBACK}:{opts.alertmanager_port}"
        self.url = f"http://{LOOPBACK}:{opts.dashboard_port}/"
        self.truth: dict[str, Any] = {}
        self.alert_names: dict[str, list[str]] = {}
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        self.env["PYTHONUNBUFFERED"] = "1"

    # ---------------------------------------------------------------------------------------------------- signals
    def _on_signal(self, signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        if not self.stopping:
            self.stopping = name
            self.say(f"\ndemo: {name}: stopping everything (again to hurry)")
        else:
            self.stopping = "force"

    def _check(self) -> None:
        """Raise Stop when a signal came, Failed when a child died."""
        if self.stopping:
            raise Stop(self.stopping)
        child = self.sup.failed()
        if child is not None:
            raise Failed(
                f"the {child.title} ({child.name}, pid {child.pid}) exited with status {child.poll()}; "
                f"its log ({child.log}) ends:\n{_indent(child.tail())}"
            )

    def _wait(self, what: str, ready: Callable[[], bool], timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.opts.start_timeout)
        while not ready():
            self._check()
            if time.monotonic() > deadline:
                raise Failed(f"{what} not ready after {timeout or self.opts.start_timeout:.0f} s")
            time.sleep(0.3)

    # ------------------------------------------------------------------------------------------------------ steps
    def _step(self, n: int, title: str) -> float:
        self.say(f"[{n}/{STEPS}] {title} ...")
        return time.monotonic()

    def _done(self, started: float, text: str) -> None:
        self.say(f"      {text} ({time.monotonic() - started:.1f} s)")

    def _hcep(self, name: str, title: str, *args: str, may_finish: bool = False, module: str = "app.cli") -> Child:
        """Start ``python -m MODULE ARGS`` (``hcep ARGS`` by default; a leading ``-`` in ARGS is dropped)."""
        argv = list(args[1:] if args and args[0] == "-" else args)
        child = Child(
            name,
            [sys.executable, "-m", module, *argv],
            self.layout.logs / f"{name}.log",
            title=title,
            may_finish=may_finish,
        )
        self.sup.start(child, env=self.env, cwd=str(ROOT))
        return child

    def _daemon(self, service: services.Service, n: int, where: str) -> None:
        t = self._step(n, f"{service.title} on {where}")
        self.daemons.append(service)
        try:
            started = service.start(timeout=self.opts.start_timeout)
        except services.ServiceError as err:
            raise Failed(str(err)) from None
        self._done(t, "started" if started else "already running: reused (and left running at the end)")
        if started and service.name == "kafka":
            service.watch(os.getpid())  # stopped even if the demo is killed outright (gmond has start.sh's watcher)
        self._check()

    def start(self) -> None:
        o, lay = self.opts, self.layout
        self._daemon(services.kafka(o.kafka_dir, o.kafka_port, o.zk_port, lay.logs / "kafka.log"), 1, self.bootstrap)
        self._daemon(
            services.ganglia(
                lay.ganglia,
                CLUSTER,
                o.gmond_port,
                o.gmetad_port,
                o.gmetad_interactive_port,
                o.step,
                lay.logs / "ganglia.log",
                owner_pid=os.getpid(),
            ),
            2,
            f"{LOOPBACK}:{o.gmond_port} (gmetad :{o.gmetad_port}), cluster '{CLUSTER}'",
        )

        pack = _pack_settings(o.pack)
        t = self._step(3, "streaming service (hcep run, the Hadoop pack), its alert webhook and Alertmanager")
        self.receiver = Receiver(lay.root / "alerts.jsonl", self.say)
        hook = self.receiver.start()
        manager = services.alertmanager(
            lay.alertmanager,
            o.alertmanager_port,
            self.receiver.alertmanager_url,
            lay.logs / "alertmanager.log",
            owner_pid=os.getpid(),
        )
        self.daemons.append(manager)
        try:
            reused = not manager.start(timeout=o.start_timeout)
        except services.ServiceError as err:
            raise Failed(str(err)) from None
        self._check()
        # hcep run delivers every alert transition twice: to the receiver's webhook (the outbox) and to Alertmanager
        # (re-sent while firing), which notifies the same receiver per group and serves the dashboard's Alerts view.
        self._hcep(
            "run",
            "streaming service (hcep run)",
            "run",
            "--pack",
            str(o.pack),
            "--bootstrap",
            self.bootstrap,
            "--topics",
            self.topics["hadoop"],
            "--broadcast",
            self.topics["ganglia"],
            "--matches-topic",
            self.topics["matches"],
            "--group",
            f"hcep-demo-{self.run_id}",
            "--data-dir",
            str(lay.service),
            "--metrics-port",
            str(o.metrics_port),
            "--allowed-lateness",
            f"{o.allowed_lateness:g}",
            "--alertmanager",
            self.alertmanager_url,
            *[arg for name in sorted(pack["webhooks"]) for arg in ("--webhook", f"{name}={hook}")],
        )
        store = lay.service / "hcep.sqlite"
        spark_store = lay.spark_service / "hcep.sqlite"
        if o.spark:
            # The Spark pack in a service of its own: its own group, topics, store and metrics; alerts to the same
            # receiver and Alertmanager.  (One service runs one pack, and one pack has one tick: the Spark pack's
            # millisecond would turn each 7.5 s Ganglia interval into 15,001 points for the Hadoop pack.)
            spark_hooks = _pack_settings(o.spark_pack)["webhooks"]
            self._hcep(
                "run-spark",
                "Spark pack's streaming service (hcep run)",
                "run",
                "--pack",
                str(o.spark_pack),
                "--bootstrap",
                self.bootstrap,
                "--topics",
                self.topics["spark"],
                "--broadcast",
                "",
                "--matches-topic",
                self.topics["spark_matches"],
                "--group",
                f"hcep-demo-{self.run_id}-spark",
                "--instance",
                "spark-0",
                "--data-dir",
                str(lay.spark_service),
                "--metrics-port",
                str(o.spark_metrics_port),
                "--alertmanager",
                self.alertmanager_url,
                *[arg for name in sorted(spark_hooks) for arg in ("--webhook", f"{name}={hook}")],
            )
        self._wait("hcep run (metrics endpoint and store)", lambda: store.exists() and _answers(self.metrics_url))
        if o.spark:
            self._wait(
                "hcep run with the Spark pack (metrics endpoint and store)",
                lambda: spark_store.exists() and _answers(self.spark_metrics_url),
            )
        spark_text = (
            f"; the Spark pack's: metrics {self.spark_metrics_url}, store {_short(spark_store)}" if o.spark else ""
        )
        self._done(
            t,
            f"metrics {self.metrics_url}, store {_short(store)}, alerts to {hook}; Alertmanager "
            f"{self.alertmanager_url}{' (reused)' if reused else ''} notifying the same receiver"
            f"{spark_text}",
        )

        t = self._step(4, "collectors publishing to Kafka (Hadoop logs, Ganglia)")
        threshold = pack["imbalance_threshold"]
        hadoop_dir = lay.cluster / "hadoop"  # made by the simulator; the collector picks it up when it appears
        self._hcep(
            "collect-hadoop",
            "Hadoop log collector",
            "collect",
            "hadoop",
            str(hadoop_dir),
            "--follow",
            "--kafka",
            self.bootstrap,
            "--topic",
            self.topics["hadoop"],
            "--state",
            str(lay.state / "collect-hadoop.json"),
            "--out",
            str(lay.events / "hadoop.jsonl"),
            "--deadletter",
            str(lay.events / "hadoop.deadletter"),
            "--no-progress",
        )
        self._hcep(
            "collect-ganglia",
            "Ganglia collector",
            "collect",
            "ganglia",
            "--gmond",
            f"{LOOPBACK}:{o.gmond_port}",
            "--interval",
            str(o.step),
            "--delta",
            f"{o.step / 2:g}",
            "--cluster",
            CLUSTER,
            "--threshold",
            f"{threshold:g}",
            "--kafka",
            self.bootstrap,
            "--topic",
            self.topics["ganglia"],
            "--out",
            str(lay.events / "ganglia.jsonl"),
        )
        if o.spark:
            self._hcep(
                "collect-spark",
                "Spark event-log collector",
                "collect",
                "spark",
                str(lay.spark),
                "--follow",
                "--kafka",
                self.bootstrap,
                "--topic",
                self.topics["spark"],
                "--state",
                str(lay.state / "collect-spark.json"),
                "--out",
                str(lay.events / "spark.jsonl"),
                "--deadletter",
                str(lay.events / "spark.deadletter"),
                "--no-progress",
            )
        # They connect to the broker first (and exit 1 when they cannot): give them a moment to prove it.
        settle = time.monotonic() + 3.0
        self._wait("the collectors", lambda: time.monotonic() > settle)
        spark_topic = f", {self.topics['spark']}" if o.spark else ""
        self._done(
            t, f"topics {self.topics['hadoop']}, {self.topics['ganglia']}{spark_topic}; copies in {_short(lay.events)}"
        )

        t = self._step(5, f"simulated Hadoop cluster, live ({o.nodes} nodes)")
        self._hcep(
            "simulate",
            "simulated cluster (hcep simulate --live)",
            "simulate",
            "--live",
            "--out",
            str(lay.cluster),
            "--nodes",
            str(o.nodes),
            "--seed",
            str(o.seed),
            "--minutes",
            f"{o.minutes:g}",
            "--showcase-every",
            f"{o.showcase_every:g}",
            "--step",
            str(o.step),
            "--cluster",
            CLUSTER,
            "--ganglia",
            "gmond",
            f"{LOOPBACK}:{o.gmond_port}",
            "--no-progress",
            may_finish=True,
        )
        truth_file = lay.cluster / "ground_truth.json"
        self._wait("the simulator's plan", truth_file.exists)
        self.truth = json.loads(truth_file.read_text(encoding="utf-8"))
        self.alert_names = guide.alerts_by_kind(o.pack)  # read now: the guide is printed at once when all is up
        start = float(self.truth["window"]["start"])
        spark_text = ""
        if o.spark:
            # Not waited for: its JVM comes up while the rest starts; its problems show minutes later anyway.
            self._hcep(
                "spark-app",
                "Spark application (app.demo.spark_app)",
                "-",
                "--log-dir",
                str(lay.spark),
                "--every",
                f"{o.showcase_every:g}",
                module="app.demo.spark_app",
            )
            spark_text = f"; a PySpark application (local[2]) logging to {_short(lay.spark)}"
        self._done(
            t,
            f"{_count_lines(lay.cluster / 'jobs.jsonl')} jobs and {len(self.truth.get('faults') or [])} faults over "
            f"{o.minutes:g} min from "
            f"{time.strftime('%H:%M:%S', time.gmtime(start))} UTC; logs in {_short(lay.cluster / 'hadoop')}"
            f"{spark_text}",
        )

        if o.dashboard:
            t = self._step(6, "dashboard (hcep dashboard)")
            spark_args = (
                ["--store", str(spark_store), "--pack", str(o.pack), "--pack", str(o.spark_pack)] if o.spark else []
            )
            self._hcep(
                "dashboard",
                "dashboard (hcep dashboard)",
                "dashboard",
                "--store",
                str(store),
                *spark_args,
                "--data",
                str(lay.events),
                "--metrics",
                self.metrics_url,
                "--logs",
                str(hadoop_dir),
                "--acks",
                str(lay.root / "dashboard_acks.json"),
                "--port",
                str(o.dashboard_port),
                "--refresh",
                f"{o.refresh:g}",
                "--host",
                LOOPBACK,
                "--alertmanager",
                self.alertmanager_url,
            )
            self._wait("the dashboard", lambda: _answers(self.url + "_stcore/health"))
            self._done(t, self.url)
        t = self._step(7, "all up")
        self._write_info()
        self._done(t, f"run {self.run_id}, files in {_short(lay.root)}")

    def _write_info(self) -> None:
        info = {
            "run_id": self.run_id,
            "pid": os.getpid(),
            "dir": str(self.layout.root),
            "url": self.url if self.opts.dashboard else None,
            "metrics": self.metrics_url,
            "bootstrap": self.bootstrap,
            "topics": self.topics,
            "store": str(self.layout.service / "hcep.sqlite"),
            "spark": {
                "store": str(self.layout.spark_service / "hcep.sqlite"),
                "metrics": self.spark_metrics_url,
                "event_logs": str(self.layout.spark),
            }
            if self.opts.spark
            else None,
            "cluster": str(self.layout.cluster),
            "events": str(self.layout.events),
            "webhook": self.receiver.url if self.receiver else None,
            "alertmanager": self.alertmanager_url,
            "children": {c.name: c.pid for c in self.sup.children},
            "daemons": {d.name: {"started": d.started, **d.info} for d in self.daemons},
            "options": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self.opts).items()},
        }
        tmp = self.layout.info.with_suffix(".tmp")
        tmp.write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
        tmp.replace(self.layout.info)

    # ---------------------------------------------------------------------------------------------------- running
    def watch(self) -> None:
        o = self.opts
        start = float(self.truth.get("window", {}).get("start", time.time()))
        self.say("")
        if o.dashboard:
            self.say(f"Dashboard: {self.url}")
        else:
            lay = self.layout
            self.say(
                f"Dashboard: not started (--no-dashboard); to look: hcep dashboard --store "
                f"{_short(lay.service / 'hcep.sqlite')} --data {_short(lay.events)} --metrics {self.metrics_url} "
                f"--logs {_short(lay.cluster / 'hadoop')}"
            )
        self.say(
            "What to look for (faults injected in the first seconds of the cluster"
            + (f", and again every {o.showcase_every / 60:g} min" if o.showcase_every else "")
            + "):"
        )
        for line in guide.look_for(self.truth, self.url if o.dashboard else "", start, self.alert_names):
            self.say("  " + line)
        if o.spark:
            for line in guide.spark_look_for(self.url if o.dashboard else ""):
                self.say("  " + line)
        until = f"for {o.duration:g} s" if o.duration else "until Ctrl-C"
        self.say(f"Running {until}.  Ctrl-C stops everything.  Logs: {_short(self.layout.logs)}")
        self.say("")
        began = time.monotonic()
        next_status = began + 30.0
        store = self.layout.service / "hcep.sqlite"
        while True:
            self._check()
            now = time.monotonic()
            if o.duration is not None and now - began >= o.duration:
                raise Stop(f"--duration {o.duration:g} s")
            if now >= next_status:
                next_status += 30.0
                open_alerts = self.receiver.open_counts() if self.receiver else {}
                self.say(guide.status_line(time.time() - start, store, self.metrics_url, open_alerts))
            time.sleep(0.5)

    def shutdown(self) -> None:
        grace = 3.0 if self.stopping == "force" else 20.0
        self.sup.stop_all(
            grace=grace,
            order=(
                "dashboard",
                "simulate",
                "spark-app",
                "collect-hadoop",
                "collect-ganglia",
                "collect-spark",
                "run",
                "run-spark",
            ),
        )
        if self.receiver is not None:
            self.receiver.stop()
        if any(d.name == "kafka" and d.info for d in self.daemons):  # the broker came up: this run's topics exist
            _delete_topics(self.bootstrap, list(self.topics.values()), self.layout.logs / "kafka.log")
        for daemon in reversed(self.daemons):
            if daemon.started:
                self.say(f"demo: stopping the {daemon.title} it started")
            try:
                daemon.stop()
            except services.ServiceError as err:
                self.say(f"demo: {err}")

    def run(self) -> int:
        self.layout.root.mkdir(parents=True, exist_ok=True)
        pid_file = self.layout.root / "demo.pid"
        other = _running_demo(pid_file)
        if other is not None:
            self.say(
                f"demo: error: another hcep demo (pid {other}) is using {_short(self.layout.root)}: stop it "
                f"first (Ctrl-C in its terminal, or kill -INT {other}) or give this one another --dir and ports"
            )
            return 1
        pid_file.write_text(f"{os.getpid()}\n", encoding="utf-8")
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        code = 0
        try:
            self.layout.reset()
            self.say(f"hcep demo: a live Hadoop cluster monitored end to end (files in {_short(self.layout.root)})")
            self.start()
            self.watch()
        except Stop as why:
            self.say(f"demo: stopping ({why})")
        except Failed as err:
            self.say(f"demo: error: {err}")
            self.say("demo: stopping the rest")
            code = 1
        finally:
            try:
                self.shutdown()
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
                pid_file.unlink(missing_ok=True)
        for store in (self.layout.service / "hcep.sqlite", self.layout.spark_service / "hcep.sqlite"):
            matches, open_alerts = guide.store_counts(store) if store.exists() else ({}, {})
            if matches:
                urgent, info = guide.split_open(open_alerts)
                self.say(
                    "demo: matches found: "
                    + ", ".join(f"{q} {n}" for q, n in matches.items())
                    + f"; alerts open at the end: {urgent} warning or worse, {info} info"
                )
        self.say(f"demo: {'stopped' if code == 0 else 'failed'}; files kept in {_short(self.layout.root)}")
        return code


# ------------------------------------------------------------------------------------------------------ helpers
def _running_demo(pid_file: Path) -> int | None:
    """The PID of another live ``hcep demo`` that uses this demo dir, if one runs."""
    try:
        pid = int(pid_file.read_text(encoding="utf-8").strip())
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            cmdline = handle.read().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if pid != os.getpid() and b"demo" in cmdline else None


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2.0) as resp:  # noqa: S310 - our own servers, on loopback
            return resp.status == 200
    except (OSError, ValueError):
        return False


def _count_lines(path: Path) -> int:
    """Lines of a file (0 when it is not there)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return sum(1 for line in handle if line.strip())
    except OSError:
        return 0


def _pack_settings(pack: Path) -> dict[str, Any]:
    """What the demo needs of the pack: ``imbalance_threshold`` (``settings``, default 1.0; the Ganglia collector
    applies it) and the names of the ``webhooks`` its alert rules use (all routed to the demo's receiver).  Read with
    the engine's one pack loader; a pack it rejects gets the defaults here (``hcep run`` reports it)."""
    from engine.language.ast import QueryError
    from engine.language.packs import PackError, load_pack

    out: dict[str, Any] = {"imbalance_threshold": 1.0, "webhooks": {"ops"}}
    try:
        loaded = load_pack(pack)
        out["imbalance_threshold"] = float(loaded.settings.get("imbalance_threshold", 1.0))
    except (OSError, ValueError, TypeError, PackError, QueryError):
        return out
    names = {rule.webhook for rule in loaded.rules() if rule.webhook}
    out["webhooks"] = names or out["webhooks"]
    return out


def _delete_topics(bootstrap: str, topics: list[str], log: Path) -> None:
    """Best effort: this run's topics are of no use after it (each run has its own, so no old events leak in)."""
    try:
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="hcep-demo", request_timeout_ms=5000)
    except Exception:  # noqa: BLE001 - broker gone or kafka-python missing: nothing to clean
        return
    try:
        existing = set(admin.list_topics())
        mine = [t for t in topics if t in existing]
        if mine:
            admin.delete_topics(mine, timeout_ms=5000)
    except Exception as err:  # noqa: BLE001 - leftovers only cost disk
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"demo: could not delete topics {topics}: {err}\n")
    finally:
        admin.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _short(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines()) or "    (empty)"

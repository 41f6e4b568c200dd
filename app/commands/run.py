"""``hcep run --pack FILE --bootstrap HOST:PORT``: the streaming service (see :mod:`app.stream`).

Settings come, strongest first, from the options, a YAML ``--config`` file (same names, ``_`` for ``-``), the pack's
``settings`` (``allowed_lateness``, ``max_delta``, ``webhooks``, ``shedding``) and the defaults. Webhook names are the
ones the pack's alert rules use (``webhook: ops``); their URLs come from ``--webhook ops=URL``, ``webhooks:`` in the
config or the pack. ``--alertmanager URL`` delivers every alert to a Prometheus Alertmanager as well. Runs until
SIGTERM/SIGINT (a clean stop commits a last checkpoint). Also runnable as ``python -m app.commands.run ...`` while
``hcep`` does not list it.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sqlite3
import sys
from typing import Any

from app.commands import CommandError
from app.commands.argtypes import non_negative_int, positive_int

DEFAULTS: dict[str, Any] = {
    "bootstrap": "127.0.0.1:9092",
    "group": "hcep",
    "instance": "0",
    "topics": "hcep.events.hadoop",
    "broadcast": "hcep.events.ganglia",
    "matches_topic": "hcep.matches",
    "data_dir": ".run/hcep",
    "metrics_port": 9464,
    "allowed_lateness": 2.0,
    "max_delta": 7.5,
    "idle_timeout": 5.0,
    "checkpoint_interval": 1.0,
    "start_from": "earliest",
    "partitions": 4,
    "session_timeout": 10.0,
    "alert_max_backoff": 30.0,
    "alert_orphan_after": 30.0,
    "alertmanager": "",
}


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a non-negative number of seconds, got {text}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pack", required=True, metavar="FILE", help="the YAML query pack to run")
    parser.add_argument(
        "--bootstrap",
        metavar="HOST:PORT[,...]",
        help=f"Kafka bootstrap servers (env HCEP_BOOTSTRAP; default {DEFAULTS['bootstrap']})",
    )
    parser.add_argument("--config", metavar="FILE", help="YAML file with any of these settings")
    parser.add_argument("--group", help=f"consumer group (default {DEFAULTS['group']})")
    parser.add_argument("--instance", help="this process's name in the group, stable across restarts (default 0)")
    parser.add_argument(
        "--topics", metavar="T[,T]", help=f"topics whose partitions the group shares (default {DEFAULTS['topics']})"
    )
    parser.add_argument(
        "--broadcast",
        metavar="T[,T]",
        help=f"topics every process reads in full (default {DEFAULTS['broadcast']}; '' for none)",
    )
    parser.add_argument(
        "--matches-topic", help=f"topic for match records (default {DEFAULTS['matches_topic']}; '' for none)"
    )
    parser.add_argument("--data-dir", metavar="DIR", help=f"store and dead letters (default {DEFAULTS['data_dir']})")
    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="N",
        help=f"Prometheus metrics on 127.0.0.1:N (0: any free port, -1: off; default {DEFAULTS['metrics_port']})",
    )
    parser.add_argument("--allowed-lateness", type=_seconds, metavar="S", help="added to the largest delta (2 s)")
    parser.add_argument(
        "--max-delta", type=_seconds, metavar="S", help="largest accepted delta; wider events are dead-lettered (7.5 s)"
    )
    parser.add_argument(
        "--idle-timeout",
        type=_seconds,
        metavar="S",
        help="a read-up partition silent this long stops holding the watermark (5 s); for this "
        "long after one speaks again, the silent ones hold it at their newest time plus their "
        "silence, so that a burst after a quiet spell is not late",
    )
    parser.add_argument("--checkpoint-interval", type=_seconds, metavar="S", help="seconds between checkpoints (1)")
    parser.add_argument(
        "--session-timeout",
        type=_seconds,
        metavar="S",
        help="consumer group session: a killed process's partitions wait this long (10 s; the "
        "broker's group.min.session.timeout.ms bounds it)",
    )
    parser.add_argument(
        "--alert-max-backoff",
        type=_seconds,
        metavar="S",
        help="longest wait between two tries of a webhook that is down (30 s)",
    )
    parser.add_argument(
        "--alert-orphan-after",
        type=_seconds,
        metavar="S",
        help="with a shared data dir: deliver the alerts of a process silent this long (30 s)",
    )
    parser.add_argument(
        "--webhook",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="URL of a webhook the pack's alert rules name (repeatable)",
    )
    parser.add_argument(
        "--alertmanager",
        metavar="URL",
        help="also deliver every alert to this Prometheus Alertmanager (v2 API, e.g. "
        "http://127.0.0.1:9093; default: none, or $HCEP_ALERTMANAGER)",
    )
    parser.add_argument(
        "--start-from",
        choices=("earliest", "latest"),
        help="where partitions without a checkpoint start (default earliest)",
    )
    parser.add_argument("--partitions", type=int, metavar="N", help="partitions of topics created when missing (4)")
    parser.add_argument(
        "--exit-when-idle",
        type=_seconds,
        metavar="S",
        help="stop once everything is read and nothing came for S seconds",
    )
    parser.add_argument("--max-seconds", type=_seconds, metavar="S", help="stop after S seconds")
    parser.add_argument(
        "--max-runs-per-key",
        type=non_negative_int,
        metavar="N",
        help="memory bound: partial matches per partition key of a query; beyond it they are dropped "
        "and counted (metric hcep_limit_dropped; default: the pack's "
        "settings.limits.runs_per_key, else 20000; 0: unbounded)",
    )
    parser.add_argument(
        "--max-runs",
        type=non_negative_int,
        metavar="N",
        help="memory bound: partial matches of a query in total (default: settings.limits.runs, else "
        "200000; 0: unbounded)",
    )
    parser.add_argument(
        "--no-shedding",
        dest="shedding",
        action="store_false",
        help="ignore the pack's settings.shedding: never drop partial matches (e.g. while catching up "
        "after an outage, when every match matters more than the latency bound)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        metavar="N",
        help="run N service processes in the group (one core each), named INSTANCE-0.., metrics on "
        "PORT+k, restarted if they crash (default 1: this process is the service)",
    )
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    parser.set_defaults(run_parser=parser)


def _read_config(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except OSError as err:
        raise CommandError(f"{path}: cannot read config: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise CommandError(f"{path}: invalid YAML: {err}") from None
    if not isinstance(data, dict):
        raise CommandError(f"{path}: the config must be a mapping")
    known = set(DEFAULTS) | {"webhooks"}
    unknown = sorted(str(k).replace("-", "_") for k in data if str(k).replace("-", "_") not in known)
    if unknown:
        raise CommandError(f"{path}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def build_config(args: argparse.Namespace, pack: Any) -> Any:
    """Merge options, config file, pack settings and defaults into a :class:`app.stream.config.ServiceConfig`."""
    from app.alerts.webhook import parse_webhooks
    from app.stream.config import ServiceConfig

    file_cfg = _read_config(args.config)
    settings = dict(getattr(pack, "settings", {}) or {})

    def pick(name: str) -> Any:
        value = getattr(args, name, None)
        if value is not None:
            return value
        if name in file_cfg:
            return file_cfg[name]
        if name in ("allowed_lateness", "max_delta") and name in settings:
            return settings[name]
        if name == "bootstrap" and os.environ.get("HCEP_BOOTSTRAP"):
            return os.environ["HCEP_BOOTSTRAP"]
        if name == "alertmanager" and os.environ.get("HCEP_ALERTMANAGER"):
            return os.environ["HCEP_ALERTMANAGER"]
        return DEFAULTS[name]

    def topics(value: Any) -> list[str]:
        if isinstance(value, list):
            return [str(v) for v in value if str(v)]
        return [t.strip() for t in str(value).split(",") if t.strip()]

    try:
        hooks = parse_webhooks(settings.get("webhooks"))
        hooks.update(parse_webhooks(file_cfg.get("webhooks")))
        cli: dict[str, str] = {}
        for item in args.webhook:
            name, sep, url = item.partition("=")
            if not sep or not name or not url:
                raise ValueError(f"--webhook wants NAME=URL, got {item!r}")
            cli[name] = url
        hooks.update(parse_webhooks(cli))
    except ValueError as err:
        raise CommandError(str(err)) from None
    from engine.runtime.limits import LimitsError, from_settings

    try:
        limits = from_settings(settings).with_overrides(
            getattr(args, "max_runs_per_key", None), getattr(args, "max_runs", None)
        )
    except LimitsError as err:
        raise CommandError(f"{args.pack}: {err}") from None
    metrics_port = int(pick("metrics_port"))
    matches_topic = str(pick("matches_topic") or "") or None
    cfg = ServiceConfig(
        pack=args.pack,
        bootstrap=str(pick("bootstrap")),
        group=str(pick("group")),
        instance=str(pick("instance")),
        shared_topics=topics(pick("topics")),
        broadcast_topics=topics(pick("broadcast")),
        matches_topic=matches_topic,
        data_dir=str(pick("data_dir")),
        metrics_port=None if metrics_port < 0 else metrics_port,
        allowed_lateness=float(pick("allowed_lateness")),
        max_delta=float(pick("max_delta")),
        idle_timeout=float(pick("idle_timeout")),
        checkpoint_interval=float(pick("checkpoint_interval")),
        webhooks=hooks,
        alertmanager=str(pick("alertmanager") or "") or None,
        topic_partitions=int(pick("partitions")),
        start_from=str(pick("start_from")),
        session_timeout=float(pick("session_timeout")),
        alert_max_backoff=float(pick("alert_max_backoff")),
        alert_orphan_after=float(pick("alert_orphan_after")),
        exit_when_idle=args.exit_when_idle,
        max_seconds=args.max_seconds,
        shedding=args.shedding,
        limits=limits,
    )
    if not cfg.shared_topics and not cfg.broadcast_topics:
        raise CommandError("no topics to read (--topics and --broadcast are both empty)")
    if cfg.alertmanager and not cfg.alertmanager.startswith(("http://", "https://")):
        raise CommandError(f"--alertmanager wants an http(s) URL, got {cfg.alertmanager!r}")
    return cfg


def shared_argv(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The options of ``args`` as a command line for the workers, without what differs per worker."""
    out: list[str] = []
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "workers", "instance", "metrics_port"):
            continue
        flag, value = action.option_strings[-1], getattr(args, action.dest, None)
        if isinstance(action, argparse._StoreFalseAction):
            out += [flag] if value is False else []
        elif isinstance(action, argparse._AppendAction):
            for item in value or ():
                out += [flag, str(item)]
        elif value is not None:
            out += [flag, str(value)]
    return out


def run(args: argparse.Namespace) -> int:
    from app.matching.packs import load_pack
    from app.stream.loop import run_service
    from app.workers import WORKER_ENV, run_workers

    tag = f"[{os.environ[WORKER_ENV]}] " if os.environ.get(WORKER_ENV) else ""  # a worker of `--workers N`
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        stream=sys.stderr,
        format=f"%(asctime)s %(levelname)s {tag}%(name)s: %(message)s",
    )
    # kafka-python logs every refused reconnect at ERROR while a broker restarts; the service reports what matters.
    kafka_level = os.environ.get("HCEP_KAFKA_LOG_LEVEL") or ("DEBUG" if args.log_level == "DEBUG" else "CRITICAL")
    logging.getLogger("kafka").setLevel(kafka_level)
    pack = load_pack(args.pack)
    cfg = build_config(args, pack)
    unrouted = sorted({r.webhook for r in pack.rules() if r.webhook} - set(cfg.webhooks))
    if unrouted:
        logging.getLogger("hcep.run").warning(
            "no URL for webhook(s) %s: their alerts are stored as 'unrouted'", ", ".join(unrouted)
        )
    if args.workers > 1:  # settings checked once, here; the workers parse the same ones again
        return run_workers(shared_argv(args.run_parser, args), args.workers, cfg.instance, cfg.metrics_port)
    return run_service(cfg, pack)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hcep run", description=__doc__.splitlines()[0])
    configure(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except CommandError as err:
        print(str(err).splitlines()[0], file=sys.stderr)
        return 2
    except (sqlite3.Error, OSError) as err:  # the store cannot even be opened (a full disk at start)
        from app.store import store_path, unwritable

        cause = unwritable(err)
        if cause is None:
            raise
        print(f"hcep run: store {store_path(args.data_dir)}: cannot be written ({cause}: {err})", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

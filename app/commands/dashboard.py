"""``hcep dashboard``: the ops dashboard (Streamlit) over the store of ``hcep run``, JSONL match records and events,
and the Parquet archive / Spark history.

It runs ``streamlit run`` on :mod:`dashboards.webapp` in a child process, headless and bound to 127.0.0.1 unless told
otherwise, waits until the server answers, prints the URL (the only line on stdout, so scripts can read it) and stops
the server cleanly on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from app.commands import CommandError

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8501
START_TIMEOUT = 90.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        metavar="DIR",
        help="data dir: JSONL match records / events (and the store "
        "hcep.sqlite, the Parquet archive, when they are inside it)",
    )
    parser.add_argument(
        "--store",
        metavar="FILE",
        action="append",
        help="the SQLite store of `hcep run` (opened read-only; repeat it for the stores of several "
        "services, e.g. the Hadoop and the Spark pack's)",
    )
    parser.add_argument("--archive", metavar="DIR", help="Parquet archive root (events/, matches/)")
    parser.add_argument(
        "--history",
        metavar="DIR",
        help="Spark history tables (`hcep history --out DIR`; default: DIR/history of --data or --archive)",
    )
    parser.add_argument(
        "--pack",
        metavar="FILE",
        action="append",
        help="query pack (default: the installed queries/hadoop.yaml; repeatable: packs side by side)",
    )
    parser.add_argument("--logs", metavar="DIR", help="Hadoop log tree searched for a straggler's log lines")
    parser.add_argument("--acks", metavar="FILE", help="where acknowledgements are kept (default: in the data dir)")
    parser.add_argument(
        "--metrics",
        metavar="URL",
        help="the Prometheus endpoint of `hcep run` (runs alive, shed "
        "counts, events/s), e.g. http://127.0.0.1:9108/metrics",
    )
    parser.add_argument(
        "--alertmanager",
        metavar="URL",
        help="Prometheus Alertmanager's base URL (the open alerts "
        "with their silenced/inhibited state), e.g. http://127.0.0.1:9093",
    )
    parser.add_argument(
        "--refresh", type=float, default=10.0, metavar="SECONDS", help="auto-refresh period (0: off; default 10)"
    )
    parser.add_argument("--host", default=LOOPBACK, help="address to bind (default 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 8501; 0 picks a free one)")


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def app_script() -> Path:
    import dashboards

    return Path(dashboards.__file__).resolve().parent / "webapp" / "hcep_ops.py"


def _config(args: argparse.Namespace) -> dict[str, str]:
    from dashboards.config import DashboardConfig, default_pack

    def path(value: str | None, kind: str, must_be_dir: bool) -> Path | None:
        if not value:
            return None
        p = Path(value).expanduser()
        if not p.exists():
            raise CommandError(f"hcep dashboard: {kind} {value}: no such {'directory' if must_be_dir else 'file'}")
        if must_be_dir and not p.is_dir():
            raise CommandError(f"hcep dashboard: {kind} {value}: not a directory")
        return p

    data = path(args.data, "--data", True)
    stores = [p for p in (path(v, "--store", False) for v in args.store or []) if p is not None]
    packs = [p for p in (path(v, "--pack", False) for v in args.pack or []) if p is not None]
    store = stores[0] if stores else None
    archive = path(args.archive, "--archive", True)
    history = path(args.history, "--history", True)
    if data is None and store is None and archive is None and history is None:
        raise CommandError("hcep dashboard: give --data DIR, --store FILE, --archive DIR or --history DIR")
    if args.refresh < 0:
        raise CommandError("hcep dashboard: --refresh must be >= 0")
    alertmanager = args.alertmanager
    if alertmanager and not alertmanager.startswith(("http://", "https://")):
        raise CommandError(f"hcep dashboard: --alertmanager {alertmanager}: give an http(s):// URL")
    # Unset store / archive / acks are found (or placed) in the data dir by DashboardConfig.from_env in the child.
    return DashboardConfig(
        data,
        store,
        archive,
        packs[0] if packs else default_pack(),
        path(args.logs, "--logs", True),
        Path(args.acks) if args.acks else None,
        args.refresh,
        args.metrics,
        history,
        alertmanager,
        tuple(stores[1:]),
        tuple(packs[1:]),
    ).to_env()


def streamlit_command(host: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_script()),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--server.fileWatcherType",
        "none",
        "--server.runOnSave",
        "false",
        "--browser.gatherUsageStats",
        "false",
        "--browser.serverAddress",
        host,
        "--browser.serverPort",
        str(port),
        "--global.developmentMode",
        "false",
        "--client.toolbarMode",
        "minimal",
        "--logger.level",
        "warning",
        "--theme.base",
        "light",
    ]


def wait_healthy(url: str, child: subprocess.Popen, timeout: float = START_TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url + "_stcore/health", timeout=2) as resp:  # noqa: S310 - our own server
                if resp.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.3)
    return False


def stop(child: subprocess.Popen, grace: float = 10.0) -> int:
    """SIGTERM, then SIGKILL after ``grace`` seconds; the child's exit status."""
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(grace)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return child.returncode


def run(args: argparse.Namespace) -> int:
    try:
        import streamlit  # noqa: F401
    except ImportError:
        raise CommandError(
            "hcep dashboard: streamlit is not installed (pip install streamlit altair pandas pyarrow)"
        ) from None
    env = dict(os.environ)
    env.update(_config(args))
    env.setdefault("STREAMLIT_BROWSER_GATHER_USAGE_STATS", "false")
    host = args.host
    if host not in (LOOPBACK, "localhost", "::1"):
        print(
            f"hcep dashboard: warning: binding {host}, not loopback: anyone who can reach it sees the dashboard",
            file=sys.stderr,
        )
    port = args.port or free_port(host if host != "localhost" else LOOPBACK)
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    child = subprocess.Popen(streamlit_command(host, port), env=env, stdout=sys.stderr, stdin=subprocess.DEVNULL)

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        if not wait_healthy(url, child):
            code = stop(child)
            print(f"hcep dashboard: the server did not start (streamlit exit status {code})", file=sys.stderr)
            return 1
        print(url, flush=True)
        print(f"hcep dashboard: serving {url} -- Ctrl-C stops it", file=sys.stderr, flush=True)
        return child.wait()
    except KeyboardInterrupt:
        stop(child)
        print("hcep dashboard: stopped", file=sys.stderr)
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        stop(child)

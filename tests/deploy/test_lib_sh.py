"""deploy/lib.sh, the helpers every deploy script sources: what is missing, what happens without apt-get or root,
which PID is alive, which port is open.  (The installers and start scripts themselves run for real in the suite's
fixtures and in ``deploy/test.sh``.)"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "deploy" / "lib.sh"


def sh(script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f'set -euo pipefail; source "{LIB}"; {script}'],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **(env or {})},
    )


def test_apt_missing_lists_only_what_is_not_installed() -> None:
    out = sh("apt_missing bash hcep-no-such-package coreutils")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["hcep-no-such-package"]


def test_without_apt_get_the_installer_is_told_so(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dpkg", "dpkg-query", "tr", "id"):  # everything but apt-get
        (bin_dir / tool).symlink_to(subprocess.check_output(["bash", "-c", f"command -v {tool}"], text=True).strip())
    out = sh(
        'rc=0; apt_install_missing test hcep-no-such-package || rc=$?; echo "$rc"; '
        'apt_failure "$rc" hcep-no-such-package',
        env={"PATH": str(bin_dir)},
    )
    assert out.returncode == 0, out.stderr
    rc, reason = out.stdout.splitlines()
    assert rc == "2"
    assert reason == "missing Debian packages (hcep-no-such-package) and no dpkg/apt-get here"


def test_nothing_missing_means_no_apt_get_at_all(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "apt-get").write_text("#!/bin/sh\necho apt-get ran >&2\nexit 1\n")
    (fake / "apt-get").chmod(0o755)
    out = sh("apt_install_missing test bash coreutils", env={"PATH": f"{fake}:{os.environ['PATH']}"})
    assert out.returncode == 0, out.stderr
    assert "apt-get ran" not in out.stderr


def test_live_pid_and_port_open(tmp_path: Path) -> None:
    pidfile = tmp_path / "x.pid"
    pidfile.write_text(f"{os.getpid()}\n")
    assert sh(f'live_pid "{pidfile}"').stdout.strip() == str(os.getpid())
    dead = subprocess.Popen(["true"])
    dead.wait()
    pidfile.write_text(str(dead.pid))
    assert sh(f'live_pid "{pidfile}"').returncode == 1
    assert sh(f'live_pid "{tmp_path}/absent.pid"').returncode == 1
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert sh(f"port_open {port}").returncode == 0
    assert sh(f"port_open {port}").returncode != 0


def test_apt_ensure_goes_on_without_apt_get_and_stops_on_a_failure(tmp_path: Path) -> None:
    no_apt = tmp_path / "no-apt"
    no_apt.mkdir()
    for tool in ("bash", "dpkg-query", "tr", "id", "printf"):
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if found.startswith("/"):
            (no_apt / tool).symlink_to(found)
    out = sh("apt_ensure test hcep-no-such-package", env={"PATH": str(no_apt)})
    assert out.returncode == 0
    assert "==> test: no dpkg/apt-get here: not checking Debian packages (hcep-no-such-package)" in out.stderr
    failing = tmp_path / "failing"
    failing.mkdir()
    for tool, code in (("apt-get", 100), ("sudo", 1)):
        (failing / tool).write_text(f"#!/bin/sh\nexit {code}\n")
        (failing / tool).chmod(0o755)
    out = sh("apt_ensure test hcep-no-such-package", env={"PATH": f"{failing}:{os.environ['PATH']}"})
    assert out.returncode == 1
    assert "==> test: apt-get failed (exit 100) installing hcep-no-such-package" in out.stderr

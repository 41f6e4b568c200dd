"""The compiled hot path (``contracts.compiled``, ``deploy/compile_engine.py``): used where it can be built, never when
stale, and equal to the pure-Python reference.

The rest of the suite runs on whatever this process loaded -- compiled on a machine where ``deploy/install.sh`` built
it -- so every brute-force reference and golden judges the compiled modules; :func:`test_the_reference_suites_pass_pure`
runs the conformance suite, the decoder's tests and the behaviour goldens again with ``HCEP_PURE=1``, so the pure
Python path passes the same checks.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contracts import compiled

ROOT = Path(__file__).resolve().parents[2]
PURE = os.environ.get(compiled.PURE_ENV, "") not in ("", "0")


def _buildable() -> bool:
    """mypyc, a C compiler and Python's headers are here (what the build needs)."""
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return False
    include = Path(sys.base_prefix) / "include" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "Python.h"
    system = Path(f"/usr/include/python{sys.version_info[0]}.{sys.version_info[1]}/Python.h")
    return shutil.which("cc") is not None and (include.is_file() or system.is_file())


@pytest.mark.skipif(PURE, reason="HCEP_PURE is set: this run is the pure-Python reference")
def test_the_hot_path_runs_compiled_where_it_can_be_built() -> None:
    if not _buildable():
        pytest.skip(f"no mypyc, C compiler or Python headers here: {compiled.STATUS}")
    assert compiled.active(), compiled.STATUS
    import engine.events
    import engine.onepass
    import engine.runtime.matcher

    for module in (engine.events, engine.onepass, engine.runtime.matcher):
        assert module.__file__ is not None and module.__file__.endswith(importlib.machinery.EXTENSION_SUFFIXES[0])
        assert str(compiled.BUILD_DIR) in module.__file__


@pytest.mark.skipif(not PURE, reason="only under HCEP_PURE=1")
def test_hcep_pure_loads_the_python_source() -> None:
    import engine.events
    import engine.runtime.matcher

    assert not compiled.active() and compiled.STATUS.startswith("pure: HCEP_PURE")
    for module in (engine.events, engine.runtime.matcher):
        assert module.__file__ is not None and module.__file__.endswith(".py")


def _fake_build(tmp_path: Path, **manifest: object) -> Path:
    build = tmp_path / "build"
    files = {name: name.replace(".", "/") + ".so" for name in compiled.MODULES}
    for rel in files.values():
        (build / rel).parent.mkdir(parents=True, exist_ok=True)
        (build / rel).write_bytes(b"")
    content = {"python": compiled.python_tag(), "files": files, "sources": compiled.source_hashes()} | manifest
    (build / compiled.MANIFEST).write_text(json.dumps(content))
    return build


def test_a_build_is_used_only_when_it_is_the_source_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)
    files, status = compiled.check(_fake_build(tmp_path))
    assert files is not None and set(compiled.MODULES) <= set(files) and status.startswith("compiled:")

    stale = compiled.source_hashes() | {"engine/onepass.py": "0" * 64}
    files, status = compiled.check(_fake_build(tmp_path, sources=stale))
    assert files is None and "engine/onepass.py changed since the build" in status

    added = compiled.source_hashes() | {"engine/new_module.py": "1" * 64}
    files, status = compiled.check(_fake_build(tmp_path, sources=added))
    assert files is None and "engine/new_module.py" in status

    files, status = compiled.check(_fake_build(tmp_path, python=".cpython-39-x86_64-linux-gnu.so"))
    assert files is None and "built for .cpython-39" in status

    files, status = compiled.check(_fake_build(tmp_path, error="mypyc exited with 1"))
    assert files is None and status == "pure: the build failed: mypyc exited with 1"

    build = _fake_build(tmp_path)
    (build / "engine/onepass.so").unlink()
    files, status = compiled.check(build)
    assert files is None and "incomplete" in status and "onepass" in status

    files, status = compiled.check(tmp_path / "nowhere")
    assert files is None and status.startswith("pure: no build")

    monkeypatch.setenv(compiled.PURE_ENV, "1")
    files, status = compiled.check(_fake_build(tmp_path))
    assert files is None and status == "pure: HCEP_PURE=1"


@pytest.mark.skipif(PURE, reason="this run is already the pure one")
def test_the_reference_suites_pass_pure(tmp_path: Path) -> None:
    """The conformance suite (every evaluator against brute force, snapshots, the feeder), the decoder's tests and
    the behaviour goldens of ``hcep match`` (the packs' records and alerts on three traces), pure Python."""
    if not compiled.active():
        pytest.skip(f"this process runs pure Python already: {compiled.STATUS}")
    env = dict(os.environ, **{compiled.PURE_ENV: "1"})
    tests = [
        "tests/engine/test_compiled.py",
        "tests/engine/conformance",
        "tests/engine/test_decode_block.py",
        "tests/engine/test_event_decoder.py",
        "tests/differential/test_behaviour_unchanged.py::test_match_and_alerts_unchanged",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t"), *tests],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert " passed" in done.stdout, done.stdout[-2000:]

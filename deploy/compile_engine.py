"""Compile the engine's hot path with mypyc into ``.hcep-compiled/`` (see :mod:`contracts.compiled`).

    python deploy/compile_engine.py            # build if the sources changed since the last build (else: nothing)
    python deploy/compile_engine.py --force    # build again
    python deploy/compile_engine.py --remove   # remove the build: pure Python from then on

``deploy/install.sh`` runs it after installing the packages.  The build is made in a copy of ``engine``,
``contracts`` and ``pyproject.toml`` (mypyc writes its C files and extension modules beside the sources), then moved
into place with a manifest naming every file and the SHA-256 of every source it was built from.  A build that fails
(no C compiler, a mypyc error) never fails the install: the manifest records the error, ``contracts.compiled.STATUS``
reports it, and everything runs as pure Python, the reference.  Set ``HCEP_NO_COMPILE=1`` to skip the build.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from contracts.compiled import (  # noqa: E402
    BUILD_DIR,
    MANIFEST,
    MODULES,
    PACKAGES,
    current,
    python_tag,
    source_hashes,
)


def say(text: str) -> None:
    print(f"==> {text}", file=sys.stderr, flush=True)


def write_manifest(build_dir: Path, content: dict[str, object]) -> None:
    build_dir.mkdir(parents=True, exist_ok=True)
    (build_dir / MANIFEST).write_text(json.dumps(content, indent=1, sort_keys=True) + "\n")


def build(build_dir: Path) -> dict[str, str]:
    """Compile :data:`MODULES` in a scratch copy; returns the built files (dotted name -> path under the build)."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    with tempfile.TemporaryDirectory(prefix="hcep-mypyc-") as scratch:
        work = Path(scratch)
        for package in PACKAGES:
            shutil.copytree(ROOT / package, work / package, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        shutil.copy2(ROOT / "pyproject.toml", work / "pyproject.toml")
        sources = [name.replace(".", "/") + ".py" for name in MODULES]
        log = work / "mypyc.log"
        with open(log, "w") as out:
            done = subprocess.run(
                [sys.executable, "-m", "mypyc", *sources], cwd=work, stdout=out, stderr=subprocess.STDOUT, check=False
            )
        if done.returncode != 0:
            tail = log.read_text(errors="replace").strip().splitlines()[-15:]
            raise RuntimeError(f"mypyc exited with {done.returncode}:\n" + "\n".join(tail))
        files: dict[str, str] = {}
        for name in MODULES:
            rel = name.replace(".", "/") + suffix
            if not (work / rel).is_file():
                raise RuntimeError(f"mypyc made no {rel}")
            files[name] = rel
        for shared in work.glob(f"*__mypyc{suffix}"):  # the group's shared library, imported by its module name
            files[shared.name[: -len(suffix)]] = shared.name
        staging = build_dir.with_name(build_dir.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        for rel in files.values():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(work / rel, staging / rel)
    shutil.rmtree(build_dir, ignore_errors=True)
    staging.rename(build_dir)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="build even if the build is current")
    parser.add_argument("--remove", action="store_true", help="remove the build (pure Python from then on)")
    args = parser.parse_args(argv)
    if args.remove:
        shutil.rmtree(BUILD_DIR, ignore_errors=True)
        say(f"removed {BUILD_DIR}: the engine runs as pure Python")
        return 0
    if os.environ.get("HCEP_NO_COMPILE", "") not in ("", "0"):
        say("HCEP_NO_COMPILE is set: the engine's hot path is not compiled (pure Python)")
        return 0
    if not args.force and current(BUILD_DIR)[0] is not None:
        say(f"the compiled hot path is current ({BUILD_DIR})")
        return 0
    say(f"compiling the engine's hot path with mypyc ({len(MODULES)} modules, about a minute)")
    hashes = source_hashes(ROOT)  # before the build: an edit during it makes the build stale, never wrongly current
    started = time.monotonic()
    try:
        files = build(BUILD_DIR)
    except (OSError, RuntimeError, subprocess.SubprocessError) as err:
        shutil.rmtree(BUILD_DIR, ignore_errors=True)
        write_manifest(BUILD_DIR, {"error": str(err).splitlines()[0], "detail": str(err), "python": python_tag()})
        say(f"WARNING: the compiled hot path was not built, the engine runs as pure Python: {err}")
        return 0
    write_manifest(BUILD_DIR, {"python": python_tag(), "files": files, "sources": hashes})
    say(f"compiled {len(MODULES)} modules in {time.monotonic() - started:.0f} s into {BUILD_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

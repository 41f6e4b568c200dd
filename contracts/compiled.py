"""The engine's hot path compiled by mypyc, used only while it is exactly the source in the tree.

``deploy/compile_engine.py`` (run by ``deploy/install.sh``) compiles the modules of the matching hot path
(:data:`MODULES`: the event decoder, the one-pass feeder, the NFA^b runtime, the possible-worlds evaluator, the
record ids) with mypyc into ``.hcep-compiled/`` beside the packages, with a manifest of the SHA-256 of every source
file of ``engine`` and ``contracts`` it was built from.  :func:`install` (called first thing by ``engine`` and
``contracts``) puts a finder in front of Python's that loads those extension modules instead of the ``.py`` files --
only when the manifest matches the sources now, for this Python, and ``HCEP_PURE`` is not set.  Any edit to a source
file of either package, a missing or failed build, or ``HCEP_PURE=1`` leaves everything pure Python: the reference,
the same code interpreted (``tests/engine/test_compiled.py`` runs the conformance suite and ``hcep match`` both ways
and requires equal results).  :data:`STATUS` says which, and why.

Why all or nothing: mypyc compiles the modules into one shared library whose functions call each other directly, so a
stale compiled module could be reached from a fresh one; and it reads the other modules' types as they were.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

#: The modules compiled (their dotted names), in the order given to mypyc.
MODULES = (
    "contracts.records",
    "engine.events",
    "engine.snapshot",
    "engine.output",
    "engine.onepass",
    "engine.plan.predicates",
    "engine.runtime.run",
    "engine.runtime.limits",
    "engine.runtime.state",
    "engine.runtime.matcher",
    "engine.imprecise.bounds",
    "engine.imprecise.buffers",
    "engine.imprecise.state",
    "engine.imprecise.enumeration",
    "engine.imprecise.confidence",
    "engine.imprecise.evaluator",
)
#: The packages whose every source file the build depends on (the manifest's hashes).
PACKAGES = ("engine", "contracts")
#: The tree holding the packages (an editable install: the repository).
ROOT = Path(__file__).resolve().parent.parent
#: Where the build goes, beside the packages.
BUILD_DIR = ROOT / ".hcep-compiled"
MANIFEST = "manifest.json"
#: Set to anything but "" or "0" to run pure Python whatever was built.
PURE_ENV = "HCEP_PURE"

#: What :func:`install` found: ``"compiled: N modules"`` or ``"pure: <why>"``.
STATUS = "pure: not checked yet"
_FINDER: CompiledFinder | None = None


def source_hashes(root: Path = ROOT, packages: Sequence[str] = PACKAGES) -> dict[str, str]:
    """SHA-256 of every ``.py`` file of ``packages`` under ``root``, by path relative to ``root`` (``/``-separated)."""
    out: dict[str, str] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def python_tag() -> str:
    """The interpreter a build is for: its extension-module suffix (implementation, version, platform)."""
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def check(build_dir: Path = BUILD_DIR, root: Path = ROOT) -> tuple[dict[str, Path] | None, str]:
    """The extension modules to load by dotted name, or None, and the status line saying why."""
    flag = os.environ.get(PURE_ENV, "")
    if flag not in ("", "0"):
        return None, f"pure: {PURE_ENV}={flag}"
    return current(build_dir, root)


def current(build_dir: Path = BUILD_DIR, root: Path = ROOT) -> tuple[dict[str, Path] | None, str]:
    """:func:`check` without ``HCEP_PURE``: the build's files if it was made from the sources now, for this Python,
    complete and without error (what ``deploy/compile_engine.py`` asks before building again)."""
    try:
        manifest = json.loads((build_dir / MANIFEST).read_text())
    except FileNotFoundError:
        return None, f"pure: no build in {build_dir} (bash deploy/install.sh, or python deploy/compile_engine.py)"
    except (OSError, ValueError) as err:
        return None, f"pure: unreadable manifest {build_dir / MANIFEST}: {err}"
    if manifest.get("error"):
        return None, f"pure: the build failed: {manifest['error']}"
    if manifest.get("python") != python_tag():
        return None, f"pure: built for {manifest.get('python')}, this Python is {python_tag()}"
    built: dict[str, str] = manifest.get("sources", {})
    now = source_hashes(root)
    if built != now:
        changed = sorted(p for p in built.keys() | now.keys() if built.get(p) != now.get(p))
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        return None, f"pure: {shown} changed since the build (python deploy/compile_engine.py rebuilds)"
    files = {name: build_dir / rel for name, rel in manifest.get("files", {}).items()}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing or not files:
        return None, f"pure: the build is incomplete ({', '.join(missing[:3]) or 'no modules'})"
    compiled = sum(1 for name in files if name in MODULES)
    return files, f"compiled: {compiled} modules ({build_dir})"


class CompiledFinder:
    """A meta-path finder that answers for the compiled modules only (everything else: Python's own finders)."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        location = self.files.get(fullname)
        if location is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(location))
        return importlib.util.spec_from_file_location(fullname, location, loader=loader)


def install() -> str:
    """Put the finder in front of Python's when the build matches the sources (once per process); returns
    :data:`STATUS`.  Must run before any module of :data:`MODULES` is imported (``engine`` and ``contracts`` call it
    first)."""
    global STATUS, _FINDER
    if _FINDER is not None or not STATUS.startswith("pure: not checked"):
        return STATUS
    loaded = [m for m in MODULES if m in sys.modules]
    files, STATUS = check()
    if files is not None and loaded:  # pragma: no cover - an import order bug: say so rather than mix
        files, STATUS = None, f"pure: {', '.join(loaded)} imported before the compiled build could be installed"
    if files is not None:
        _FINDER = CompiledFinder(files)
        sys.meta_path.insert(0, _FINDER)
    return STATUS


def active() -> bool:
    """True when the compiled modules are (to be) loaded in this process."""
    return _FINDER is not None

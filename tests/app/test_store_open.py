"""Opening one new store from several processes at once (``hcep run`` instances sharing a data dir start
together): every one opens it.  SQLite answers the loser of the journal-mode switch "database is locked" without
waiting, so ``app.store`` retries that switch; CI once lost a pipeline test's second instance to it."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path


def _open(path: str, barrier: mp.synchronize.Barrier, results: mp.Queue) -> None:  # type: ignore[name-defined]
    from app.store import Store

    barrier.wait()
    try:
        Store(path).close()
        results.put("ok")
    except Exception as err:  # noqa: BLE001 - the test reports whatever escaped
        results.put(repr(err))


def test_processes_opening_a_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    failures = []
    for round_ in range(25):
        path = str(tmp_path / f"r{round_}" / "store.sqlite")
        barrier = ctx.Barrier(4)
        results = ctx.Queue()
        procs = [ctx.Process(target=_open, args=(path, barrier, results)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        failures += [r for r in (results.get(timeout=10) for _ in procs) if r != "ok"]
    assert not failures

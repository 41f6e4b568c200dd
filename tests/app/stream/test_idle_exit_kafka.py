"""``hcep run --exit-when-idle S`` after a kill -9, through the real broker (issue 18): the restarted service joins a
group whose dead member still holds every partition until its session times out.  Idle means assigned, caught up to
the end offsets and nothing new for S seconds -- so it must wait for the assignment and read the whole backlog before
it exits 0, even with a session timeout longer than S."""

from __future__ import annotations

import os
import random
import signal
import threading
from pathlib import Path

from tests.conftest import Broker
from tests.pipeline.conftest import run_command, start_service, wait_until
from tests.pipeline.test_pipeline import publish_in_chunks
from tests.pipeline.workload import PACK, expected_alerts, expected_record_ids, hadoop_and_ganglia


def test_a_restarted_service_reads_the_backlog_before_it_is_idle(kafka_broker: Broker, tmp_path: Path) -> None:
    from app.kafka_io import ensure_topics
    from app.store import Store, store_path

    bootstrap = kafka_broker.bootstrap
    prefix = f"idle{os.getpid()}-{random.randrange(10**6)}"
    hadoop, ganglia = hadoop_and_ganglia(jobs=8, seed=11)
    records = expected_record_ids(PACK, hadoop + ganglia)
    alerts = set(expected_alerts(PACK, hadoop + ganglia))
    ensure_topics(bootstrap, {f"{prefix}.hadoop": 4, f"{prefix}.ganglia": 1})
    data = tmp_path / "data"
    cmd = run_command(
        bootstrap,
        PACK,
        data,
        prefix=prefix,
        extra=["--exit-when-idle", "3", "--session-timeout", "9"],
    )
    log = tmp_path / "run.log"
    publisher = threading.Thread(
        target=publish_in_chunks, args=(bootstrap, prefix, hadoop, ganglia, 16, 0.5), daemon=True
    )
    publisher.start()
    proc = start_service(cmd, log)
    try:
        # Kill it mid-stream, once it has checkpointed some of its work.
        wait_until(lambda: "epoch:" in log.read_text(), 60, f"the first assignment (log: {log})")
        store_file = store_path(str(data))
        wait_until(
            lambda: os.path.exists(store_file) and Store(store_file).counts()["matches"] > 0, 60, "the first records"
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        publisher.join(timeout=60)
        assert Store(store_file).counts()["matches"] < len(records), "killed too late: nothing left to read"
        proc = start_service(cmd, log)
        assert proc.wait(timeout=180) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    store = Store(store_path(str(data)))
    stored = {r[0] for r in store.db.execute("SELECT id FROM matches")}
    transitions = {r[0] for r in store.db.execute("SELECT id FROM alerts")}
    assert stored == records, f"{len(records - stored)} of {len(records)} records never read: exited before the backlog"
    assert transitions == alerts

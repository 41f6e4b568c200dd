"""Write the behaviour-unchanged test's golden outputs (``tests/differential/golden``), when a change of behaviour is
meant: ``python -m tests.differential.record``.  Starts a Kafka broker of its own (deploy/kafka) for ``hcep run``."""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

from tests.conftest import Broker, free_port
from tests.differential.outputs import offline_outputs, run_outputs, write_golden


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hcep-golden-") as tmp:
        work = Path(tmp)
        outputs = offline_outputs(work)
        broker = Broker("", free_port(), free_port(), work / "kafka")
        broker.bootstrap = f"127.0.0.1:{broker.port}"
        broker.start()
        try:
            outputs.update(run_outputs(broker.bootstrap, work, f"golden{random.randrange(10**6)}"))
        finally:
            broker.stop(force=True)
    for key, lines in sorted(outputs.items()):
        write_golden(key, lines)
        print(f"{key}: {len(lines)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())

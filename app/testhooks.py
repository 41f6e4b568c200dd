"""Test hooks: crash points for the fault-injection tests (issue 18), inert unless ``HCEP_TEST_CRASH_AT`` is set.

``HCEP_TEST_CRASH_AT=NAME:N`` makes the process kill itself with SIGKILL (as ``kill -9`` would: no clean-up, no
flush, no ``finally``) the ``N``-th time it passes a crash point called ``NAME``.  The points:

- ``checkpoint``: between the statements of the checkpoint transaction (:meth:`app.store.Store.commit`: after
  ``BEGIN``, after each table's rows, before ``COMMIT``) and just after it (the transaction committed; the dead-letter
  file, the Kafka offsets and the hand-over to the senders not yet done): about ten passes per checkpoint.
- ``delivery``: in the webhook outbox sender (:class:`app.alerts.webhook.AlertSender`), before each POST and between
  the receiver's 2xx and the outbox mark: two passes per POST (odd ``N``: before one, even: after one).

Before it dies the process writes one line to stderr, ``HCEP_TEST_CRASH_AT: kill -9 at checkpoint:N (after
matches)``, so that a test can tell where each kill landed.  The variable is read once, when this module is first
imported; without it :func:`crash_point` returns at once (one global lookup and a comparison).  Never set it outside
tests: the process dies on purpose.
"""

from __future__ import annotations

import os
import signal
import sys

ENV = "HCEP_TEST_CRASH_AT"


def _parse(spec: str | None) -> tuple[str, int] | None:
    if not spec:
        return None
    name, _, n = spec.partition(":")
    try:
        count = int(n)
    except ValueError:
        raise ValueError(f"{ENV}={spec!r}: expected NAME:N (e.g. checkpoint:3)") from None
    if not name or count < 1:
        raise ValueError(f"{ENV}={spec!r}: expected NAME:N with N >= 1")
    return name, count


_TARGET = _parse(os.environ.get(ENV))
_passes: dict[str, int] = {}


def crash_point(name: str, where: str = "") -> None:
    """Die by SIGKILL if this is the pass through ``name`` that ``HCEP_TEST_CRASH_AT`` names; otherwise nothing."""
    if _TARGET is None or _TARGET[0] != name:
        return
    n = _passes[name] = _passes.get(name, 0) + 1
    if n == _TARGET[1]:
        sys.stderr.write(f"{ENV}: kill -9 at {name}:{n}" + (f" ({where})" if where else "") + "\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)

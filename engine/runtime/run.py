"""A partial match of the NFA^b runtime (and, re-exported, the error for events fed out of time order)."""

from __future__ import annotations

from typing import Any

from engine.evaluator import OutOfOrderError

__all__ = ["OutOfOrderError", "Run"]


class Run:
    """One partial match: the component it waits at (``k``), whether that Kleene component has elements (``kin``),
    the binding, the first/last selected times and the equivalence values bound so far (``eqv``); ``chain``: for a
    run written as increments (semantics section 5), the Kleene cell and the id of its last record and the
    :class:`contracts.records.IncrementIds` that computes the next ids (None before its first record)."""

    __slots__ = ("k", "kin", "bind", "t_first", "t_last", "t_prev", "eqv", "chain")

    def __init__(
        self,
        k: int,
        kin: bool,
        bind: list[Any],
        t_first: float,
        t_last: float,
        t_prev: float,
        eqv: tuple[Any, ...],
        chain: tuple[Any, str, Any] | None = None,
    ) -> None:
        self.k = k
        self.kin = kin
        self.bind = bind
        self.t_first = t_first
        self.t_last = t_last
        self.t_prev = t_prev
        self.eqv = eqv
        self.chain = chain

    def clone(self) -> Run:
        """A copy that shares the bindings; it starts no chain of its own records (its next record is whole)."""
        return Run(self.k, self.kin, self.bind.copy(), self.t_first, self.t_last, self.t_prev, self.eqv)

"""The whole evidence of a growing run's records: alert annotations follow the chain (docs/semantics.md section 5).

A record of a growing run (Q4) lists, for its growing variable, only the events taken since the run's previous
record and names that record in ``extends``.  An alert's evidence shows the first few event ids of each variable and
how many there are in all, of the whole signature; :class:`EvidenceChains` keeps exactly that much per chain (its
latest record's id -> per variable the first ids and the count), so a chain costs a few ids however long it grows.
Its state is plain data, kept in the alert rules' snapshot so that a restarted process goes on with the same
evidence.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

from contracts.records import growing_var

#: Chains remembered (the least recently extended forgotten first; a chain forgotten and then extended shows its
#: increment only, counted from there).
MAX_CHAINS = 4096


class EvidenceIds(Sequence[str]):
    """The ids of one variable of a whole signature as the evidence needs them: the first ``head`` ids and the
    count (``len``); iterating gives the head only."""

    __slots__ = ("head", "total")

    def __init__(self, head: list[str], total: int) -> None:
        self.head = head
        self.total = total

    def __len__(self) -> int:
        return self.total

    def __iter__(self) -> Iterator[str]:
        return iter(self.head)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        return self.head[i]


class EvidenceChains:
    """Per chain of increments, the head of the whole signature of its latest record (see the module)."""

    def __init__(self, keep: int, max_chains: int = MAX_CHAINS) -> None:
        self.keep = keep
        self.max_chains = max_chains
        self.heads: dict[str, dict[str, tuple[list[str], int]]] = {}

    def view(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` with, for a record of a growing run, its ``match`` as the whole signature's evidence
        (:class:`EvidenceIds` per variable); any other record unchanged."""
        rid = record.get("id")
        if not isinstance(rid, str):
            return record
        match = record.get("match") or {}
        parent = record.get("extends")
        base = self.heads.pop(parent, None) if isinstance(parent, str) else None
        grow = growing_var(record) if parent is not None else None
        keep = self.keep
        heads: dict[str, tuple[list[str], int]] = {}
        for var, ids in match.items():
            ids = list(ids)
            if var == grow and base is not None and var in base:
                head, count = base[var]
                if len(head) < keep:
                    head = head + ids[: keep - len(head)]
                heads[var] = (head, count + len(ids))
            else:
                heads[var] = (ids[:keep], len(ids))
        self.heads[rid] = heads
        if len(self.heads) > self.max_chains:
            del self.heads[next(iter(self.heads))]
        out = dict(record)
        out["match"] = {var: EvidenceIds(head, count) for var, (head, count) in heads.items()}
        return out

    def snapshot(self) -> list[list[Any]]:
        return [[rid, {v: [h, n] for v, (h, n) in heads.items()}] for rid, heads in self.heads.items()]

    def merge(self, data: Any) -> None:
        """Take the chains of a snapshot (:meth:`snapshot`) this one has not got; bad entries are skipped."""
        if not isinstance(data, list):
            return
        for entry in data:
            try:
                rid, heads = entry
                parsed = {str(v): ([str(i) for i in h], int(n)) for v, (h, n) in dict(heads).items()}
            except (TypeError, ValueError):
                continue
            if isinstance(rid, str) and rid not in self.heads:
                self.heads[rid] = parsed

    def restore(self, data: Any) -> None:
        self.heads.clear()
        self.merge(data)

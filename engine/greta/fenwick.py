"""The single-range-predicate fast path: a Fenwick tree over value ranks (digest section 12, "Fast path").

For a transition whose only predicate is ``q OP key`` (``b[i].val > b[i-1].val``: q is the new event's value, key
the predecessor's), the predecessors that qualify are a prefix or a suffix of the predecessors sorted by ``key``.  A
Fenwick tree over the ranks of the keys, storing aggregate vectors, answers "combine every predecessor with key < q"
in O(log n), so a window costs O(n log n) instead of O(n^2).  Ranks need the window's keys: the matcher builds these
indexes when the window's events are all known (:class:`engine.greta.matcher.GretaMatcher`, deferred mode).

Aggregates are only inserted (a window's graph only grows), so prefix MIN/MAX work as well as sums.  Numbers and
strings are ranked separately, because the engine's comparisons between a number and a string are unknown (no edge);
None and NaN never compare true, so they are never inserted nor found.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["Fenwick", "RangeIndex", "domains", "key_kind"]


def key_kind(value: Any) -> str | None:
    """``"num"``, ``"str"``, None (never compares true: no edge) or ``"other"`` (not indexable)."""
    if value is None:
        return None
    kind = type(value)
    if kind is int or kind is bool:
        return "num"
    if kind is float:
        return None if math.isnan(value) else "num"
    if kind is str:
        return "str"
    return "other"


def domains(keys: Iterable[Any]) -> dict[str, list[Any]]:
    """The sorted distinct numbers and strings among ``keys``: the rank spaces of a :class:`RangeIndex`."""
    nums, strs = set(), set()
    for key in keys:
        kind = key_kind(key)
        if kind == "num":
            nums.add(key)
        elif kind == "str":
            strs.add(key)
        elif kind == "other":
            raise TypeError(f"cannot rank {key!r}")
    return {"num": sorted(nums), "str": sorted(strs)}


class Fenwick:
    """A Fenwick (binary indexed) tree over ``n`` positions combining values with ``add``; empty nodes are None."""

    __slots__ = ("tree", "add", "n")

    def __init__(self, n: int, add: Callable[[Any, Any], Any]) -> None:
        self.n = n
        self.tree: list[Any] = [None] * (n + 1)
        self.add = add

    def insert(self, pos: int, value: Any) -> None:
        """Combine ``value`` into position ``pos`` (0-based)."""
        tree, add, n = self.tree, self.add, self.n
        i = pos + 1
        while i <= n:
            old = tree[i]
            tree[i] = value if old is None else add(old, value)
            i += i & -i

    def prefix(self, r: int) -> Any:
        """The combination of positions ``0 .. r-1``; None when they are all empty."""
        tree, add = self.tree, self.add
        res = None
        i = r
        while i > 0:
            x = tree[i]
            if x is not None:
                res = x if res is None else add(res, x)
            i &= i - 1
        return res


class RangeIndex:
    """Predecessor aggregates indexed by ``key`` for the edge predicate ``q OP key``; every query is a prefix.

    For ``q > key`` / ``q >= key`` the tree runs over ascending ranks (keys below q); for ``q < key`` / ``q <= key``
    over descending ranks (keys above q).
    """

    __slots__ = ("op", "add", "domains", "trees")

    def __init__(self, keys: Iterable[Any] | dict[str, list[Any]], op: str, add: Callable[[Any, Any], Any]) -> None:
        """``keys``: every key that may be inserted, or their :func:`domains` (shared, never modified)."""
        if op not in ("<", "<=", ">", ">="):
            raise ValueError(f"not a range operator: {op}")
        self.op = op
        self.add = add
        self.domains = keys if isinstance(keys, dict) else domains(keys)
        self.trees: dict[str, Fenwick] = {}

    def insert(self, key: Any, value: Any) -> None:
        kind = key_kind(key)
        if kind is None:
            return
        domain = self.domains[kind]
        pos = bisect_left(domain, key)
        if pos == len(domain) or domain[pos] != key:
            raise KeyError(f"{key!r} is not in the index's domain")
        tree = self.trees.get(kind)
        if tree is None:
            tree = self.trees[kind] = Fenwick(len(domain), self.add)
        if self.op in ("<", "<="):
            pos = len(domain) - 1 - pos
        tree.insert(pos, value)

    def query(self, q: Any) -> Any:
        """Combine the values of every inserted key with ``q OP key``; None when there is none."""
        kind = key_kind(q)
        if kind is None or kind == "other":
            return None
        tree = self.trees.get(kind)
        if tree is None:
            return None
        domain = self.domains[kind]
        op = self.op
        if op == ">":
            return tree.prefix(bisect_left(domain, q))
        if op == ">=":
            return tree.prefix(bisect_right(domain, q))
        m = len(domain)
        if op == "<":
            return tree.prefix(m - bisect_right(domain, q))
        return tree.prefix(m - bisect_left(domain, q))

"""The match record (docs/semantics.md section 5), its identity, and the chains of increments of growing runs.

A run that completes a match at every event it takes (a trailing Kleene component under skip_till_next_match,
partition or strict contiguity: Q4) is written as a chain (semantics section 5): every record carries ``"id"`` (its
:func:`record_id`, over the *whole* signature) and lists, for the growing variable, only the events taken since the
run's previous record, which it names in ``"extends"``.  The growing variable is the last one of the record's
``match`` (a trailing component is the pattern's last; records keep the pattern's order).  :class:`ChainRebuilder`
(records in order) and :func:`follow_chain` / :func:`merge_chain` (random access, e.g. a store) give back the whole
signature.

**The id of an increment** is a hash chain: sha256 of the query, the parent's id and the signature the increment
lists (the first record of a chain lists its whole signature and has the ordinary id).  So it is a function of the
whole signature (and of where the run wrote its records), computed in time proportional to the increment.  Hashing
the whole sorted signature at every record, as the first record's id does, would be quadratic again: event ids are
random (collectors hash them), so each new id sorts into the middle of the previous ones and the whole text changes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from json.encoder import encode_basestring_ascii as _quote  # what json.dumps quotes a str with (ensure_ascii)
from typing import Any, NotRequired, TypedDict, cast

#: One match record, the JSON object of docs/semantics.md section 5, and the one type a record has from the engine
#: to the store and the wire: the engine's evaluators build it (``engine.evaluator.Record``), the stream service stores
#: it as it comes (:class:`contracts.schema.MatchRow`), ``hcep match`` writes it, and the dashboard, the alert rules
#: and the matches topic read it back.  A ``TypedDict`` rather than a class because a record *is* that JSON object:
#: the engine's hot path builds plain dicts (a class, or a copy at the app's door, cost every record a conversion),
#: ``json.dumps`` writes it without one, and the type checker still knows every key.  ``return`` is a Python keyword,
#: hence the functional form.  ``match``: for a pattern, the event ids per variable (a Kleene list in record order;
#: an increment lists only the events since the record it ``extends``, section 5.3); for a trend aggregate, the
#: group's attribute values (section 5.4).  ``id`` and ``extends``: only the records of growing runs carry them.
MatchRecord = TypedDict(
    "MatchRecord",
    {
        "query": str,
        "id": NotRequired[str],
        "extends": NotRequired[str],
        "match": dict[str, Any],
        "confidence": float,
        "start": float,
        "end": float,
        "return": dict[str, Any],
    },
)


def from_dict(obj: Mapping[str, Any]) -> MatchRecord:
    """A record read back (a store of any age, a JSON line, the matches topic): the keys of section 5 in their order,
    numbers as floats, a missing ``match``/``return`` empty, a missing confidence 1 and a missing time 0; ``id`` and
    ``extends`` kept when they are strings (stores written before growing runs have neither)."""
    out: dict[str, Any] = {"query": str(obj["query"])}
    for key in ("id", "extends"):
        value = obj.get(key)
        if isinstance(value, str):
            out[key] = value
    out["match"] = dict(obj.get("match") or {})
    out["confidence"] = float(obj.get("confidence", 1.0))
    out["start"] = float(obj.get("start", 0.0))
    out["end"] = float(obj.get("end", 0.0))
    out["return"] = dict(obj.get("return") or {})
    return cast(MatchRecord, out)


def to_dict(record: MatchRecord) -> dict[str, Any]:
    """The record's JSON object with the keys in section 5's order (query, id, extends, match, confidence, start,
    end, return), whatever order it was built in: the store's text of a record does not depend on its evaluator."""
    out: dict[str, Any] = {"query": record["query"]}
    if "id" in record:
        out["id"] = record["id"]
    if "extends" in record:
        out["extends"] = record["extends"]
    out["match"] = record["match"]
    out["confidence"] = record["confidence"]
    out["start"] = record["start"]
    out["end"] = record["end"]
    out["return"] = record["return"]
    return out


def record_id(record: Mapping[str, Any], output: str = "all") -> str:
    """The identity of a match record: sha256 of the query and the signature (the sorted event ids per variable) or,
    for ``distinct`` output, of the RETURN value, which is what that mode makes unique.  A record of a growing run
    carries its id (computed over its whole signature, which it does not list): that one is returned."""
    obj = record
    carried = obj.get("id")
    if isinstance(carried, str):
        return carried
    parent = obj.get("extends")
    if output == "distinct":
        body: Any = [obj["query"], "return", obj.get("return", {})]
    else:
        match = obj.get("match", {})
        fast = signature_id(obj["query"], match, parent if isinstance(parent, str) else None)
        if fast is not None:
            return fast
        if isinstance(parent, str):  # an increment: its parent's id and what it adds (see increments below)
            body = [obj["query"], "extends", parent, {var: sorted(ids) for var, ids in match.items()}]
        else:
            body = [obj["query"], "match", {var: sorted(ids) for var, ids in match.items()}]
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def signature_id(query: Any, match: Any, parent: str | None = None) -> str | None:
    """:func:`record_id` of a signature whose query, variables and ids are all strings (the usual case), built as
    the same JSON text without ``json.dumps``'s generic walk (a growing run writes a record per event); None for
    anything else (:func:`record_id` then takes the general way)."""
    try:
        parts = [_quote(var) + ":[" + ",".join(map(_quote, sorted(match[var]))) + "]" for var in sorted(match)]
        head = "[" + _quote(query) + (',"extends",' + _quote(parent) if parent is not None else ',"match"')
    except (TypeError, AttributeError):  # a value that is not a str (json.dumps would take it with default=str)
        return None
    text = head + ",{" + ",".join(parts) + "}]"
    return hashlib.sha256(text.encode()).hexdigest()


class IncrementIds:
    """:func:`record_id` of the increments of one growing run, with the fixed parts of the hashed JSON text (every
    variable but the growing one ``grow`` is the same in each of the run's records) built once: a writer's cost per
    record is then the new ids, quoted, and one SHA-256."""

    __slots__ = ("head", "pre", "post")

    def __init__(self, query: str, match: Mapping[str, Iterable[str]], grow: str) -> None:
        keys = sorted(match)
        at = keys.index(grow)
        fixed = [_quote(k) + ":[" + ",".join(map(_quote, sorted(match[k]))) + "]" for k in keys]
        self.head = "[" + _quote(query) + ',"extends",'
        self.pre = ",{" + "".join(f + "," for f in fixed[:at]) + _quote(grow) + ":["
        self.post = "]" + "".join("," + f for f in fixed[at + 1 :]) + "}]"

    def of(self, parent: str, ids: Iterable[str]) -> str:
        """The id of the increment that extends ``parent`` and adds ``ids`` to the growing variable."""
        text = self.head + _quote(parent) + self.pre + ",".join(map(_quote, sorted(ids))) + self.post
        return hashlib.sha256(text.encode()).hexdigest()


def increment_id(query: str, parent: str, match: Mapping[str, Iterable[str]]) -> str:
    """The id of an increment (a record extending ``parent``; ``match`` as it lists it): :func:`record_id` of it."""
    return record_id({"query": query, "extends": parent, "match": {v: list(ids) for v, ids in match.items()}})


# --------------------------------------------------------------------------------------------------- growing runs


class ChainError(ValueError):
    """A record extends one that is not known (lost, or not read): its whole signature cannot be rebuilt."""


def growing_var(record: Mapping[str, Any]) -> str | None:
    """The variable an increment adds to: the last of its ``match`` (the trailing Kleene component)."""
    match = record.get("match") or {}
    return next(reversed(match), None) if isinstance(match, Mapping) else None


def extend_match(base: Mapping[str, list[str]], increment: Mapping[str, Any]) -> dict[str, list[str]]:
    """The whole signature of ``increment`` given the whole signature of the record it extends."""
    match = dict(increment.get("match") or {})
    grow = growing_var(increment)
    out = {var: list(ids) for var, ids in match.items()}
    if grow is not None:
        out[grow] = list(base.get(grow, [])) + list(match[grow])
    return out


def whole(record: Mapping[str, Any], match: dict[str, list[str]]) -> MatchRecord:
    """``record`` as a self-contained record (semantics section 5) with the whole signature ``match``: no ``id`` and no
    ``extends``, as ``hcep match --full-matches`` writes it."""
    out = {k: v for k, v in record.items() if k not in ("id", "extends")}
    out["match"] = match
    return cast(MatchRecord, out)


class ChainRebuilder:
    """Whole signatures from a stream of records in their order of output (each increment after the record it
    extends).  Keeps the whole signature of each chain's latest record only; ``max_chains`` bounds how many chains
    are kept (the oldest forgotten first: a run that ended long ago will not be extended)."""

    def __init__(self, max_chains: int | None = None) -> None:
        self.heads: dict[str, dict[str, list[str]]] = {}
        self.max_chains = max_chains

    def match_of(self, record: Mapping[str, Any]) -> dict[str, list[str]]:
        """The whole signature of ``record`` (its own ``match`` when it extends nothing); :class:`ChainError` when it
        extends a record not seen.  The lists returned belong to the rebuilder: copy them to keep them."""
        rid = record.get("id")
        parent = record.get("extends")
        if parent is None:
            match = {var: list(ids) for var, ids in (record.get("match") or {}).items()}
        else:
            base = self.heads.pop(str(parent), None)
            if base is None:
                raise ChainError(f"record {rid} of {record.get('query')} extends {parent}, which was not seen")
            grow = growing_var(record)
            match = base
            for var, ids in (record.get("match") or {}).items():
                if var == grow:
                    match.setdefault(var, []).extend(ids)
                else:
                    match[var] = list(ids)
        if isinstance(rid, str):
            self.heads[rid] = match
            if self.max_chains is not None and len(self.heads) > self.max_chains:
                del self.heads[next(iter(self.heads))]
        return match

    def full(self, record: Mapping[str, Any]) -> MatchRecord:
        """``record`` with its whole signature (:func:`whole`); the lists are copies."""
        match = self.match_of(record)
        return whole(record, {var: list(ids) for var, ids in match.items()})


def rebuild(records: Iterable[Mapping[str, Any]]) -> list[MatchRecord]:
    """Every record of ``records`` (in output order) as a self-contained one with its whole signature."""
    chains = ChainRebuilder()
    return [chains.full(r) for r in records]


def follow_chain(
    record: Mapping[str, Any], lookup: Callable[[str], Mapping[str, Any] | None], limit: int = 1_000_000
) -> tuple[list[Mapping[str, Any]], bool]:
    """The chain ending at ``record``, oldest first, found by ``lookup(id)`` (a store, an archive); and whether it is
    complete (False: a link is missing, or longer than ``limit`` records)."""
    chain = [record]
    seen = set()
    while True:
        parent = chain[-1].get("extends")
        if parent is None:
            return chain[::-1], True
        if parent in seen or len(chain) >= limit:
            return chain[::-1], False
        seen.add(parent)
        got = lookup(str(parent))
        if got is None:
            return chain[::-1], False
        chain.append(got)


def merge_chain(chain: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The whole signature of a chain given oldest first (:func:`follow_chain`)."""
    match: dict[str, list[str]] = {}
    for record in chain:
        match = (
            extend_match(match, record)
            if record.get("extends") is not None
            else {var: list(ids) for var, ids in (record.get("match") or {}).items()}
        )
    return match

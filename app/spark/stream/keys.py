"""The state keys of the buckets: values whose Spark hash partitions spread the buckets evenly over the tasks.

Why: the stateful operator groups by the ``bucket`` column, and Spark places a key in the partition
``pmod(murmur3_32(key, seed 42), spark.sql.shuffle.partitions)`` (``HashPartitioning``).  With the buckets' own
numbers as keys that placement is uneven: of buckets 0-3 over 4 partitions, three hash to partition 3 and one to 2,
so on local[2] one task did three buckets' work while two tasks had none (the stateful stage was 4.0 s against 0.1,
0.1 and 1.3 s; ``benchmarks/README.md``, issue 28 cut 6).  Bucket ``b`` is therefore keyed by a value that hashes to
partition ``b % partitions``; the router keeps emitting bucket numbers and the query maps them to their keys in the
JVM (:func:`key_column`), the processor maps a key back to its bucket.

The keys are fixed by the checkpoint: written beside it the first time (:data:`KEYS_FILE`) and read on every
restart, since Spark keeps a checkpoint's partition count and the state is stored under the keys.  A checkpoint from
before this file keeps the buckets' own numbers as keys.
"""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Any

from app.spark.stream.sink import atomic_text

#: Beside the checkpoint: ``{"partitions": P, "keys": [key of bucket 0, ...]}``.
KEYS_FILE = "hcep-keys.json"
#: Spark's seed for ``hash()`` and ``HashPartitioning`` (``Murmur3Hash``).
SEED = 42
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def spark_hash_int(value: int, seed: int = SEED) -> int:
    """Spark's ``Murmur3_x86_32.hashInt``: SQL's ``hash()`` of an int column (a signed 32-bit result)."""
    k = ((value & _M) * 0xCC9E2D51) & _M
    k = (_rotl(k, 15) * 0x1B873593) & _M
    h = _rotl((seed & _M) ^ k, 13)
    h = (h * 5 + 0xE6546B64) & _M
    h ^= 4
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def partition_of(key: int, partitions: int) -> int:
    """The shuffle partition Spark gives an int grouping key: ``pmod(hash(key), partitions)``."""
    return spark_hash_int(key) % partitions


def spread_keys(buckets: int, partitions: int) -> list[int]:
    """Distinct non-negative int keys, bucket ``b``'s landing in partition ``b % partitions`` (the smallest such)."""
    if buckets < 1 or partitions < 1:
        raise ValueError(f"buckets and partitions must be at least 1 (got {buckets}, {partitions})")
    keys = [0] * buckets
    waiting: dict[int, deque[int]] = {}  # partition -> its buckets still without a key, in order
    for b in range(buckets):
        waiting.setdefault(b % partitions, deque()).append(b)
    k = 0
    while waiting:
        p = partition_of(k, partitions)
        queue = waiting.get(p)
        if queue:
            keys[queue.popleft()] = k
            if not queue:
                del waiting[p]
        k += 1
    return keys


def checkpoint_keys(checkpoint: str | Path, buckets: int, partitions: int) -> list[int]:
    """The buckets' keys for ``checkpoint``: as written beside it, else the buckets' numbers for a checkpoint that
    already has Spark state (written before this file), else spread over ``partitions`` and written."""
    root = Path(checkpoint)
    path = root / KEYS_FILE
    if path.exists():
        keys = [int(k) for k in json.loads(path.read_text())["keys"]]
        if len(keys) != buckets or len(set(keys)) != buckets:
            raise ValueError(f"{path}: {len(keys)} keys for {buckets} buckets (the checkpoint's plan check failed?)")
        return keys
    if (root / "spark" / "offsets").is_dir() and any((root / "spark" / "offsets").iterdir()):
        return list(range(buckets))
    keys = spread_keys(buckets, partitions)
    atomic_text(path, json.dumps({"partitions": partitions, "keys": keys}))
    return keys


def key_column(bucket: Any, keys: list[int]) -> Any:
    """A Spark column: the key of the bucket number in ``bucket`` (the column itself when keys are the numbers)."""
    from pyspark.sql import functions as F

    if keys == list(range(len(keys))):
        return bucket
    return F.element_at(F.array(*[F.lit(k) for k in keys]), bucket + 1).cast("int")

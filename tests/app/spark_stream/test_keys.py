"""The buckets' state keys: Spark itself says which partition a key lands in (SQL ``hash()`` and the shuffle's
``HashPartitioning``), and the spread keys put bucket ``b`` in partition ``b % partitions``; a checkpoint keeps its
keys, and one written before the keys file keeps the buckets' numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.spark.stream.keys import KEYS_FILE, checkpoint_keys, partition_of, spark_hash_int, spread_keys

INTS = [0, 1, 2, 3, 4, 5, 12, 42, 255, 1000, 65_537, 2**31 - 1, -1, -2, -(2**31), 123_456_789]


@pytest.mark.spark
def test_the_hash_is_sparks_own(spark) -> None:
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(k,) for k in INTS], "k int")
    got = {r["k"]: r["h"] for r in df.select("k", F.hash("k").alias("h")).collect()}
    assert got == {k: spark_hash_int(k) for k in INTS}


@pytest.mark.spark
@pytest.mark.parametrize("partitions", [2, 3, 4, 8])
def test_keys_land_where_the_shuffle_puts_them(spark, partitions: int) -> None:
    """``repartition(P, col)`` is the same ``HashPartitioning`` the stateful operator's grouping requires."""
    from pyspark.sql import functions as F

    keys = [*range(40), *spread_keys(2 * partitions, partitions)]
    df = spark.createDataFrame([(k,) for k in keys], "bucket int").repartition(partitions, "bucket")
    placed = {r["bucket"]: r["p"] for r in df.select("bucket", F.spark_partition_id().alias("p")).collect()}
    assert placed == {k: partition_of(k, partitions) for k in keys}


def test_the_buckets_numbers_are_uneven_and_the_spread_keys_even() -> None:
    """Why the keys exist: buckets 0-3 as their own keys put three buckets in one of 4 partitions."""
    assert sorted(partition_of(b, 4) for b in range(4)) == [2, 3, 3, 3]
    for buckets, partitions in [(4, 4), (2, 2), (8, 4), (3, 4), (4, 2), (5, 3), (200, 200), (1, 1)]:
        keys = spread_keys(buckets, partitions)
        assert len(set(keys)) == buckets and all(0 <= k < 2**31 for k in keys)
        assert [partition_of(k, partitions) for k in keys] == [b % partitions for b in range(buckets)]


def test_a_checkpoint_keeps_its_keys(tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    first = checkpoint_keys(ck, 4, 4)
    assert first == spread_keys(4, 4)
    assert json.loads((ck / KEYS_FILE).read_text()) == {"partitions": 4, "keys": first}
    assert checkpoint_keys(ck, 4, 8) == first  # a restart: Spark keeps the checkpoint's partitions, so do the keys
    with pytest.raises(ValueError, match="3 buckets"):
        checkpoint_keys(ck, 3, 4)


def test_a_checkpoint_from_before_the_keys_keeps_the_bucket_numbers(tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    (ck / "spark" / "offsets").mkdir(parents=True)
    (ck / "spark" / "offsets" / "0").write_text("v1\n{}\n")
    assert checkpoint_keys(ck, 4, 4) == [0, 1, 2, 3]
    assert not (ck / KEYS_FILE).exists()

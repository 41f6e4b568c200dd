"""The codec framings against real Spark 4.3 output: every block decodes (lz4 checksums verified), feeding the bytes
in arbitrary pieces gives the same text (what following a growing log does), and damage is detected, not skipped."""

from __future__ import annotations

import json
import random

import pytest

from collectors.spark.codecs import CODECS, MAGIC, CodecError, decode_all, decoder
from tests.collectors.spark.conftest import LOGS, fixture


def _raw(codec: str) -> bytes:
    return (LOGS / fixture(codec)["path"]).read_bytes()


def _plain() -> bytes:
    return (LOGS / fixture("plain")["path"]).read_bytes()


@pytest.mark.parametrize("codec", CODECS)
def test_real_spark_log_decodes_to_json_lines(codec: str) -> None:
    raw = _raw(codec)
    assert raw.startswith(MAGIC[codec])
    text = decode_all(raw, codec)
    lines = text.split(b"\n")
    assert lines[-1] == b""  # Spark ends every event with a newline
    kinds = [json.loads(line)["Event"] for line in lines[:-1]]
    assert kinds[0] == "SparkListenerLogStart" and kinds[-1] == "SparkListenerApplicationEnd"
    assert len(text) > 16 * 4096  # many blocks: the fixtures use 4k blocks (lz4, snappy), 64k chunks (lzf)


@pytest.mark.parametrize("codec", CODECS)
def test_feeding_in_pieces_gives_the_same_text(codec: str) -> None:
    raw = _raw(codec)
    whole = decode_all(raw, codec)
    rng = random.Random(codec)
    dec = decoder(codec)
    parts, pos = [], 0
    while pos < len(raw):
        size = rng.choice((1, 7, 100, 4096, 30000))
        parts.append(dec.feed(raw[pos : pos + size]))
        pos = min(pos + size, len(raw))
        assert dec.offset + dec.pending == pos  # everything fed is either decoded or held as an unfinished block
    assert b"".join(parts) == whole
    assert dec.close() is None


@pytest.mark.parametrize("codec", CODECS)
def test_a_cut_stream_holds_its_unfinished_block(codec: str) -> None:
    raw = _raw(codec)
    cut = len(raw) * 2 // 3
    dec = decoder(codec)
    got = dec.feed(raw[:cut])
    assert decode_all(raw, codec).startswith(got)
    assert dec.pending > 0 and dec.close() is not None  # a finished file cut like this is reported as truncated
    with pytest.raises(CodecError):
        decode_all(raw[:cut], codec)


@pytest.mark.parametrize("codec", ["lz4", "snappy", "lzf"])
def test_damage_inside_a_block_is_an_error_with_its_offset(codec: str) -> None:
    raw = bytearray(_raw(codec))
    spot = len(raw) // 2
    for i in range(spot, spot + 64):
        raw[i] ^= 0x5A
    with pytest.raises(CodecError) as err:
        decode_all(bytes(raw), codec)
    assert 0 <= err.value.offset <= spot + 64


def test_zstd_damaged_frame_header_is_an_error() -> None:
    """Spark's zstd frames carry no checksum: damage inside a frame shows up as lines that are not JSON (dead
    letters); a damaged frame header is a codec error."""
    raw = bytearray(_raw("zstd"))
    raw[1] ^= 0xFF
    with pytest.raises(CodecError) as err:
        decode_all(bytes(raw), "zstd")
    assert err.value.offset == 0


def test_lz4_checksum_is_checked() -> None:
    raw = bytearray(_raw("lz4"))
    raw[17] ^= 0x01  # the first block's checksum field (magic 8, token 1, lengths 8)
    with pytest.raises(CodecError, match="checksum"):
        decode_all(bytes(raw), "lz4")


def test_plain_decoder_passes_bytes_through() -> None:
    raw = _plain()
    assert decode_all(raw, None) == raw


def test_unknown_codec_is_refused() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        decoder("gzip")

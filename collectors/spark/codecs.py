"""Incremental decoders for the four codecs Spark compresses event logs with (``spark.eventLog.compression.codec``).

Spark does not write the standard frame formats for two of them, so the framing is parsed here and only the block
codec is handed to a library:

- ``lz4``: lz4-java's ``LZ4BlockOutputStream``: blocks of ``"LZ4Block"``, a token (method ``0x10`` raw / ``0x20``
  LZ4, low nibble the block-size level), compressed and original length (int32 LE) and an XXHash32 checksum (seed
  ``0x9747b28c``, masked to 28 bits) of the original bytes; an empty block ends a stream (another may follow).
- ``snappy``: snappy-java's ``SnappyOutputStream``: a 16-byte header (``\\x82SNAPPY\\x00``, version and compatible
  version as int32 BE), then chunks of int32 BE length + one raw snappy block.  A header may reappear between chunks
  (concatenated streams).
- ``lzf``: compress-lzf's ``LZFOutputStream``: chunks ``"ZV"`` + type 0 (stored: uint16 BE length) or 1 (compressed:
  uint16 BE compressed and original length).
- ``zstd``: standard zstd frames; zstd-jni closes a frame on every flush, so a log is many frames.

Every decoder is fed whatever bytes have appeared in the file and returns the decoded bytes of every *complete* block
(a block the writer has not finished yet stays pending), so a growing ``.inprogress`` log can be followed.
:meth:`Decoder.close` says whether the stream ended cleanly.
"""

from __future__ import annotations

import struct
from typing import Any

#: The short names Spark accepts for ``spark.eventLog.compression.codec`` (it rejects anything else).
CODECS = ("lz4", "lzf", "snappy", "zstd")

LZ4_MAGIC = b"LZ4Block"
LZ4_HEADER = len(LZ4_MAGIC) + 1 + 4 + 4 + 4
LZ4_RAW, LZ4_COMPRESSED = 0x10, 0x20
LZ4_SEED = 0x9747B28C
SNAPPY_MAGIC = b"\x82SNAPPY\x00"
SNAPPY_HEADER = len(SNAPPY_MAGIC) + 8
LZF_MAGIC = b"ZV"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: The first bytes of each kind of event-log file (plain logs start with a JSON object).
MAGIC = {"lz4": LZ4_MAGIC, "snappy": SNAPPY_MAGIC, "lzf": LZF_MAGIC, "zstd": ZSTD_MAGIC, None: b"{"}


class CodecError(ValueError):
    """Bytes that are not a valid stream of the codec; ``offset`` is where the bad block starts in the file."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class Decoder:
    """Plain (uncompressed) logs, and the base of the block decoders.

    ``offset`` is the file offset up to which input has been decoded; ``pending`` the bytes of an unfinished block.
    """

    codec: str | None = None

    def __init__(self) -> None:
        self.offset = 0
        self._buf = bytearray()

    @property
    def pending(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> bytes:
        """The decoded bytes of every block completed by ``data``."""
        self.offset += len(data)
        return bytes(data)

    def close(self) -> str | None:
        """None when the stream ended on a block boundary, else why not (a truncated last block)."""
        if self._buf:
            return f"{len(self._buf)} bytes of an unfinished {self.codec} block at the end"
        return None


class _Framed(Decoder):
    """A decoder for length-framed blocks: subclasses parse one block at the front of the buffer."""

    def feed(self, data: bytes) -> bytes:
        self._buf += data
        out: list[bytes] = []
        while self._buf:
            taken = self._block(out)
            if taken == 0:
                break  # the block at the front is not complete yet
            del self._buf[:taken]
            self.offset += taken
        return b"".join(out)

    def _block(self, out: list[bytes]) -> int:
        """Decode the block at the front of ``self._buf`` into ``out``; its size in bytes, or 0 if incomplete."""
        raise NotImplementedError

    def _fail(self, message: str) -> CodecError:
        return CodecError(f"{self.codec}: {message}", self.offset)


class Lz4BlockDecoder(_Framed):
    """lz4-java ``LZ4BlockOutputStream`` (the block codec: the ``lz4`` package)."""

    codec = "lz4"

    def __init__(self) -> None:
        super().__init__()
        import lz4.block
        import xxhash

        self._decompress = lz4.block.decompress
        self._xxh32 = xxhash.xxh32_intdigest

    def _block(self, out: list[bytes]) -> int:
        buf = self._buf
        if len(buf) < LZ4_HEADER:
            if not LZ4_MAGIC.startswith(bytes(buf[: len(LZ4_MAGIC)])):
                raise self._fail("bad block magic")
            return 0
        if buf[:8] != LZ4_MAGIC:
            raise self._fail("bad block magic")
        token = buf[8]
        method, level = token & 0xF0, token & 0x0F
        compressed, original, check = struct.unpack_from("<iii", buf, 9)
        if method not in (LZ4_RAW, LZ4_COMPRESSED):
            raise self._fail(f"unknown block method 0x{method:02x}")
        if (
            compressed < 0
            or original < 0
            or original > 1 << (level + 10)
            or (method == LZ4_RAW and compressed != original)
        ):
            raise self._fail(f"bad block lengths (compressed {compressed}, original {original}, level {level})")
        if original == 0:  # the end mark of one stream (another may be concatenated after it)
            if compressed != 0 or check != 0:
                raise self._fail("bad end-of-stream block")
            return LZ4_HEADER
        end = LZ4_HEADER + compressed
        if len(buf) < end:
            return 0
        body = bytes(buf[LZ4_HEADER:end])
        if method == LZ4_RAW:
            plain = body
        else:
            try:
                plain = self._decompress(body, uncompressed_size=original)
            except Exception as err:  # noqa: BLE001 - lz4 raises LZ4BlockError, a plain Exception subclass
                raise self._fail(f"corrupt block: {err}") from None
        if len(plain) != original:
            raise self._fail(f"block decoded to {len(plain)} bytes, header says {original}")
        if self._xxh32(plain, seed=LZ4_SEED) & 0x0FFFFFFF != check & 0x0FFFFFFF:
            raise self._fail("block checksum mismatch")
        out.append(plain)
        return int(end)


class SnappyJavaDecoder(_Framed):
    """snappy-java ``SnappyOutputStream`` (the block codec: ``cramjam``'s raw snappy)."""

    codec = "snappy"

    def __init__(self) -> None:
        super().__init__()
        import cramjam

        self._decompress = cramjam.snappy.decompress_raw

    def _block(self, out: list[bytes]) -> int:
        buf = self._buf
        if buf[:1] == SNAPPY_MAGIC[:1]:  # a stream header (a chunk length never has the top bit set)
            if len(buf) < SNAPPY_HEADER:
                if not SNAPPY_MAGIC.startswith(bytes(buf[:8])):
                    raise self._fail("bad stream header")
                return 0
            if buf[:8] != SNAPPY_MAGIC:
                raise self._fail("bad stream header")
            return SNAPPY_HEADER
        if self.offset == 0:
            raise self._fail("no snappy-java stream header")
        if len(buf) < 4:
            return 0
        (size,) = struct.unpack_from(">i", buf, 0)
        if size < 0:
            raise self._fail(f"bad chunk length {size}")
        if len(buf) < 4 + size:
            return 0
        try:
            out.append(bytes(self._decompress(bytes(buf[4 : 4 + size]))))
        except Exception as err:  # noqa: BLE001 - cramjam raises its own DecompressionError
            raise self._fail(f"corrupt chunk: {err}") from None
        return int(4 + size)


class LzfDecoder(_Framed):
    """compress-lzf ``LZFOutputStream`` (the block codec: ``python-lzf``, a binding of liblzf)."""

    codec = "lzf"

    def __init__(self) -> None:
        super().__init__()
        import lzf

        self._decompress = lzf.decompress

    def _block(self, out: list[bytes]) -> int:
        buf = self._buf
        if len(buf) < 5:
            if not LZF_MAGIC.startswith(bytes(buf[:2])):
                raise self._fail("bad chunk magic")
            return 0
        if buf[:2] != LZF_MAGIC:
            raise self._fail("bad chunk magic")
        kind = buf[2]
        if kind == 0:
            (size,) = struct.unpack_from(">H", buf, 3)
            if len(buf) < 5 + size:
                return 0
            out.append(bytes(buf[5 : 5 + size]))
            return int(5 + size)
        if kind != 1:
            raise self._fail(f"unknown chunk type {kind}")
        if len(buf) < 7:
            return 0
        size, original = struct.unpack_from(">HH", buf, 3)
        if len(buf) < 7 + size:
            return 0
        plain = self._decompress(bytes(buf[7 : 7 + size]), original) if original else b""
        if plain is None or len(plain) != original:
            raise self._fail(f"corrupt chunk (expected {original} bytes)")
        out.append(plain)
        return int(7 + size)


class ZstdDecoder(Decoder):
    """Standard zstd frames (``zstandard``), one decompression object per frame."""

    codec = "zstd"

    def __init__(self) -> None:
        super().__init__()
        import zstandard

        self._zstd = zstandard
        self._dctx = zstandard.ZstdDecompressor()
        self._obj: Any = None
        self._in_frame = 0  # input bytes fed to the current, unfinished frame

    @property
    def pending(self) -> int:
        return self._in_frame

    def feed(self, data: bytes) -> bytes:
        out: list[bytes] = []
        while data:
            if self._obj is None:
                self._obj = self._dctx.decompressobj()
                self._in_frame = 0
            try:
                out.append(self._obj.decompress(data))
            except self._zstd.ZstdError as err:
                raise CodecError(f"zstd: corrupt frame: {err}", self.offset) from None
            if self._obj.eof:
                rest = self._obj.unused_data
                used = len(data) - len(rest)
                self.offset += self._in_frame + used
                self._obj, self._in_frame = None, 0
                data = rest
            else:
                self._in_frame += len(data)
                data = b""
        return b"".join(out)

    def close(self) -> str | None:
        if self._in_frame:
            return f"{self._in_frame} bytes of an unfinished zstd frame at the end"
        return None


_DECODERS: dict[str | None, type[Decoder]] = {
    None: Decoder,
    "lz4": Lz4BlockDecoder,
    "snappy": SnappyJavaDecoder,
    "lzf": LzfDecoder,
    "zstd": ZstdDecoder,
}


def decoder(codec: str | None) -> Decoder:
    """A fresh decoder for ``codec`` (None: a plain log)."""
    try:
        return _DECODERS[codec]()
    except KeyError:
        raise ValueError(f"unsupported event-log codec {codec!r} (Spark writes {', '.join(CODECS)})") from None


def decode_all(data: bytes, codec: str | None) -> bytes:
    """Decode a whole stream (tests, tools); raises :class:`CodecError` if it is corrupt or truncated."""
    dec = decoder(codec)
    out = dec.feed(data)
    problem = dec.close()
    if problem:
        raise CodecError(problem, dec.offset)
    return out

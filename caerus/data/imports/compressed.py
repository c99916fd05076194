"""A file's text in chunks of whole lines, whatever it is compressed with: gzip, lz4 (frame), zip, or none.

gzip is inflated with ISA-L (``isal``, the [research] extra) when installed, else with the standard library's zlib:
the same bytes either way, ISA-L ~1.3-1.8x faster here (benchmarks/data_import.py prints which one ran). Memory is
bounded by one chunk: a day of a busy symbol is gigabytes of text and never held whole.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .records import ImportRefused

CHUNK_BYTES = 16 << 20  # text per chunk (whole lines)
READ_BYTES = 4 << 20  # compressed bytes read at a time
HEAD_READ_BYTES = 16 << 10  # what format detection reads at a time: a few hundred KiB of text, not the whole file


def _gzip_inflater() -> tuple[str, Callable[[], Any]]:
    try:
        from isal import isal_zlib

        return "isal", lambda: isal_zlib.decompressobj(31)
    except ImportError:
        import zlib

        return "zlib", lambda: zlib.decompressobj(31)


GZIP_LIBRARY, _new_inflater = _gzip_inflater()


def compression_of(path: Path, head: bytes) -> str:
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head[:4] == b"\x04\x22\x4d\x18":
        return "lz4"
    if head[:4] == b"PK\x03\x04":
        return "zip"
    return "none"


def head_text(path: Path, n: int = 1 << 16) -> bytes:
    """The first ``n`` bytes of the file's text (decompressed): what format detection reads."""
    out = b""
    for chunk in text_chunks(path, n, read_bytes=HEAD_READ_BYTES):
        out += chunk
        if len(out) >= n:
            break
    return out[:n]


def text_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES, digest: Any = None,
                read_bytes: int = READ_BYTES) -> Iterator[bytes]:
    """The file's text, decompressed, in chunks that end at a line end (the last may lack one). ``digest`` (a
    hashlib object) is fed the file's bytes as stored; ``read_bytes``: stored (compressed) bytes read at a time."""
    yield from _chunks(path, chunk_bytes, digest, read_bytes, b"".join)


def writable_text_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES, digest: Any = None,
                         read_bytes: int = READ_BYTES) -> Iterator[bytearray]:
    """:func:`text_chunks` as bytearrays the caller may write to: one copy of the text fewer, and none more for a
    reader that rewrites it (binance_streams.read_lines)."""
    yield from _chunks(path, chunk_bytes, digest, read_bytes, bytearray().join)


def _chunks(path: Path, chunk_bytes: int, digest: Any, read_bytes: int,
            join: Callable[[list[Any]], Any]) -> Iterator[Any]:
    path = Path(path)
    with open(path, "rb") as f:
        head = f.read(4)
        f.seek(0)
        kind = compression_of(path, head)
        if kind == "zip":
            yield from _lines(_zip_blocks(path, digest, read_bytes), chunk_bytes, join)
            return
        yield from _lines(_blocks(f, kind, path, digest, read_bytes), chunk_bytes, join)


def _blocks(f: Any, kind: str, path: Path, digest: Any, read_bytes: int) -> Iterator[bytes]:
    if kind == "gzip":
        inflater = _new_inflater()
    elif kind == "lz4":
        try:
            import lz4.frame  # type: ignore[import-untyped]
        except ImportError:
            raise ImportRefused(f"{path}: lz4 file, and the lz4 package is not installed "
                                "(pip install 'caerus[research]')") from None
        inflater = lz4.frame.LZ4FrameDecompressor()
    else:
        inflater = None
    while True:
        raw = f.read(read_bytes)
        if digest is not None and raw:
            digest.update(raw)
        if not raw:
            break
        if inflater is None:
            yield raw
            continue
        try:
            while raw:
                yield inflater.decompress(raw)
                # gzip: a file may hold several members one after another (what `cat a.gz b.gz` makes)
                rest = getattr(inflater, "unused_data", b"")
                if kind == "gzip" and rest:
                    inflater = _new_inflater()
                    raw = rest
                else:
                    raw = b""
        except Exception as exc:  # zlib.error, isal's IsalError, lz4's RuntimeError: all say "corrupt"
            raise ImportRefused(f"{path}: cannot decompress ({kind}): {exc}") from None
    if kind == "gzip" and inflater is not None and not getattr(inflater, "eof", True):
        raise ImportRefused(f"{path}: truncated gzip file (the stream ends before its last block)")


def _zip_blocks(path: Path, digest: Any, read_bytes: int) -> Iterator[bytes]:
    if digest is not None:
        with open(path, "rb") as raw:
            while block := raw.read(READ_BYTES):
                digest.update(block)
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise ImportRefused(f"{path}: not a readable zip file ({exc})") from None
    with zf:
        members = [m for m in zf.infolist() if not m.is_dir()]
        if len(members) != 1:
            raise ImportRefused(f"{path}: a zip of {len(members)} files; the import reads zips of one CSV "
                                "(as data.binance.vision ships them)")
        with zf.open(members[0]) as f:
            while block := f.read(read_bytes):
                yield block


def _lines(blocks: Iterator[bytes], chunk_bytes: int, join: Callable[[list[Any]], Any]) -> Iterator[Any]:
    pending: list[Any] = []
    size = 0
    for block in blocks:
        if not block:
            continue
        pending.append(block)
        size += len(block)
        if size >= chunk_bytes:
            text = join(pending)
            cut = text.rfind(b"\n") + 1
            if cut:
                rest = bytes(text[cut:])
                if isinstance(text, bytearray):
                    del text[cut:]  # in place: no copy of the chunk
                    yield text
                else:
                    yield text[:cut]
                pending, size = [rest], len(rest)
            else:
                pending, size = [text], len(text)
    if size:
        yield join(pending)


def file_digest() -> Any:
    """The hash that identifies an imported file in import.json (over its stored bytes)."""
    return hashlib.blake2b(digest_size=16)

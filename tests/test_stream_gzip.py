"""drover.api.streamgzip: pieces compressed on their own make one gzip stream in any order,
the CRC-32 of joined bytes from their parts', and Accept-Encoding read as HTTP means it."""

from __future__ import annotations

import gzip
import random
import zlib

import pytest

from drover.api.streamgzip import Member, accepts_gzip, crc32_combine, piece

RNG = random.Random(7)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (b"", b""),
        (b"a", b""),
        (b"", b"xyz"),
        (b"hello ", b"world"),
        (RNG.randbytes(1000), RNG.randbytes(77_777)),
        (b"{}\n" * 5, b'{"Index":1}\n' * 100_000),
    ],
)
def test_crc32_combine(a: bytes, b: bytes) -> None:
    assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


def test_pieces_make_one_stream_in_any_order_and_grouping() -> None:
    lines = [b"{}\n", b'{"Index":1,"Events":[]}\n' * 500, RNG.randbytes(5000), b"", b"{}\n"]
    pieces = [piece(x) for x in lines]
    for order in ([0, 1, 2, 3, 4], [4, 2, 0, 1, 3], [1, 1, 1]):
        m = Member()
        out = (
            m.write([pieces[i] for i in order[:2]])
            + b"".join(m.write([pieces[i]]) for i in order[2:])
            + m.end()
        )
        assert gzip.decompress(out) == b"".join(lines[i] for i in order)
    assert gzip.decompress(Member().end()) == b""  # a stream ended before it sent anything


@pytest.mark.parametrize(
    ("header", "gzip_"),
    [
        ("", False),
        ("identity", False),
        ("gzip", True),
        ("gzip, deflate", True),
        ("deflate, gzip;q=0.5", True),
        ("GZIP", True),
        ("x-gzip", True),
        ("gzip;q=0", False),
        ("gzip;q=0.0, identity", False),
        ("gzip;q=bad", False),
        ("br, zstd", False),
        ("gzipped", False),
    ],
)
def test_accepts_gzip(header: str, gzip_: bool) -> None:
    assert accepts_gzip(header) is gzip_

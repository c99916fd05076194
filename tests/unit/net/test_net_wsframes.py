"""The busy client's frame splitter against frames serialised by ``websockets`` itself: whole data frames come out
as payloads, everything else goes whole and in order to the protocol, at any chunking of the byte stream."""

from __future__ import annotations

import random
from typing import Any

import pytest
from websockets.frames import Frame, Opcode

from caerus.net.wsframes import FrameSplitter


def wire(opcode: Opcode, data: bytes, fin: bool = True, mask: bool = False) -> bytes:
    return Frame(opcode, data, fin=fin).serialize(mask=mask)


class Recorder:
    """Stands for the protocol: keeps the bytes it was given, answers each call with one marker event."""

    def __init__(self) -> None:
        self.got: list[bytes] = []

    def __call__(self, data: bytes) -> list[Any]:
        self.got.append(data)
        return [("protocol", data)]


def split(stream: bytes, cuts: list[int], max_size: int = 1 << 20) -> tuple[list[Any], Recorder, FrameSplitter]:
    rec = Recorder()
    s = FrameSplitter(max_size, rec)
    out: list[Any] = []
    last = 0
    for c in [*cuts, len(stream)]:
        s.feed(stream[last:c], out)
        last = c
    return out, rec, s


TEXTS = [b'{"e":"bookTicker","u":1}', b"x" * 125, b"y" * 126, b"z" * 65535, b"w" * 65536, b""]


@pytest.mark.parametrize("payload", TEXTS, ids=lambda p: f"{len(p)}B")
def test_every_length_encoding_comes_out_whole(payload: bytes) -> None:
    stream = wire(Opcode.TEXT, payload) + wire(Opcode.BINARY, payload)
    out, rec, s = split(stream, [])
    assert out == [payload, payload] and rec.got == [] and not s.buf


def test_any_chunking_gives_the_same_messages_in_order() -> None:
    rng = random.Random(5)
    frames = [rng.choice(TEXTS[:3]) + str(i).encode() for i in range(200)]
    stream = b"".join(wire(Opcode.TEXT, f) for f in frames)
    for _ in range(30):
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(1, 300)))
        out, rec, s = split(stream, cuts)
        assert out == frames and rec.got == [] and not s.buf
    # one byte at a time: every header split at every offset
    out, _, _ = split(stream[:2000], list(range(1, 2000)))
    n = len(out)
    assert out == frames[:n] and n >= 5


def test_control_frames_go_whole_to_the_protocol_in_order() -> None:
    ping, pong = wire(Opcode.PING, b"hb"), wire(Opcode.PONG, b"")
    stream = wire(Opcode.TEXT, b"a") + ping + wire(Opcode.TEXT, b"b") + pong + wire(Opcode.TEXT, b"c")
    out, rec, _ = split(stream, [3, 9])
    assert out == [b"a", ("protocol", ping), b"b", ("protocol", pong), b"c"]
    assert rec.got == [ping, pong]


def test_a_fragmented_message_is_all_the_protocols_control_frames_between_included() -> None:
    first = wire(Opcode.TEXT, b"he", fin=False)
    ping = wire(Opcode.PING, b"")
    cont = wire(Opcode.CONT, b"l", fin=False)
    last = wire(Opcode.CONT, b"lo")
    after = wire(Opcode.TEXT, b"next")
    out, rec, s = split(first + ping + cont + last + after, [])
    assert rec.got == [first, ping, cont, last]  # the protocol joins them (and keeps its fragment rules)
    assert out[-1] == b"next" and not s.fragmented


def test_non_ascii_text_is_the_protocols_to_check_binary_is_not() -> None:
    utf8, bad = "é".encode(), b"\xff\xfe"
    out, rec, _ = split(wire(Opcode.TEXT, utf8) + wire(Opcode.TEXT, bad) + wire(Opcode.BINARY, bad), [])
    assert rec.got == [wire(Opcode.TEXT, utf8), wire(Opcode.TEXT, bad)]
    assert out[-1] == bad


def test_a_reserved_bit_goes_to_the_protocol() -> None:
    plain = wire(Opcode.TEXT, b"a")
    odd = bytes([plain[0] | 0x40]) + plain[1:]  # RSV1 set (websockets will not serialise it: no extension)
    out, rec, _ = split(odd + wire(Opcode.TEXT, b"b"), [])
    assert rec.got == [odd] and out == [("protocol", odd), b"b"]


@pytest.mark.parametrize("why", ["masked", "too big"])
def test_a_frame_no_client_accepts_hands_everything_from_it_to_the_protocol(why: str) -> None:
    bad = wire(Opcode.TEXT, b"abcd", mask=True) if why == "masked" else wire(Opcode.TEXT, b"x" * 200)
    tail = wire(Opcode.TEXT, b"after")
    out, rec, s = split(wire(Opcode.TEXT, b"before") + bad[:4], [], max_size=100)
    assert out[0] == b"before" and s.passthrough
    s.feed(bad[4:] + tail, out)
    assert b"".join(rec.got) == bad + tail  # from the bad frame's first byte on, in order, nothing taken out
    assert b"after" not in out


def test_once_the_protocol_closes_the_rest_is_its_too() -> None:
    close = wire(Opcode.CLOSE, b"\x03\xe8")
    rec = Recorder()
    s = FrameSplitter(1 << 20, rec)

    def closing(data: bytes) -> list[Any]:
        s.passthrough = True  # what the session does when the protocol leaves OPEN
        return rec(data)

    s.to_protocol = closing
    out: list[Any] = []
    s.feed(close + wire(Opcode.TEXT, b"late"), out)
    assert rec.got == [close, wire(Opcode.TEXT, b"late")] and b"late" not in out


def test_a_partial_frame_waits_and_is_handed_over_at_the_end() -> None:
    frame = wire(Opcode.TEXT, b"x" * 300)
    out, rec, s = split(frame[:150], [])
    assert out == [] and rec.got == []
    assert s.take_partial() == frame[:150] and not s.buf


def test_a_big_frame_in_small_reads_waits_without_reparsing_then_comes_out_whole() -> None:
    big, small = b"x" * 300_000, b'{"after":1}'
    stream = wire(Opcode.TEXT, big) + wire(Opcode.TEXT, small) + wire(Opcode.TEXT, b"y" * 200)[:3]
    out, rec, s = split(stream, list(range(1, len(stream), 16_384)))
    assert out == [big, small] and rec.got == []
    assert s.need == 0 and len(s.buf) == 3  # a cut header: its length is not known yet, so nothing is awaited
    s.feed(wire(Opcode.TEXT, b"y" * 200)[3:], out)
    assert out[-1] == b"y" * 200 and not s.buf

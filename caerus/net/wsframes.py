"""Server-to-client WebSocket frames split out of the plaintext stream, for the busy client (issue 30 item 2).

The ``websockets`` sans-I/O protocol parses a frame in about 3 us on this machine (a generator step per read, a
``Frame`` object, a copy of the payload); a venue's traffic is almost all small, unfragmented, unmasked text
frames. :class:`FrameSplitter` reads the RFC 6455 header of each such frame itself (section 5.2: FIN, RSV1-3,
opcode, MASK, 7/16/64-bit payload length) and hands its payload straight to the session.

Every other frame goes, whole and in order, to the protocol: control frames (ping, pong, close), fragments and
whatever arrives while a message is fragmented, a reserved bit (no extension is negotiated), and a text payload
that is not ASCII (its UTF-8 is the protocol's to check, 1007 when invalid). The protocol therefore only ever sees
complete frames, at frame boundaries, and keeps every rule it owns: pong answers, the close handshake, and its
errors. A masked frame or one longer than ``max_size`` switches the splitter to pass-through: every byte from there
on goes to the protocol, which refuses the frame (1002, 1009) and ends the connection, as it would have alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

FIN_TEXT = 0x81  # FIN, RSV1-3 clear, opcode 1
FIN_BINARY = 0x82  # FIN, RSV1-3 clear, opcode 2
_MASK = 0x80
_FIN = 0x80
_OPCODE = 0x0F
_CONT, _TEXT, _BINARY = 0, 1, 2

ToProtocol = Callable[[bytes], list[Any]]  # complete frame bytes in; the protocol's events out


class FrameSplitter:
    """Splits one connection's server-to-client plaintext into messages (``bytes``) and protocol events.

    ``to_protocol(frame_bytes)`` feeds the protocol and returns the events it produced; the session sets
    :attr:`passthrough` once the protocol has left its OPEN state (a close frame came) so later bytes go there too.
    """

    __slots__ = ("buf", "fragmented", "max_size", "need", "passthrough", "to_protocol")

    def __init__(self, max_size: int, to_protocol: ToProtocol) -> None:
        self.buf = bytearray()
        self.need = 0  # bytes the held partial frame needs before it can be parsed (0: unknown yet)
        self.max_size = max_size
        self.to_protocol = to_protocol
        self.fragmented = False  # a data frame without FIN went to the protocol: its continuation follows
        self.passthrough = False

    def feed(self, data: bytes, out: list[Any]) -> None:
        """Append ``data``; every complete frame in the buffer becomes a message or the protocol's events in
        ``out``, in arrival order. A partial frame waits in the buffer for the next bytes."""
        if self.passthrough:
            out.extend(self.to_protocol(data))
            return
        held = self.buf
        if held:  # a frame split across reads (rare: venue frames are small): join once, parse from bytes
            held += data
            if len(held) < self.need:
                return  # still short of the frame's end: no copy per read (a 1 MiB frame in 16 KiB records)
            src = bytes(held)
            del held[:]
        else:
            src = data  # the usual read: whole frames, sliced straight out of it (one copy per payload)
        n = len(src)
        pos = 0
        self.need = 0  # set again below only when a frame's end is known and not here yet
        while n - pos >= 2:
            b0 = src[pos]
            b1 = src[pos + 1]
            length = b1 & 0x7F
            head = 2
            if length == 126:
                if n - pos < 4:
                    break
                length = (src[pos + 2] << 8) | src[pos + 3]
                head = 4
            elif length == 127:
                if n - pos < 10:
                    break
                length = int.from_bytes(src[pos + 2:pos + 10], "big")
                head = 10
            if b1 & _MASK or length > self.max_size:
                # not for a client to accept: the protocol refuses it from its header, as it would have alone
                self.passthrough = True
                out.extend(self.to_protocol(src[pos:]))
                return
            end = pos + head + length
            if end > n:
                self.need = end - pos
                break
            if b0 in (FIN_TEXT, FIN_BINARY) and not self.fragmented:
                payload = src[pos + head:end]
                if b0 == FIN_BINARY or payload.isascii():
                    out.append(payload)
                    pos = end
                    continue
            opcode = b0 & _OPCODE
            if opcode in (_TEXT, _BINARY):
                self.fragmented = not b0 & _FIN
            elif opcode == _CONT and b0 & _FIN:
                self.fragmented = False
            out.extend(self.to_protocol(src[pos:end]))
            pos = end
            if self.passthrough:  # that frame closed the protocol: the rest is its too
                if pos < n:
                    out.extend(self.to_protocol(src[pos:]))
                return
        if pos < n:
            held += src[pos:]

    def take_partial(self) -> bytes:
        """The bytes of an incomplete frame (at the end of the stream: the protocol judges them)."""
        rest = bytes(self.buf)
        del self.buf[:]
        return rest

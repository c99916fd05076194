"""caerus.net.stamps: the software receive stamp read out of recvmsg's ancillary data, and only from its own kind."""

from __future__ import annotations

import socket
import struct

from caerus.net.stamps import SCM_TIMESTAMPING, rx_stamp

TIMESPECS = struct.Struct("qqqqqq")  # struct scm_timestamping, as the kernel writes it (linux/errqueue.h)


def _anc(level: int, kind: int, *ts: int) -> list[tuple[int, int, bytes]]:
    return [(level, kind, TIMESPECS.pack(*ts))]


def test_the_stamp_is_the_first_timespec_in_ns() -> None:
    anc = _anc(socket.SOL_SOCKET, SCM_TIMESTAMPING, 1_733_000_000, 123_456_789, 0, 0, 7, 8)
    assert rx_stamp(anc) == 1_733_000_000_123_456_789


def test_no_stamp_is_zero_whatever_else_came() -> None:
    assert rx_stamp([]) == 0
    assert rx_stamp(_anc(socket.IPPROTO_IP, SCM_TIMESTAMPING, 1, 2, 0, 0, 0, 0)) == 0  # another level
    assert rx_stamp(_anc(socket.SOL_SOCKET, SCM_TIMESTAMPING + 1, 1, 2, 0, 0, 0, 0)) == 0  # another kind
    assert rx_stamp([(socket.SOL_SOCKET, SCM_TIMESTAMPING, b"\x01" * 16)]) == 0  # truncated


def test_the_stamp_is_found_after_other_messages() -> None:
    other = (socket.SOL_SOCKET, SCM_TIMESTAMPING + 1, b"\x00" * 48)
    assert rx_stamp([other, *_anc(socket.SOL_SOCKET, SCM_TIMESTAMPING, 5, 6, 0, 0, 0, 0)]) == 5_000_000_006

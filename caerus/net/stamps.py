"""Kernel software timestamps on TCP sockets (``SO_TIMESTAMPING``): receive stamps read with ``recvmsg``, and
transmit stamps read back from the socket's error queue. The one definition of the constants and the parsing.

Receive (the busy feed client): every ``recvmsg`` carries the time the kernel received the bytes it returns.

Transmit (the order connection): with ``SOF_TIMESTAMPING_TX_SOFTWARE`` the kernel queues, for each send call, the
time its last byte was handed to the device (``t_wire_out``), keyed by ``OPT_ID``: for TCP the offset of that
byte in the stream since the option was set. :class:`TxStamps` keys each of our sends by the stream's length right
after it (``TCP_INFO``: bytes sent - retransmitted + not yet sent, one getsockopt, taken after the send so never
on the measured interval), then matches the stamps read off the error queue. If another thread writes to the
socket between our send and that read (a keepalive ping), the key is the ping's and the stamp is the ping's: off
by that ping's transmit time at most, and rare (idle pings only). All stamps are CLOCK_REALTIME nanoseconds, like
``time.time_ns()``.

Every send on a stamped socket queues a stamp, tagged or not (pings, subscriptions, position checks), and the error
queue shares the socket's receive buffer: about 157 unread stamps fill a default one, after which the kernel drops
new stamps, an order's included. So the owner must call ``take()`` regularly in idle time whether or not an order
awaits its stamp (the execution engine does, every idle pass); stamps of untagged sends are read, discarded and
counted (``untagged``). A socket on which nothing is ever an order should not be stamped at all.
"""

from __future__ import annotations

import collections
import os
import socket
import struct

# linux/net_tstamp.h, linux/errqueue.h, asm-generic/socket.h (x86-64 and arm64 alike): Python 3.11's socket module
# has none of these names.
SO_TIMESTAMPING = 37
SCM_TIMESTAMPING = SO_TIMESTAMPING
SOF_TIMESTAMPING_TX_SOFTWARE = 1 << 1
SOF_TIMESTAMPING_RX_SOFTWARE = 1 << 3
SOF_TIMESTAMPING_SOFTWARE = 1 << 4
SOF_TIMESTAMPING_OPT_ID = 1 << 7
SOF_TIMESTAMPING_OPT_TSONLY = 1 << 11
SOF_TIMESTAMPING_OPT_ID_TCP = 1 << 16  # Linux 6.2+: the TCP key counts from the bytes queued, not the bytes acked
SO_EE_ORIGIN_TIMESTAMPING = 4
SCM_TSTAMP_SND = 0
IP_RECVERR = 11
IPV6_RECVERR = 25
TCP_INFO = 11
_TIMESPECS = struct.Struct("qqqqqq")  # scm_timestamping: ts[0] software, ts[1] legacy, ts[2] hardware
_SOFTWARE = struct.Struct("qq")  # ts[0] alone: unpacking only it is ~50 ns less per message than all six
_SOL_SOCKET = socket.SOL_SOCKET  # module constants: no attribute lookups on the receive path
_TIMESPECS_SIZE = _TIMESPECS.size
_EXT_ERR = struct.Struct("IBBBBII")  # sock_extended_err: errno, origin, type, code, pad, info, data
RX_ANCILLARY_SIZE = socket.CMSG_SPACE(_TIMESPECS.size)  # recvmsg's ancillary buffer for one receive stamp
_ERRQ_ANC = socket.CMSG_SPACE(_TIMESPECS.size) + socket.CMSG_SPACE(_EXT_ERR.size + 16) + 64
# struct tcp_info offsets (linux/tcp.h): tcpi_notsent_bytes (u32), tcpi_bytes_sent and tcpi_bytes_retrans (u64)
_NOTSENT = struct.Struct("I")
_NOTSENT_AT = 144
_SENT_RETRANS = struct.Struct("QQ")
_SENT_AT = 200
_TCP_INFO_LEN = 232
_KEY_MASK = 0xFFFFFFFF  # ee_data is 32 bits: the key wraps every 4 GiB of stream


def enable_rx_timestamps(sock: socket.socket) -> bool:
    """Ask the kernel for a software receive stamp on every read; False where it refuses (no stamps then)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE)
    except OSError:
        return False
    return True


def rx_stamp(ancdata: list[tuple[int, int, bytes]]) -> int:
    """The software receive stamp (ns since the epoch, CLOCK_REALTIME like ``time.time_ns``) in ``recvmsg``'s
    ancillary data, or 0 when there is none."""
    for level, kind, data in ancdata:
        if kind == SCM_TIMESTAMPING and level == _SOL_SOCKET and len(data) >= _TIMESPECS_SIZE:
            sec, nsec = _SOFTWARE.unpack_from(data)
            return sec * 1_000_000_000 + nsec
    return 0



def stream_length(sock: socket.socket) -> int:
    """Bytes written into this TCP stream so far (sent once + still queued), from one ``TCP_INFO`` read."""
    info = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, _TCP_INFO_LEN)
    if len(info) < _SENT_AT + _SENT_RETRANS.size:
        raise OSError("TCP_INFO has no tcpi_bytes_sent (Linux < 4.19)")
    sent, retrans = _SENT_RETRANS.unpack_from(info, _SENT_AT)
    return sent - retrans + _NOTSENT.unpack_from(info, _NOTSENT_AT)[0]


def tx_stamps_from(ancdata: list[tuple[int, int, bytes]]) -> tuple[int, int] | None:
    """(key, software transmit stamp ns) from one error-queue message, or None when it is not a send stamp."""
    t = 0
    key = None
    for level, kind, data in ancdata:
        if kind == SCM_TIMESTAMPING and level == _SOL_SOCKET and len(data) >= _TIMESPECS_SIZE:
            sec, nsec = _SOFTWARE.unpack_from(data)
            t = sec * 1_000_000_000 + nsec
        elif ((level, kind) in ((socket.IPPROTO_IP, IP_RECVERR), (socket.IPPROTO_IPV6, IPV6_RECVERR))
              and len(data) >= _EXT_ERR.size):
            _, origin, _, _, _, info, ee_data = _EXT_ERR.unpack_from(data)
            if origin == SO_EE_ORIGIN_TIMESTAMPING and info == SCM_TSTAMP_SND:
                key = ee_data
    if key is None or not t:
        return None
    return key, t


class TxStamps:
    """Transmit stamps of one TCP connection's sends, matched to the caller's keys (order ids).

    ``sent(tag)`` right after a send that wrote a whole message; ``take()`` later (the engine's idle time, never
    between a decision and its send) empties the error queue and returns ``(tag, t_wire_out)`` for every tagged
    send whose stamp has arrived; the rest are discarded and counted. Pending sends are bounded (oldest forgotten,
    counted as ``lost``). Works on a second handle to the socket, so the TLS layer's own handle is untouched.
    """

    def __init__(self, sock: socket.socket, max_pending: int = 4096) -> None:
        # A second handle on the same socket. Never made non-blocking: O_NONBLOCK belongs to the shared file
        # description and would change the TLS layer's blocking socket too; reads pass MSG_DONTWAIT instead.
        self._sock = socket.socket(fileno=os.dup(sock.fileno()))
        flags = (SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_ID
                 | SOF_TIMESTAMPING_OPT_TSONLY)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, flags | SOF_TIMESTAMPING_OPT_ID_TCP)
        except OSError:
            self._sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, flags)  # older kernel: key from bytes acked
        self._base = stream_length(self._sock)  # key 0 = the first byte written from now on
        self._pending: collections.OrderedDict[int, int] = collections.OrderedDict()  # key -> tag
        self._max = max_pending
        self.stamps = 0  # matched
        self.untagged = 0  # stamps of sends nobody tagged (pings, pongs, queries): read, discarded, counted
        self.drains = 0  # take() calls that found the error queue non-empty
        self.lost = 0  # tagged sends forgotten without a stamp (pending bound)

    def sent(self, tag: int) -> None:
        key = (stream_length(self._sock) - self._base - 1) & _KEY_MASK
        self._pending[key] = tag
        if len(self._pending) > self._max:
            self._pending.popitem(last=False)
            self.lost += 1

    @property
    def pending(self) -> int:
        return len(self._pending)

    def take(self) -> list[tuple[int, int]]:
        """Empty the error queue (non-blocking): every (tag, t_wire_out) whose stamp is on it now; stamps of
        untagged sends are discarded (counted in ``untagged``)."""
        out: list[tuple[int, int]] = []
        first = True
        while True:
            try:
                _, anc, _, _ = self._sock.recvmsg(1, _ERRQ_ANC, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return out
            except OSError:
                return out  # the connection is gone: its pending sends stay unstamped
            if first:
                first = False
                self.drains += 1
            got = tx_stamps_from(anc)
            if got is None:
                continue
            tag = self._pending.pop(got[0], None)
            if tag is None:
                self.untagged += 1
            else:
                self.stamps += 1
                out.append((tag, got[1]))

    def forget(self) -> int:
        """Drop every pending send (the connection is being replaced); returns how many were dropped."""
        n = len(self._pending)
        self.lost += n
        self._pending.clear()
        return n

    def close(self) -> None:
        self._sock.close()

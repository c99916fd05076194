"""What the live order-entry transports share: network URLs, the start-up guard, and the persistent TLS WebSocket
session that sends from the engine's thread and reads replies on its own thread. A venue's transport
(caerus.venues.<venue>.execution) builds on it; building one by venue name is caerus.execution.transports.live.

Threading model (why): ``send_msg`` runs on the engine's loop and must not wait a venue round trip. The session
uses the ``websockets`` sync client: ``send()`` writes the frame to the socket and returns (it only contends for
the connection's mutex with websockets' own receive thread, for microseconds); a reader thread of ours blocks in
``recv()``, parses each reply, correlates it to the order by request id and hands a ``VenueReply`` to the
transport's ``on_reply`` callback (default: an internal ``queue.SimpleQueue`` the engine drains with
``poll_reply()``). On a lost connection every in-flight order is reported as SEND_FAILED ("state unknown") and the
reader reconnects with jittered back-off under a connections-per-minute cap (caerus.net.pacing, as the feeds);
orders sent while disconnected fail at once and are counted.

Nothing here logs a frame: websockets gets a private logger pinned at INFO with a filter dropping frame dumps, so
turning on DEBUG logging elsewhere cannot put an API key or signature in a log. A session whose URL carries a
secret (the Binance user-data stream's listen key) is given it with the URL: every log line and error naming the
URL shows ``shown_url``, with the secret redacted (caerus.venuekit.credentials.redact).

Mainnet is bound to the venue's published order-entry endpoint: another URL (a proxy, a test desk) needs a second,
explicit ``allow_custom_mainnet_url`` (``--allow-custom-mainnet-url``), so a stray ``--url`` cannot send signed
mainnet orders to an arbitrary host.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from caerus.net.pacing import Backoff, TokenBucket
from caerus.net.stamps import TxStamps
from caerus.net.untrusted import decode_untrusted
from caerus.venuekit.credentials import redact
from caerus.venuekit.order_transport import ReplyCallback, VenueReply

log = logging.getLogger("caerus.execution.transports.live")

NETWORKS = ("testnet", "mainnet")


class LiveConfigError(ValueError):
    """A live transport was asked to start without being explicitly and completely configured."""


class LiveTransportError(RuntimeError):
    """The live transport could not connect (message names the URL and the failure, never credentials)."""


class _NoFrameDumps(logging.Filter):
    """websockets dumps frames (which carry apiKey and signatures) only at DEBUG: drop every DEBUG record."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG


_WIRE_LOG = logging.getLogger("caerus.execution.transports.wire")
_WIRE_LOG.setLevel(logging.INFO)  # frames are logged by websockets only at DEBUG: never enable it here
_WIRE_LOG.addFilter(_NoFrameDumps())


def resolve_url(venue: str, network: str, url: str | None, *, urls: Mapping[str, str], path: str,
                allow_custom_mainnet_url: bool = False) -> str:
    """The network's URL (from ``urls``, the venue's order-entry URL per network), or the override; an override
    without a path (``wss://host:port``, like the emulator's ready-file base URLs) gets the venue's order-entry
    ``path`` appended. On mainnet an override other than the published URL is refused unless
    ``allow_custom_mainnet_url`` (see :func:`check_mainnet_endpoint`)."""
    if url is None:
        return urls[network]
    scheme_sep = url.find("://")
    rest = url[scheme_sep + 3:] if scheme_sep >= 0 else url
    if "/" not in rest.rstrip("/"):
        url = url.rstrip("/") + path
    check_mainnet_endpoint(venue, network, url, urls[network], allow_custom_mainnet_url, "--url")
    return url


def check_mainnet_endpoint(venue: str, network: str, url: str, published: str, allow_custom: bool,
                           flag: str) -> None:
    """LiveConfigError when a mainnet connection would go anywhere but the venue's ``published`` endpoint without
    the deliberate ``allow_custom`` (``--allow-custom-mainnet-url``): signed mainnet requests carry the account's
    API key and move real money, so the host they go to is part of the mainnet confirmation."""
    if network != "mainnet" or allow_custom is True or url == published:
        return
    raise LiveConfigError(f"{venue}: mainnet connects only to the venue's published endpoint {published}, not "
                          f"{flag} {url}; pass --allow-custom-mainnet-url as well to mean it")


def check_live_guard(venue: str, *, enable_live: bool, network: str | None) -> None:
    """LiveConfigError unless live order entry was explicitly enabled on a named network."""
    if enable_live is not True:
        raise LiveConfigError(f"{venue} is a live transport: it sends real orders and refuses to start unless "
                              "enable_live=True (--enable-live)")
    if network not in NETWORKS:
        raise LiveConfigError(f"{venue}: network must be named explicitly as 'testnet' or 'mainnet', got {network!r}")


def check_network_binding(venue: str, credentials: Any, network: str,
                          confirm_mainnet: str | os.PathLike[str] | None) -> None:
    """Credentials are bound to one network, and mainnet needs a third, deliberate confirmation: a 0600 file (owned
    by this user) whose first line is ``<venue> mainnet <account>`` for exactly the account these credentials trade
    (a key fingerprint for Binance, the wallet or vault address for Hyperliquid). LiveConfigError naming what is
    missing; the account is public (never a secret)."""
    bound = getattr(credentials, "network", "testnet")
    if bound != network:
        raise LiveConfigError(f"{venue}: these credentials are for {bound}, not {network} (set network = "
                              f"\"{network}\" in their [{venue}] table only if that is what they are)")
    if network != "mainnet":
        return
    expected = f"{venue} mainnet {credentials.account_id}"
    how = f"write the line '{expected}' into a 0600 file and pass it with --confirm-mainnet FILE"
    if confirm_mainnet is None:
        raise LiveConfigError(f"{venue}: mainnet sends real orders with real money; to confirm, {how}")
    from caerus.venuekit.credentials import CredentialsError, read_private_file

    path = Path(confirm_mainnet)
    try:
        text = read_private_file(path, "mainnet confirmation file")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    except CredentialsError as exc:
        raise LiveConfigError(f"{venue}: {exc}") from None
    if not lines or lines[0] != expected:
        raise LiveConfigError(f"{venue}: {path} does not confirm this account for mainnet; {how}")


def ssl_context(url: str, ca_file: str | None) -> ssl.SSLContext | None:
    """The order connection's TLS context: certificates checked as usual, TLS 1.2 at most, no renegotiation.

    Why 1.2: the websockets sync client reads on its own thread while ours writes, on one SSL object, which
    OpenSSL does not make safe. TLS 1.3 servers send post-handshake messages (session tickets right after the
    handshake, key updates later) that the reading thread processes while the writing thread sends: measured here,
    about 1 connect in 300 lost its upgrade request that way and then stalled. TLS 1.2 has no post-handshake
    messages once renegotiation is refused, so reads and writes never touch shared handshake state. Both venues
    serve TLS 1.2; the connection is persistent, so 1.3's shorter handshake buys nothing per order.
    """
    if not url.startswith("wss://"):
        raise LiveConfigError(f"order entry must use TLS (wss://), got {url!r}")
    ctx = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.options |= ssl.OP_NO_RENEGOTIATION
    return ctx


class WsOrderSession:
    """One persistent TLS WebSocket with a reader thread. ``send`` is safe to call from one other thread.

    ``url_secret``: a secret that is part of ``url`` (redacted from every log line and error, ``shown_url``).
    ``stamp_tx``: ask for kernel transmit stamps (the order connection); a connection on which nothing sent is an
    order (the user-data stream) leaves them off, so its error queue never fills with stamps nobody reads."""

    def __init__(self, url: str, *, ca_file: str | None, name: str, on_message: Callable[[Any, int], None],
                 on_disconnect: Callable[[], None], idle_ping: bytes | None = None, idle_ping_s: float = 30.0,
                 on_connect: Callable[[], None] | None = None,
                 open_timeout: float = 10.0, backoff_base_s: float = 0.1, backoff_cap_s: float = 5.0,
                 connects_per_min: float = 10.0, connect_burst: int = 2, url_secret: str | None = None,
                 stamp_tx: bool = True) -> None:
        # (url, the secret it carries): one tuple, swapped whole, so a log line on the reader thread never pairs a
        # new key's secret with the old key's URL
        self._target: tuple[str, str | None] = (url, url_secret)
        self._stamp_tx = stamp_tx
        self.name = name
        self._ssl = ssl_context(url, ca_file)
        self._on_message = on_message
        self._on_disconnect = on_disconnect
        self._on_connect = on_connect  # after every (re)connect: e.g. (re)subscribe to account events
        self._idle_ping = idle_ping
        self._idle_ping_s = idle_ping_s
        self._open_timeout = open_timeout
        self._ws: ClientConnection | None = None
        self._running = False
        self._closed = threading.Event()  # set by close(): ends a back-off wait at once
        self._thread: threading.Thread | None = None
        # The one back-off of caerus (full jitter) plus a cap on new connections per minute, as the feeds use:
        # a venue that drops every connection must not turn into a reconnect storm that gets the IP banned.
        self._backoff = Backoff(backoff_base_s, backoff_cap_s)
        self._bucket = TokenBucket(connects_per_min, connect_burst)
        self.backoff_s = 0.0  # the last back-off delay chosen (reader thread)
        # Kernel transmit stamps of our order frames (caerus.net.stamps), per connection; None where the kernel
        # refuses them. Replaced on reconnect by the reader thread; read on the engine thread (send, take).
        self._tx: TxStamps | None = None
        self.tx_unavailable = 0  # connections without transmit stamps
        self.tx_untagged = 0  # stamps of untagged sends read off earlier connections (discarded, counted)
        # counters written by the reader thread only
        self.malformed = 0
        self.disconnects = 0
        self.reconnects = 0

    @property
    def url(self) -> str:
        return self._target[0]

    def set_url(self, url: str, url_secret: str | None = None) -> None:
        """Where the next (re)connect goes, and the secret that URL carries (redacted wherever it is shown)."""
        self._target = (url, url_secret)

    @property
    def shown_url(self) -> str:
        """``url`` as it may appear in a log line, an error or a report: its secret redacted."""
        url, secret = self._target
        return redact(url, secret)

    def _connect(self) -> ClientConnection:
        """Open the connection, bounded whatever the venue does (``open_timeout`` plus a second of grace).

        Why not just ``connect(open_timeout=...)``: when the opening handshake fails after TLS (a server that
        accepts and never answers the HTTP upgrade, a half-open socket), the sync client joins its own receive
        thread, which can sit in a blocking TLS read for good. So the attempt runs on a helper thread over a socket
        we opened; if it has not finished in time, shutting that socket down (through a second handle on it)
        ends the stalled read, and the failure is reported as a handshake timeout.
        """
        url, secret = self._target

        def failed(why: str) -> LiveTransportError:  # names the URL and the failure, the URL's secret redacted
            return LiveTransportError(redact(f"{self.name}: cannot connect to {url}: {why}", secret))

        parts = urlsplit(url)
        try:
            raw = socket.create_connection((parts.hostname or "", parts.port or 443), timeout=self._open_timeout)
        except OSError as exc:
            raise failed(f"{type(exc).__name__}: {exc}") from None
        waker = socket.socket(fileno=os.dup(raw.fileno()))  # same socket, independent of who owns ``raw`` now
        outcome: list[ClientConnection | BaseException] = []

        def attempt() -> None:
            try:
                outcome.append(connect(url, sock=raw, ssl=self._ssl, open_timeout=self._open_timeout,
                                       compression=None, logger=_WIRE_LOG, max_size=1 << 20))
            except BaseException as exc:  # handed to the caller below
                outcome.append(exc)

        t = threading.Thread(target=attempt, name=f"{self.name}-connect", daemon=True)
        t.start()
        t.join(self._open_timeout + 1.0)
        timed_out = t.is_alive()
        if timed_out:
            with contextlib.suppress(OSError):
                waker.shutdown(socket.SHUT_RDWR)
            t.join(5.0)
        waker.close()
        result = outcome[0] if outcome else None
        if timed_out or result is None:
            # Whatever the attempt ended with after our shutdown (an error it caused, or a connection that just
            # made it), the venue did not complete the handshake in time: close what exists, report that.
            if isinstance(result, ClientConnection):
                result.close()
            raw.close()
            raise failed(f"HandshakeTimeout: no WebSocket handshake within {self._open_timeout:g} s")
        if isinstance(result, BaseException):
            raw.close()
            if isinstance(result, Exception):  # whatever the venue made the handshake raise: a failed connect,
                # retried with back-off (re-raising an unexpected type would end the reader thread for good)
                raise failed(f"{type(result).__name__}: {result}") from None
            raise result
        # The connection outlives any ``with`` block (closed in close()); entering it marks it as managed, which
        # websockets >= 17.1 wants instead of a bare connect() (works the same on older versions).
        return result.__enter__()

    def _stamp(self, ws: ClientConnection) -> None:
        """Transmit stamps on this connection (sends from now on); the previous connection's are dropped."""
        tx: TxStamps | None = None
        if self._stamp_tx:
            try:
                tx = TxStamps(ws.socket)
            except OSError:
                self.tx_unavailable += 1
        old, self._tx = self._tx, tx
        if old is not None:
            self.tx_untagged += old.untagged
            old.close()

    def take_tx_stamps(self) -> list[tuple[int, int]]:
        """(tag, t_wire_out) for every tagged send whose kernel transmit stamp has arrived (engine thread, idle
        time): empties the error queue, the stamps of untagged sends discarded and counted (``tx_untagged``)."""
        tx = self._tx
        return tx.take() if tx is not None else []

    def start(self) -> None:
        self._bucket.try_take()  # the first connection counts against the limit too
        self._ws = self._connect()
        self._stamp(self._ws)
        self._running = True
        self._thread = threading.Thread(target=self._read_loop, name=f"{self.name}-reader", daemon=True)
        if self._on_connect is not None:
            self._on_connect()
        self._thread.start()
        log.info("%s: order-entry connection open to %s", self.name, self.shown_url)

    @property
    def connected(self) -> bool:
        return self._ws is not None

    def send(self, text: str | bytes, tag: int | None = None) -> bool:
        """Send one frame; ``tag`` (an order id) asks for its kernel transmit stamp (``take_tx_stamps``)."""
        ws = self._ws
        if ws is None:
            return False
        try:
            ws.send(text, text=True)
        except (ConnectionClosed, OSError, RuntimeError):
            return False
        tx = self._tx
        if tag is not None and tx is not None:
            try:  # after the send returned (t_sent is taken by the caller before this: never on its interval)
                tx.sent(tag)
            except OSError:
                pass  # the connection just went: no stamp for this frame
        return True

    def drop(self) -> None:
        """Close the current connection; the reader thread reconnects (to ``url``, which may have changed)."""
        ws = self._ws
        if ws is not None:
            ws.close()

    def _pause_before_reconnect(self) -> None:
        """Wait out the back-off (full jitter) and the connection bucket; returns early when closed."""
        delay = max(self._backoff.next_delay(), self._bucket.wait_time())
        self.backoff_s = delay
        if delay > 0:
            self._closed.wait(delay)
        while self._running and not self._bucket.try_take():
            self._closed.wait(self._bucket.wait_time())

    def _read_loop(self) -> None:
        while self._running:
            ws = self._ws
            if ws is None:
                self._pause_before_reconnect()
                if not self._running:
                    break
                try:
                    fresh = self._connect()
                    if not self._running:  # closed while we were reconnecting: do not leak the new connection
                        fresh.close()
                        break
                    self._stamp(fresh)
                    self._ws = fresh
                    self.reconnects += 1
                    self._backoff.reset()
                    log.warning("%s: reconnected to %s", self.name, self.shown_url)
                    if self._on_connect is not None:
                        self._on_connect()
                except LiveTransportError as exc:
                    log.warning("%s: reconnect failed (%s)", self.name, exc)
                continue
            try:
                raw = ws.recv(timeout=self._idle_ping_s if self._idle_ping else None)
            except TimeoutError:
                if self._idle_ping is not None:
                    self.send(self._idle_ping)
                continue
            except (ConnectionClosed, OSError):
                self._ws = None
                if self._running:
                    self.disconnects += 1
                    log.warning("%s: order-entry connection to %s lost", self.name, self.shown_url)
                    self._on_disconnect()
                continue
            t_recv = time.time_ns()
            try:  # bounded nesting before decoding: a pathologically deep reply cannot overflow this thread's stack
                msg = decode_untrusted(raw)
            except msgspec.DecodeError:
                self.malformed += 1
                continue
            try:
                self._on_message(msg, t_recv)
            except Exception:
                self.malformed += 1

    def close(self) -> None:
        self._running = False
        self._closed.set()
        ws, self._ws = self._ws, None
        if ws is not None:
            ws.close()
        tx, self._tx = self._tx, None
        if tx is not None:
            tx.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=15)
            if self._thread.is_alive():
                log.error("%s: reader thread did not stop", self.name)
        self._thread = None


class _Waiter:
    """One request answered on the reader thread and awaited on the engine thread."""

    __slots__ = ("answer", "done")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: Any = None


class LiveTransportBase:
    """What both live transports share once their session and reply sink exist: reply polling, stats, close.

    Subclasses set ``_session`` (WsOrderSession), ``_sink`` (ReplySink), ``_pending`` (in-flight orders),
    ``sent``, ``send_failed`` and ``reply_counts``.
    """

    _session: WsOrderSession
    _sink: ReplySink
    _pending: dict
    sent: int
    send_failed: int
    rehearsed: int = 0  # shadow orders serialised and signed, then dropped (never sent)
    reply_counts: dict[str, int]

    name: str
    _waiters: dict[int, _Waiter]

    def poll_reply(self) -> VenueReply | None:
        return self._sink.poll()

    def tx_stamps(self) -> list[tuple[int, int]]:
        """(order_id, t_wire_out): kernel transmit stamps of orders sent, as they arrive (engine idle time)."""
        return self._session.take_tx_stamps()

    def _request(self, req_id: int, frame: bytes, timeout_s: float, what: str) -> Any:
        """Send one request and wait (bounded) for the reader thread to hand back its answer."""
        waiter = _Waiter()
        self._waiters[req_id] = waiter
        try:
            if not self._session.send(frame):
                raise LiveTransportError(f"{self.name}: {what}: the order connection is down")
            if not waiter.done.wait(timeout_s):
                raise LiveTransportError(f"{self.name}: {what}: no answer within {timeout_s:g} s")
            return waiter.answer
        finally:
            self._waiters.pop(req_id, None)

    def _answered(self, req_id: object, answer: Any) -> bool:
        """Reader thread: ``answer`` belongs to a request someone waits on (True), or not."""
        waiter = self._waiters.get(req_id) if isinstance(req_id, int) else None
        if waiter is None:
            return False
        waiter.answer = answer
        waiter.done.set()
        return True

    def stats(self) -> dict[str, int]:
        s = self._session
        tx = s._tx
        return {"sent": self.sent, "send_failed": self.send_failed, "rehearsed": self.rehearsed,
                "tx_stamps": tx.stamps if tx is not None else 0, "tx_unavailable": s.tx_unavailable,
                "tx_untagged": s.tx_untagged + (tx.untagged if tx is not None else 0),
                **self.reply_counts, "malformed": s.malformed,
                "disconnects": s.disconnects, "reconnects": s.reconnects, "in_flight": len(self._pending)}

    def close(self) -> None:
        self._session.close()


class ReplySink:
    """Where venue replies go: the caller's callback, or an internal queue drained with ``poll_reply()``."""

    def __init__(self, on_reply: ReplyCallback | None) -> None:
        self.queue: queue.SimpleQueue[VenueReply] = queue.SimpleQueue()
        self.deliver: ReplyCallback = on_reply if on_reply is not None else self.queue.put

    def poll(self) -> VenueReply | None:
        try:
            return self.queue.get_nowait()
        except queue.Empty:
            return None

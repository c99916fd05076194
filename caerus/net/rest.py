"""One bounded JSON request over HTTPS: what start-up needs from a venue's REST API (listings), never the hot path.

Plain ``urllib`` on purpose: two calls at start-up, no session to keep. Every call has a deadline for the whole
answer (a per-read socket timeout alone lets a server drip one byte at a time for ever); every failure (DNS,
refused, TLS, HTTP status, an answer too large, too slow, too deep or not JSON) raises :class:`RestError` naming the
URL and the cause. The answer is venue bytes, so it is decoded with bounded nesting (caerus.net.untrusted).
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

import msgspec

from caerus.net.untrusted import decode_untrusted


class RestError(RuntimeError):
    """A REST call that did not produce a JSON answer; the message names the URL and why."""


def rest_base_for(stream_base: str, known: Mapping[str, str]) -> str:
    """The REST base that answers for a WebSocket stream base: the venue's own for a base it publishes
    (``known``: stream base -> REST base), else the same host over https (the emulator serves both on one port)."""
    stream_base = stream_base.rstrip("/")
    return known.get(stream_base) or "https://" + stream_base.split("://", 1)[-1]


def request_json(url: str, *, body: object = None, ssl_context: ssl.SSLContext | None = None,
                 timeout_s: float = 10.0, max_bytes: int = 16 << 20) -> Any:
    """GET ``url`` (or POST ``body`` as JSON) and decode the JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Accept": "application/json"} | ({"Content-Type": "application/json"} if data is not None else {})
    req = urllib.request.Request(url, data=data, method="GET" if data is None else "POST", headers=headers)
    try:
        deadline = time.monotonic() + timeout_s
        with urllib.request.urlopen(req, timeout=timeout_s, context=ssl_context) as r:
            chunks: list[bytes] = []
            size = 0
            while size <= max_bytes:
                if time.monotonic() > deadline:
                    raise RestError(f"{url}: no complete answer within {timeout_s:g} s")
                chunk = r.read1(min(1 << 16, max_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            raw = b"".join(chunks)
    except urllib.error.HTTPError as exc:
        text = exc.read(300).decode("utf-8", "replace") if exc.fp is not None else ""
        raise RestError(f"{url}: HTTP {exc.code} {text.strip()}".rstrip()) from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RestError(f"{url}: {reason}") from None
    if len(raw) > max_bytes:
        raise RestError(f"{url}: answer larger than {max_bytes} bytes")
    try:
        return decode_untrusted(raw)
    except msgspec.DecodeError as exc:
        raise RestError(f"{url}: the answer is not JSON ({exc})") from None

"""A ClickHouse server over its HTTP interface: ping, run a statement, insert a JSONEachRow batch.

Plain ``urllib`` on purpose: the sink needs three calls, the HTTP interface is stable from 18.16 (the Debian
package the tests run) to today, and clickhouse-connect cannot talk to 18.16 (its start-up query reads a column
that version lacks). Failures come back as :class:`ClickHouseError` with ``answered`` telling a server that
refused the request (it replied with an error: retrying the same body may not help) from one that could not be
reached (down, refused, timed out: retry later).
"""

from __future__ import annotations

import base64
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from caerus.runtime.private_file import read_private_text

from . import rows


class ClickHouseError(RuntimeError):
    def __init__(self, message: str, answered: bool, status: int = 0) -> None:
        super().__init__(message)
        self.answered = answered
        self.status = status


def check_url(url: str) -> str:
    """Validate an ``http[s]://HOST:PORT`` base URL; returns it without a trailing slash. ValueError otherwise.

    A URL carrying credentials is refused: a password there is on the command line (``ps`` shows it to every local
    user) and in every message that names the URL. The message never repeats such a URL."""
    u = urllib.parse.urlsplit(url)
    if u.password is not None:
        raise ValueError("--clickhouse: the URL carries a password, which would be visible on the command line; "
                         "give http://HOST:PORT with --clickhouse-user NAME and --clickhouse-password-file FILE "
                         "(mode 0600)")
    if u.username is not None:
        raise ValueError(f"--clickhouse: give the user with --clickhouse-user, not in the URL (http://HOST:PORT, "
                         f"got host {u.hostname!r})")
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError(f"--clickhouse {url!r}: expected http://HOST:PORT (the server's HTTP interface)")
    try:
        u.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise ValueError(f"--clickhouse {url!r}: bad port") from None
    if u.query or (u.path not in ("", "/")):
        raise ValueError(f"--clickhouse {url!r}: give only scheme, host and port")
    return f"{u.scheme}://{u.netloc}"


def read_password_file(path: Path) -> str:
    """The password in ``path`` (first line): the only way a ClickHouse password is given. The file must be this
    user's own regular file with mode 0600 (caerus.runtime.private_file; PrivateFileError, a ValueError, naming the
    path, the owner and mode found and what is required)."""
    lines = read_private_text(path, "--clickhouse-password-file").splitlines()
    if not lines or not lines[0]:
        raise ValueError(f"--clickhouse-password-file {path}: empty")
    return lines[0]


class ClickHouseHttp:
    def __init__(self, url: str, timeout_s: float = 10.0, user: str | None = None, password: str = "") -> None:
        self.url = check_url(url)
        self.timeout_s = timeout_s
        self._headers: dict[str, str] = {}
        if user is not None:  # HTTP basic auth: what 18.16 and every later server accept
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            self._headers["Authorization"] = f"Basic {token}"

    def _post(self, params: dict[str, str], body: bytes) -> bytes:
        target = self.url + "/"
        if params:
            target += "?" + urllib.parse.urlencode(params)
        req = urllib.request.Request(target, data=body, method="POST", headers=self._headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace").strip()
            raise ClickHouseError(f"ClickHouse at {self.url} answered {e.code}: {text[:500]}", True, e.code) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ClickHouseError(f"ClickHouse at {self.url} unreachable: {reason}", False) from None

    def ping(self) -> bool:
        try:
            req = urllib.request.Request(self.url + "/ping", headers=self._headers)
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                return r.read().strip() == b"Ok."
        except (urllib.error.URLError, OSError):
            return False

    def query(self, sql: str) -> str:
        return self._post({}, sql.encode()).decode()

    def insert_json(self, table: str, lines: list[bytes]) -> None:
        """Insert JSONEachRow rows (one object per item) into caerus.<table> in one request (one block)."""
        body = b"\n".join(lines) + b"\n"
        self._post({"query": f"INSERT INTO {rows.DATABASE}.{table} FORMAT JSONEachRow"}, body)

    def ensure_schema(self) -> None:
        for stmt in rows.schema_statements():
            self.query(stmt)

"""One crafted 1 MiB venue frame cannot freeze a process (issue 26): the feeds' classifiers and the order-reply
reader refuse it while another thread of the same interpreter keeps running.

The frame is the family that made the old string-stripping regex backtrack quadratically while holding the GIL:
more than 64 brackets (so the nesting scan runs), then an unterminated run of ``\\"``. At 40 KB that regex took
4 s; at the 1 MiB frame limit it would have frozen the process for most of an hour.

The client side runs in a child interpreter (with the signing stack imported, as the execution engine has it) so
that a regression is bounded: a child stuck in a GIL-holding scan is killed by PID at the deadline and the test
fails naming the step it reached, instead of freezing pytest itself. No timing is asserted: each step must finish,
and a heartbeat thread's counter must move while it runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from websockets.asyncio.server import ServerConnection

from tests.fixtures.feed_servers import TlsWsServer

ROOT = Path(__file__).resolve().parents[3]
FRAME_BYTES = 1 << 20
DEADLINE_S = 300.0  # a bound on the wait, not a speed claim: the linear scan needs well under a second here


def pathological_frame(size: int = FRAME_BYTES) -> bytes:
    """``[`` x 65, an opening quote, then ``\\"`` repeated up to ``size`` bytes: a string that never ends."""
    head = b"[" * 65 + b'"'
    return head + b'\\"' * ((size - len(head)) // 2)


CHILD = r"""
import json, sys, threading, time
import caerus.venues.hyperliquid.signing  # the signing stack, as the execution engine carries it
from caerus.venuekit.order_session import WsOrderSession
from caerus.venues.binance import data as binance
from caerus.venues.hyperliquid import data as hyperliquid

url, ca_file, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
head = b"[" * 65 + b'"'
frame = head + b'\\"' * ((size - len(head)) // 2)
assert len(frame) >= size - 1, len(frame)

beats = 0
stop = threading.Event()

def heartbeat() -> None:
    global beats
    while not stop.is_set():
        beats += 1
        time.sleep(0.0005)

threading.Thread(target=heartbeat, daemon=True).start()
while beats == 0:  # the heartbeat is running before any step starts
    time.sleep(0.001)

def step(name, fn):
    print("step", name, flush=True)  # the parent names the step a stuck child reached
    before = beats
    out = fn()
    return {"step": name, "result": out, "beats": beats - before}

REPEATS = 5  # each step scans the 1 MiB frame this many times, so it spans many of the heartbeat's turns
steps = [
    step("binance.classify", lambda: [binance.classify(frame)[0].name for _ in range(REPEATS)]),
    step("binance.frame_symbol", lambda: [binance.frame_symbol(frame) for _ in range(REPEATS)]),
    step("hyperliquid.classify", lambda: [hyperliquid.classify(frame)[0].name for _ in range(REPEATS)]),
]

replies = []
got_reply = threading.Event()

def on_message(msg, t_recv):
    replies.append(msg)
    got_reply.set()

def order_reader():
    before = beats
    session = WsOrderSession(url, ca_file=ca_file, name="pathological", on_message=on_message,
                             on_disconnect=lambda: None, open_timeout=10.0)
    session.start()
    try:
        ok = got_reply.wait(240)
    finally:
        session.close()
    return {"reply": replies[0] if ok else None, "malformed": session.malformed, "beats": beats - before}

print("step order-reply reader", flush=True)
reader = order_reader()
steps.append({"step": "order-reply reader", "result": reader, "beats": reader["beats"]})
stop.set()
print("RESULT " + json.dumps(steps), flush=True)
"""


def _server_sending(frames: list[bytes]) -> Callable[[ServerConnection], object]:
    async def handler(ws: ServerConnection) -> None:
        for frame in frames:
            await ws.send(frame, text=True)
        await ws.wait_closed()
    return handler


def test_a_1_mib_pathological_frame_is_refused_while_another_thread_runs(tls_ws_server) -> None:
    valid_reply = b'{"id":7,"status":200,"result":{"status":"FILLED"}}'
    srv: TlsWsServer = tls_ws_server(_server_sending([pathological_frame(), valid_reply]))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, srv.url, srv.ca_file, str(FRAME_BYTES)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    try:
        out, err = proc.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()  # our own child, by PID
        out, err = proc.communicate(timeout=30)
        reached = [line for line in out.splitlines() if line.startswith("step ")]
        raise AssertionError(f"the child did not finish within {DEADLINE_S:.0f} s; last step: "
                             f"{reached[-1] if reached else 'none'}") from None
    assert proc.returncode == 0, err[-3000:]
    result = next(line for line in out.splitlines() if line.startswith("RESULT "))
    steps = {s["step"]: s for s in json.loads(result.removeprefix("RESULT "))}

    assert steps["binance.classify"]["result"] == ["MALFORMED"] * 5
    assert steps["hyperliquid.classify"]["result"] == ["MALFORMED"] * 5
    assert steps["binance.frame_symbol"]["result"] == [None] * 5
    reader = steps["order-reply reader"]["result"]
    # the frame is counted as malformed and dropped; the reply right behind it still arrives
    assert reader["malformed"] == 1
    assert reader["reply"] == {"id": 7, "status": 200, "result": {"status": "FILLED"}}
    for name, s in steps.items():  # another thread of the process kept running through every step
        assert s["beats"] > 0, f"{name}: the heartbeat thread did not run while it was busy"

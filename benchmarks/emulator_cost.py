"""What the venue emulator costs per frame, and how much of it runs at the moment a top-of-book frame goes out.

The emulator is scaffolding, not part of the fleet: on the 2-vCPU plan it shares a CPU with a hot process, and
whatever it runs between handing a frame to the sockets and blocking again is time the process beside it waits
(issue 48). Three measurements, each of the emulator's own code as it runs (nothing re-implemented here):

- ``process``: a real ``caerus venue-sim`` (its default market, ``--seed``, ``--yield-after-top`` as the 2-vCPU
  session runs it) read by two TLS WebSocket clients the way the fleet's feeds read it (Binance bookTicker on
  ``/public/ws``, Hyperliquid bbo): its CPU time over the window (the run time of every thread, from
  ``/proc/PID/task/*/schedstat``) divided by the top-of-book frames the clients received -> ``cpu_per_frame``
  (one value per window; the table's n is the frames).
- ``path``: the market driver's own ``run()`` in a process of its own, every top-of-book frame handed to a
  subscriber that keeps no socket, its blocking points watched (the event loop's ``select`` with a timeout, the
  precise ``time.sleep``). Per frame, in the driver thread's CPU time (what it takes from a process sharing its
  CPU, whatever else the machine ran meanwhile): ``wake_to_send`` (the wake that sends it -> handed over),
  ``send_to_block`` (handed over -> blocked again: what the process beside it waits for), ``around_frame`` (the
  two), ``cpu_per_frame`` (all of the thread's CPU time / frames) and ``wakes_per_frame``.
- ``ref.send``: one send of a bookTicker-sized frame with websockets' ``broadcast`` (the emulator's send) to a
  TLS client in another process on loopback, the CPU time of the call: what "close to one send" means here.

    python -m benchmarks.emulator_cost [--quick] [--json PATH] [--seconds S] [--root CHECKOUT] [--cpu N]

``--root``: the checkout whose emulator is measured (default: this one), so an older commit's emulator is measured
by the same benchmark: ``venue-sim`` and the ``path`` worker run with that checkout first on ``PYTHONPATH``.
``--cpu``: pin the emulator (and the path worker) to that CPU. Goal (issue 48): the driver's own work around a
frame (``wake_to_send`` + ``send_to_block``) at most one send, p50.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import gc
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
TEXT = ('{"e":"bookTicker","u":5000123456,"E":1767225600123,"T":1767225600122,"s":"BTCUSDT","b":"95012.3",'
        '"B":"1.234","a":"95012.4","A":"0.456"}')


# -- the path worker: runs from the measured checkout, stdlib and caerus only ----------------------------------
def path_worker(seconds: float, warmup: float, seed: int, yield_after_top: bool) -> dict[str, Any]:
    """Run the checkout's MarketDriver for ``warmup + seconds`` and time its frames against its blocking points."""
    import inspect

    from caerus.sim.core import driver as driver_mod
    from caerus.sim.core import frames
    from caerus.sim.core.hub import Topics
    from caerus.sim.core.market import MarketConfig, MarketModel

    try:
        from caerus.sim.core.market_config import load_market
        cfg = load_market("default", seed=seed)
    except ImportError:  # an older checkout: its default market is MarketConfig's
        cfg = MarketConfig(seed=seed)
    # the driver thread's CPU time at each point (what it costs a process sharing its CPU, whatever else ran)
    clock = time.thread_time_ns
    sends: list[int] = []
    blocks: list[tuple[int, int]] = []
    tops = frames.TOP_OF_BOOK_PREFIXES

    class Sink:
        def send(self, text: str, control: bool = False) -> None:
            if text.startswith(tops):
                sends.append(clock())

    topics = Topics()
    sink = Sink()
    for key in (driver_mod.BOOK_TICKER, driver_mod.HL_BBO):
        topics.add(key, sink)  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    if "yield_after_top" in inspect.signature(driver_mod.MarketDriver).parameters:
        kwargs["yield_after_top"] = yield_after_top
    drv = driver_mod.MarketDriver(MarketModel(cfg), topics, **kwargs)

    real_sleep = time.sleep

    def watched_sleep(s: float) -> None:
        a = clock()
        real_sleep(s)
        blocks.append((a, clock()))

    time.sleep = watched_sleep  # type: ignore[assignment]
    loop = asyncio.new_event_loop()
    selector = loop._selector  # type: ignore[attr-defined]
    real_select = selector.select

    def watched_select(timeout: float | None = None) -> Any:
        if timeout is not None and timeout <= 0:
            return real_select(timeout)  # a poll, not a wait: the CPU is not given up
        a = clock()
        out = real_select(timeout)
        blocks.append((a, clock()))
        return out

    selector.select = watched_select
    task = loop.create_task(drv.run())
    gc.collect()
    loop.run_until_complete(asyncio.sleep(warmup))
    n0, b0, w0, c0 = len(sends), len(blocks), time.perf_counter_ns(), clock()
    loop.run_until_complete(asyncio.sleep(seconds))
    n1, b1, w1, c1 = len(sends), len(blocks), time.perf_counter_ns(), clock()
    task.cancel()
    try:
        loop.run_until_complete(task)
    except asyncio.CancelledError:
        pass
    loop.close()
    time.sleep = real_sleep  # type: ignore[assignment]
    window = sends[n0:n1]
    starts = [b[0] for b in blocks]
    ends = [b[1] for b in blocks]
    wake_to_send, send_to_block = [], []
    for s in window:
        i = bisect.bisect_left(starts, s)  # the first block that starts after the send
        j = bisect.bisect_right(ends, s) - 1  # the last block that ended before it: its wake
        if i < len(starts) and j >= 0:
            send_to_block.append(starts[i] - s)
            wake_to_send.append(s - ends[j])
    frames_n = max(1, n1 - n0)
    return {"frames": n1 - n0, "seconds": (w1 - w0) / 1e9, "cpu_ns": c1 - c0, "cpu_per_frame_ns": (c1 - c0) / frames_n,
            "wakes_per_frame": (b1 - b0) / frames_n, "wake_to_send": wake_to_send, "send_to_block": send_to_block,
            "yield_after_top": kwargs.get("yield_after_top")}


# -- the process measurement ------------------------------------------------------------------------------------
def _cpu_ns(pid: int) -> int:
    """Run time of every live thread of ``pid`` (ns, /proc/PID/task/*/schedstat's first field)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:  # the thread ended between the listing and the read
            pass
    return total


def _wait_ready(proc: subprocess.Popen[bytes], path: Path, log: Path) -> dict[str, Any]:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"emulator_cost: venue-sim exited with {proc.returncode} before it was ready:\n"
                             f"{log.read_text()[-3000:]}")
        if path.exists():
            try:
                return json.loads(path.read_text())
            except json.JSONDecodeError:  # written atomically, so only while it is being replaced
                pass
        time.sleep(0.05)
    raise SystemExit(f"emulator_cost: venue-sim wrote no ready file within {READY_TIMEOUT_S:g} s ({log})")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    from caerus.runtime.children import stop_child

    stop_child(proc, STOP_TIMEOUT_S)


async def _read_frames(info: dict[str, Any], counts: dict[str, int], stop: asyncio.Event) -> None:
    """Two clients as the feeds subscribe: Binance bookTicker on /public/ws, Hyperliquid bbo; count every frame."""
    from websockets.asyncio.client import connect

    ctx = ssl.create_default_context(cafile=info["ca_file"])

    async def one(url: str, sub: dict[str, Any], venue: str) -> None:
        async with connect(url, ssl=ctx, compression=None, max_size=None, ping_interval=None) as ws:
            await ws.send(json.dumps(sub))
            while not stop.is_set():
                try:
                    msg = await asyncio.wait_for(ws.recv(decode=False), 1.0)
                except TimeoutError:
                    continue
                if msg.startswith((b'{"e":"bookTicker"', b'{"channel":"bbo"')):
                    counts[venue] += 1

    await asyncio.gather(
        one(info["binance_url"] + "/public/ws", {"method": "SUBSCRIBE", "params": ["btcusdt@bookTicker"], "id": 1},
            "binance"),
        one(info["hyperliquid_url"] + "/ws", {"method": "subscribe", "subscription": {"type": "bbo", "coin": "BTC"}},
            "hyperliquid"))


def process_run(root: Path, seconds: float, warmup: float, seed: int, yield_after_top: bool,
                cpu: int | None) -> dict[str, Any]:
    """venue-sim of ``root`` read by two clients: its CPU time per top-of-book frame received."""
    with tempfile.TemporaryDirectory(prefix="emucost-") as tmp:
        work = Path(tmp)
        log = work / "venue-sim.log"
        args = [sys.executable, "-m", "caerus", "venue-sim", "--cert-dir", str(work / "certs"), "--ready-file",
                str(work / "ready.json"), "--seed", str(seed)]
        if yield_after_top:
            args.append("--yield-after-top")
        if cpu is not None:
            args += ["--cpus", str(cpu)]
        env = dict(os.environ, PYTHONPATH=str(root))
        with open(log, "wb") as out:
            proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
        try:
            info = _wait_ready(proc, work / "ready.json", log)
            counts = {"binance": 0, "hyperliquid": 0}
            marks: dict[str, tuple[int, int, int]] = {}

            async def main() -> None:
                stop = asyncio.Event()
                reader = asyncio.ensure_future(_read_frames(info, counts, stop))
                await asyncio.sleep(warmup)
                marks["start"] = (_cpu_ns(proc.pid), sum(counts.values()), time.monotonic_ns())
                await asyncio.sleep(seconds)
                marks["end"] = (_cpu_ns(proc.pid), sum(counts.values()), time.monotonic_ns())
                stop.set()
                await asyncio.wait_for(reader, 5.0)

            asyncio.run(main())
        finally:
            _stop(proc)
    (c0, n0, t0), (c1, n1, t1) = marks["start"], marks["end"]
    frames_n = n1 - n0
    if frames_n <= 0:
        raise SystemExit(f"emulator_cost: the clients received no top-of-book frame in {seconds:g} s")
    return {"frames": frames_n, "seconds": (t1 - t0) / 1e9, "cpu_ns": c1 - c0, "cpu_per_frame_ns": (c1 - c0) / frames_n,
            "counts": dict(counts)}


# -- one send over TLS, the reference ---------------------------------------------------------------------------
_CLIENT = r'''
import asyncio, ssl, sys
from websockets.asyncio.client import connect
async def main():
    ctx = ssl.create_default_context(cafile=sys.argv[1])
    async with connect(sys.argv[2], ssl=ctx, compression=None, max_size=None, ping_interval=None) as ws:
        async for _ in ws:
            pass
asyncio.run(main())
'''


def send_reference(n: int, cpu: int | None) -> list[int]:
    """CPU time (ns) of ``n`` websockets broadcasts of a bookTicker frame to a TLS client process, 1 ms apart."""
    import trustme
    from websockets.asyncio.server import broadcast, serve

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_ctx)
    out: list[int] = []
    with tempfile.TemporaryDirectory(prefix="emucost-ref-") as tmp:
        ca_file = Path(tmp) / "ca.pem"
        ca.cert_pem.write_to_path(str(ca_file))

        async def main() -> None:
            conns: list[Any] = []
            joined = asyncio.Event()

            async def handler(ws: Any) -> None:
                conns.append(ws)
                joined.set()
                await ws.wait_closed()

            async with serve(handler, "127.0.0.1", 0, ssl=server_ctx, compression=None) as server:
                port = server.sockets[0].getsockname()[1]
                client = subprocess.Popen([sys.executable, "-c", _CLIENT, str(ca_file), f"wss://127.0.0.1:{port}"])
                try:
                    await asyncio.wait_for(joined.wait(), 30.0)
                    ws, tt = conns[0], time.thread_time_ns
                    for i in range(n + 50):
                        a = tt()
                        broadcast((ws,), TEXT)
                        b = tt()
                        if i >= 50:  # warm-up sends left out
                            out.append(b - a)
                        await asyncio.sleep(0.001)
                finally:
                    client.terminate()
                    try:
                        client.wait(STOP_TIMEOUT_S)
                    except subprocess.TimeoutExpired:
                        client.kill()
                        client.wait(STOP_TIMEOUT_S)

        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        asyncio.run(main())
    return out


def _run_path(root: Path, seconds: float, warmup: float, seed: int, yield_after_top: bool,
              cpu: int | None) -> dict[str, Any]:
    """The path worker in its own process, ``root`` first on PYTHONPATH (this file run by path)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--seconds", f"{seconds:g}", "--warmup",
           f"{warmup:g}", "--seed", str(seed), "--yield-after-top", "on" if yield_after_top else "off"]
    if cpu is not None:
        cmd += ["--cpu", str(cpu)]
    env = dict(os.environ, PYTHONPATH=str(root))
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + warmup + 120, check=False,
                          cwd=root)
    if proc.returncode != 0:
        raise SystemExit(f"emulator_cost: the path worker failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short run (seconds), for CI and smoke checks")
    ap.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON to PATH")
    ap.add_argument("--seed", type=int, default=1, help="the emulated market's seed")
    ap.add_argument("--seconds", type=float, default=None, help="measured window of each part (default 30, quick 8)")
    ap.add_argument("--warmup", type=float, default=None, help="seconds before each window (default 3, quick 1)")
    ap.add_argument("--sends", type=int, default=None, help="reference sends (default 3000, quick 500)")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose emulator is measured")
    ap.add_argument("--cpu", type=int, default=None, help="pin the emulator, the path worker and the reference")
    ap.add_argument("--yield-after-top", choices=("on", "off"), default="on",
                    help="the emulator's --yield-after-top (on: as the 2-vCPU session runs it)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else (8.0 if args.quick else 30.0)
    warmup = args.warmup if args.warmup is not None else (1.0 if args.quick else 3.0)
    yield_on = args.yield_after_top == "on"
    if not (seconds > 0 and warmup >= 0):
        ap.error(f"--seconds must be > 0 and --warmup >= 0, got {seconds:g} / {warmup:g}")
    if args.worker:
        if args.cpu is not None:
            os.sched_setaffinity(0, {args.cpu})
        print(json.dumps(path_worker(seconds, warmup, args.seed, yield_on)))
        return 0
    root = args.root.resolve()
    if not (root / "caerus" / "sim" / "driver.py").is_file():
        ap.error(f"--root {root} is not a Caerus checkout (no caerus/sim/core/driver.py)")

    from benchmarks.common import Goal, emit, summarize

    path = _run_path(root, seconds, warmup, args.seed, yield_on, args.cpu)
    proc = process_run(root, seconds, warmup, args.seed, yield_on, args.cpu)
    ref = send_reference(args.sends if args.sends is not None else (500 if args.quick else 3000), args.cpu)
    around = [a + b for a, b in zip(path["wake_to_send"], path["send_to_block"], strict=False)]

    def one(value: float, n: int) -> dict[str, float]:
        return {"unit": "ns", "n": n, "p50": value, "p90": value, "p99": value, "p999": value, "max": value,
                "mean": value}

    metrics = {
        "process.cpu_per_frame": one(proc["cpu_per_frame_ns"], proc["frames"]),
        "path.cpu_per_frame": one(path["cpu_per_frame_ns"], path["frames"]),
        "path.wake_to_send": summarize(path["wake_to_send"]),
        "path.send_to_block": summarize(path["send_to_block"]),
        "path.around_frame": summarize(around),
        "ref.send": summarize(ref),
    }
    send_p50 = metrics["ref.send"]["p50"]
    ratios = {
        "path.around_frame p50 / ref.send p50": metrics["path.around_frame"]["p50"] / send_p50,
        "path.send_to_block p50 / ref.send p50": metrics["path.send_to_block"]["p50"] / send_p50,
        "process.cpu_per_frame / ref.send p50": proc["cpu_per_frame_ns"] / send_p50,
    }
    around_ratio = ratios["path.around_frame p50 / ref.send p50"]
    goals = [Goal("driver's work around a frame (wake -> send -> block) p50", "<= 1 x one send p50", around_ratio,
                  around_ratio <= 1.0)]
    print(f"emulator: {root} (yield after top: {args.yield_after_top}); load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"process: {proc['frames']} frames in {proc['seconds']:.1f} s ({proc['counts']}), "
          f"CPU {proc['cpu_ns'] / 1e6:.1f} ms; path: {path['frames']} frames, {path['wakes_per_frame']:.2f} wakes "
          f"per frame")
    emit("emulator_cost", metrics, ratios=ratios, goals=goals, quick=args.quick, json_path=args.json,
         extra={"root": str(root), "yield_after_top": yield_on, "cpu": args.cpu, "load": os.getloadavg(),
                "process": {k: v for k, v in proc.items()},
                "path": {k: v for k, v in path.items() if k not in ("wake_to_send", "send_to_block")}})
    return 0


if __name__ == "__main__":
    if __package__ in (None, ""):  # run by path (the path worker): the measured checkout (PYTHONPATH) comes first,
        sys.path[0] = str(ROOT)  # not this folder's modules; this checkout's benchmarks stay importable after it
        sys.path.append(sys.path.pop(0))
    raise SystemExit(main())

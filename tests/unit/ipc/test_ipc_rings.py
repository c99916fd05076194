"""Single-process behaviour of segments, SWMR, SPSC, MPSC rings, counters and wait policies."""

from __future__ import annotations

import os
import struct

import pytest

from caerus import wire
from caerus.ipc import segment
from caerus.ipc.counter_block import CounterBlock
from caerus.ipc.mpsc import MpscConsumer, MpscProducer
from caerus.ipc.spsc import SpscReader, SpscWriter
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from caerus.ipc.wait import make_waiter
from caerus.records.book import BOOK_SEQ
from tests.kit import records


def book(n: int) -> tuple:
    return records.book(1, 100.0 + n, 101.0 + n, n * 5, seq=n, t_exchange=n * 3, t_publish=n * 7, ask_qty=2.0,
                        conn=0)


def order(order_id: int) -> tuple:
    return records.order(order_id, venue=2, px=95000.0, qty=0.001, reason=1, trigger_venue=1, trigger_seq=7,
                         trigger_t_recv=8, trigger_t_publish=9, t_seen=10, t_decision=11, seq=order_id)


def test_swmr_every_record_reads_in_order(shm_dir) -> None:
    w = SwmrWriter.create("r", wire.BOOK, 16)
    r = SwmrReader.attach("r", wire.BOOK, timeout=1)
    assert r.read_next() is None
    for n in range(1, 11):
        assert w.publish(*book(n)) == n
    got = [r.read_next()[BOOK_SEQ] for _ in range(10)]
    assert got == list(range(1, 11))
    assert r.read_next() is None
    assert r.lost == 0


@pytest.mark.parametrize("layout", list(wire.LAYOUTS.values()), ids=list(wire.LAYOUTS))
def test_swmr_publish_takes_exactly_one_argument_per_field_of_its_layout(shm_dir, layout: wire.Layout) -> None:
    # publish is made per layout (one positional parameter per field, no *fields): every layout's records still
    # round trip, and a record with a field missing or extra is refused before anything reaches the ring
    w = SwmrWriter.create("r", layout, 16)
    r = SwmrReader.attach("r", layout, timeout=1)
    rec = records.record(layout)
    assert w.publish(*rec) == 1
    assert r.read_next() == rec
    for bad in (rec[:-1], (*rec, 0)):
        with pytest.raises(TypeError, match="positional argument"):
            w.publish(*bad)
    assert w.published == 1 and r.read_next() is None


def test_swmr_lapped_reader_counts_exact_loss_and_resumes_at_a_valid_record(shm_dir) -> None:
    w = SwmrWriter.create("r", wire.BOOK, 8)
    r = SwmrReader.attach("r", wire.BOOK, timeout=1)
    for n in range(1, 101):
        w.publish(*book(n))
    seen = []
    while (rec := r.read_next()) is not None:
        assert rec == book(rec[BOOK_SEQ])
        seen.append(rec[BOOK_SEQ])
    assert seen == sorted(seen) and seen[-1] == 100
    assert len(seen) + r.lost == 100
    assert r.lost > 0


def test_swmr_latest_value_conflates_to_newest(shm_dir) -> None:
    w = SwmrWriter.create("r", wire.BOOK, 8)
    r = SwmrReader.attach("r", wire.BOOK, timeout=1)
    assert r.read_latest() is None
    for n in range(1, 6):
        w.publish(*book(n))
    assert r.read_latest()[BOOK_SEQ] == 5
    assert r.read_latest() is None
    w.publish(*book(6))
    assert r.read_latest()[BOOK_SEQ] == 6


def test_capacity_must_be_power_of_two(shm_dir) -> None:
    with pytest.raises(ValueError, match="power of two"):
        SwmrWriter.create("r", wire.BOOK, 12)


def test_attach_times_out_with_the_path_in_the_message(shm_dir) -> None:
    with pytest.raises(segment.AttachTimeout, match="caerus-missing"):
        SwmrReader.attach("missing", wire.BOOK, timeout=0.05)


def test_layout_mismatch_names_both_sides(shm_dir) -> None:
    SwmrWriter.create("r", wire.BOOK, 8)
    with pytest.raises(segment.SegmentMismatch) as err:
        SwmrReader.attach("r", wire.ORDER, timeout=1)
    text = str(err.value)
    assert "book records (80 B" in text and "order records (96 B" in text


def test_version_mismatch_names_both_versions(shm_dir) -> None:
    SwmrWriter.create("r", wire.BOOK, 8)
    path = segment.shm_path("r")
    with open(path, "r+b") as f:
        f.seek(8)
        f.write(struct.pack("<I", wire.LAYOUT_VERSION + 41))
    with pytest.raises(segment.SegmentMismatch) as err:
        SwmrReader.attach("r", wire.BOOK, timeout=1)
    assert f"layout v{wire.LAYOUT_VERSION + 41}" in str(err.value)
    assert f"layout v{wire.LAYOUT_VERSION})" in str(err.value)


def test_kind_mismatch_is_refused(shm_dir) -> None:
    MpscConsumer.create("o", wire.ORDER, 8)
    with pytest.raises(segment.SegmentMismatch, match="mpsc of order records"):
        SwmrReader.attach("o", wire.ORDER, timeout=1)


def test_not_a_caerus_segment(shm_dir) -> None:
    segment.shm_path("junk").write_bytes(b"\1" * 4096)
    with pytest.raises(segment.SegmentMismatch, match="bad magic"):
        SwmrReader.attach("junk", wire.BOOK, timeout=1)


def test_create_refuses_a_live_writers_segment(shm_dir) -> None:
    w = SwmrWriter.create("r", wire.BOOK, 8)
    w.beat()
    # Pretend another live process (our parent) owns it with a fresh heartbeat.
    w.seg.words[32 // 8] = os.getppid()
    with pytest.raises(segment.SegmentBusy, match=f"live writer pid {os.getppid()}"):
        SwmrWriter.create("r", wire.BOOK, 8)


def test_writer_restart_bumps_generation_and_reader_reattaches(shm_dir) -> None:
    w1 = SwmrWriter.create("r", wire.BOOK, 8)
    r = SwmrReader.attach("r", wire.BOOK, timeout=1)
    w1.publish(*book(1))
    assert r.read_next()[BOOK_SEQ] == 1
    gen1 = r.generation
    assert r.refresh() is False
    w2 = SwmrWriter.create("r", wire.BOOK, 8)  # same pid: restart of ourselves is allowed
    w2.publish(*book(42))
    assert r.refresh() is True
    assert r.generation > gen1 and r.generations == 1
    assert r.read_next()[BOOK_SEQ] == 42


def test_spsc_full_is_refused_and_counted(shm_dir) -> None:
    w = SpscWriter.create("q", wire.ORDER, 4)
    r = SpscReader.attach("q", wire.ORDER, timeout=1)
    assert [w.try_push(*order(i)) for i in range(6)] == [True] * 4 + [False] * 2
    assert w.full == 2 and r.full_count == 2
    assert [r.poll()[0] for _ in range(4)] == [0, 1, 2, 3]
    assert r.poll() is None
    assert w.try_push(*order(9))
    assert r.poll()[0] == 9


def test_mpsc_lanes_per_producer_and_reclaim_of_own_lane(shm_dir) -> None:
    c = MpscConsumer.create("o", wire.ORDER, 4, lanes=2)
    p = MpscProducer.attach("o", wire.ORDER, timeout=1)
    assert p.try_push(*order(1))
    assert c.poll()[0] == 1
    assert c.poll() is None
    assert [p.try_push(*order(i)) for i in range(2, 8)] == [True] * 4 + [False] * 2
    assert c.full_count() == 2


def test_counters_round_trip_ints_and_floats(shm_dir) -> None:
    b = CounterBlock.create("s", ints=["books", "rejects"], floats=["pnl"])
    b.ints[b.int_index("books")] += 3
    b.add("rejects", 2)
    b.set("pnl", -1.25)
    snap = CounterBlock.attach("s", timeout=1).snapshot()
    assert snap == {"books": 3, "rejects": 2, "pnl": -1.25}
    with pytest.raises(KeyError, match="no integer counter 'nope'"):
        b.int_index("nope")


def test_counter_names_are_validated(shm_dir) -> None:
    with pytest.raises(ValueError, match="duplicate"):
        CounterBlock.create("s", ints=["a", "a"])
    with pytest.raises(ValueError, match="ASCII"):
        CounterBlock.create("s", ints=["x" * 60])


def test_wait_policies() -> None:
    for policy in ("spin", "hybrid", "sleep"):
        w = make_waiter(policy, spins=2, sleep_s=0)
        for _ in range(4):
            w.idle()
        w.reset()
        assert w.policy == policy
    with pytest.raises(ValueError, match="'busy' is not one of spin, hybrid, sleep"):
        make_waiter("busy")


def test_segment_is_invisible_until_initialised(shm_dir) -> None:
    # A counter block's names are written before the rename: an attaching reader never sees an empty table.
    seen_during_init = []
    segment.create("late", wire.BOOK, segment.KIND_SWMR, 2, 128, 256,
                   init=lambda seg: seen_during_init.append(segment.shm_path("late").exists()))
    assert seen_during_init == [False]
    assert segment.shm_path("late").exists()
    b = CounterBlock.create("names", ints=["a"], floats=["f"])
    assert CounterBlock.attach("names", timeout=1).snapshot() == {"a": 0, "f": 0.0}
    b.close()


# -- trust: a segment another local user could have written is never mapped ----------------------------------


def _nobody() -> tuple[int, int]:
    import pwd

    pw = pwd.getpwnam("nobody")
    return pw.pw_uid, pw.pw_gid


def test_attach_refuses_a_segment_owned_by_another_user(shm_dir) -> None:
    # Plant a well-formed ring under the predictable name, then hand it to another user (the test runs as root,
    # like the fleet on a host; chown needs it and fails loudly otherwise).
    SwmrWriter.create("planted", wire.BOOK, 8).close()
    path = segment.shm_path("planted")
    uid, gid = _nobody()
    os.chown(path, uid, gid)
    with pytest.raises(segment.SegmentUntrusted, match=rf"owned by uid {uid}, not by this user"):
        SwmrReader.attach("planted", wire.BOOK, timeout=1)
    with pytest.raises(segment.SegmentUntrusted):
        MpscProducer.attach("planted", wire.ORDER, timeout=1)


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_attach_refuses_a_group_or_other_writable_segment(shm_dir, mode: int) -> None:
    SwmrWriter.create("loose", wire.BOOK, 8).close()
    os.chmod(segment.shm_path("loose"), mode)
    with pytest.raises(segment.SegmentUntrusted, match=f"writable by group or others \\(mode {mode:04o}\\)"):
        SwmrReader.attach("loose", wire.BOOK, timeout=1)


def test_attach_refuses_a_symlink(shm_dir) -> None:
    SwmrWriter.create("real", wire.BOOK, 8).close()
    os.symlink(segment.shm_path("real"), segment.shm_path("link"))
    with pytest.raises(segment.SegmentUntrusted, match="cannot be opened safely"):
        SwmrReader.attach("link", wire.BOOK, timeout=1)


def test_create_never_reuses_a_planted_temporary_file(shm_dir) -> None:
    # Another user's file under the temporary name: create must not open it (O_EXCL) and says so.
    path = segment.shm_path("tmpname")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.mkdir()  # a file would be taken for our own leftover and removed; a directory cannot be
    with pytest.raises(OSError):
        SwmrWriter.create("tmpname", wire.BOOK, 8)
    tmp.rmdir()
    w = SwmrWriter.create("tmpname", wire.BOOK, 8)  # with the name free it works, mode 0600
    assert os.stat(path).st_mode & 0o777 == 0o600
    w.close()

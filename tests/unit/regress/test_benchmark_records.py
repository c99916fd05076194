"""The benchmarks build wire records by hand (tuples in layout order, bound for their timed loops): each builder
must match the current layouts, or a layout change breaks `invoke regress` (and CI's gate) with no test failing."""

from __future__ import annotations

from benchmarks import capture_throughput, ipc_hop, tick_to_decision
from caerus.records.book import BOOK_T_PUBLISH, BOOK_T_RECV
from caerus.wire import BOOK, ORDER


def test_book_builders_pack_and_put_each_time_where_the_layout_says() -> None:
    recs = {
        "tick_to_decision": (tick_to_decision._book_fields(7, 2, 1_000, 2_000), 1_000, 2_000),
        "capture_throughput": (capture_throughput._book(7, 1_000), 1_000, 1_000),
        "ipc_hop": (ipc_hop._book(1_000), 1_000, 0),
    }
    for name, (rec, t_recv, t_publish) in recs.items():
        BOOK.struct.pack(*rec)  # the right number and kinds of fields
        assert (rec[BOOK_T_RECV], rec[BOOK_T_PUBLISH]) == (t_recv, t_publish), name


def test_order_builder_packs() -> None:
    ORDER.struct.pack(*ipc_hop._order(1_000))

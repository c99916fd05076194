"""The order and exec rings a test of execution or the strategy opens in its shared-memory folder, each as the pair
of ends the test drives (the ``shm_dir`` fixture points the segments at a per-test folder)."""

from __future__ import annotations

from caerus.ipc.mpsc import MpscConsumer, MpscProducer
from caerus.ipc.swmr import SwmrReader, SwmrWriter
from caerus.wire import EXEC, ORDER

ATTACH_S = 1.0


def order_ring(name: str, capacity: int) -> tuple[MpscConsumer, MpscProducer]:
    """An ORDER ring: its consumer (which creates it) and one producer attached to it."""
    return MpscConsumer.create(name, ORDER, capacity), MpscProducer.attach(name, ORDER, timeout=ATTACH_S)


def exec_ring(name: str, capacity: int) -> tuple[SwmrWriter, SwmrReader]:
    """An EXEC ring: its writer (which creates it) and one reader attached to it."""
    return SwmrWriter.create(name, EXEC, capacity), SwmrReader.attach(name, EXEC, timeout=ATTACH_S)

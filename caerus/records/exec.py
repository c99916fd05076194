"""EXEC record field positions, generated from ``caerus.wire.EXEC`` by ``python -m caerus.codegen``: do not edit.

Each name is its field's position in a tuple unpacked from a EXEC record (``rec[EXEC_FILL_QTY]``).
Import the names you read directly; hot loops bind them to locals. Padding fields (``_pad``) have no name.
tests/unit/test_codegen.py fails when this file is stale."""

from typing import Final

EXEC_ORDER_ID: Final = 0
EXEC_STRATEGY_ID: Final = 1
EXEC_VENUE: Final = 2
EXEC_SIDE: Final = 3
EXEC_TIF: Final = 4
EXEC_REASON: Final = 5
EXEC_TRIGGER_VENUE: Final = 6
EXEC_FLAGS: Final = 7
EXEC_PX: Final = 8
EXEC_QTY: Final = 9
EXEC_TRIGGER_SEQ: Final = 10
EXEC_TRIGGER_T_RECV: Final = 11
EXEC_TRIGGER_T_PUBLISH: Final = 12
EXEC_T_SEEN: Final = 13
EXEC_T_DECISION: Final = 14
EXEC_SEQ: Final = 15
EXEC_TRIGGER_T_WIRE: Final = 16
EXEC_SYMBOL: Final = 17
EXEC_T_PICKUP: Final = 19
EXEC_T_SENT: Final = 20
EXEC_OUTCOME: Final = 21
EXEC_RISK: Final = 22
EXEC_VENUE_CODE: Final = 24
EXEC_FILL_PX: Final = 25
EXEC_FILL_QTY: Final = 26
EXEC_FIELD_COUNT: Final = 27  # fields in an unpacked record, padding included

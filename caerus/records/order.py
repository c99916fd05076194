"""ORDER record field positions, generated from ``caerus.wire.ORDER`` by ``python -m caerus.codegen``: do not edit.

Each name is its field's position in a tuple unpacked from a ORDER record (``rec[ORDER__SPARE]``).
Import the names you read directly; hot loops bind them to locals. Padding fields (``_pad``) have no name.
tests/unit/test_codegen.py fails when this file is stale."""

from typing import Final

ORDER_ORDER_ID: Final = 0
ORDER_STRATEGY_ID: Final = 1
ORDER_VENUE: Final = 2
ORDER_SIDE: Final = 3
ORDER_TIF: Final = 4
ORDER_REASON: Final = 5
ORDER_TRIGGER_VENUE: Final = 6
ORDER_FLAGS: Final = 7
ORDER_PX: Final = 8
ORDER_QTY: Final = 9
ORDER_TRIGGER_SEQ: Final = 10
ORDER_TRIGGER_T_RECV: Final = 11
ORDER_TRIGGER_T_PUBLISH: Final = 12
ORDER_T_SEEN: Final = 13
ORDER_T_DECISION: Final = 14
ORDER_SEQ: Final = 15
ORDER_TRIGGER_T_WIRE: Final = 16
ORDER_SYMBOL: Final = 17
ORDER_FIELD_COUNT: Final = 19  # fields in an unpacked record, padding included

"""BOOK record field positions, generated from ``caerus.wire.BOOK`` by ``python -m caerus.codegen``: do not edit.

Each name is its field's position in a tuple unpacked from a BOOK record (``rec[BOOK_T_WIRE]``).
Import the names you read directly; hot loops bind them to locals. Padding fields (``_pad``) have no name.
tests/unit/test_codegen.py fails when this file is stale."""

from typing import Final

BOOK_VENUE: Final = 0
BOOK_FLAGS: Final = 1
BOOK_SYMBOL: Final = 2
BOOK_CONN: Final = 3
BOOK_REASON: Final = 4
BOOK_SEQ: Final = 6
BOOK_T_EXCHANGE: Final = 7
BOOK_T_RECV: Final = 8
BOOK_T_PUBLISH: Final = 9
BOOK_BID_PX: Final = 10
BOOK_BID_QTY: Final = 11
BOOK_ASK_PX: Final = 12
BOOK_ASK_QTY: Final = 13
BOOK_T_WIRE: Final = 14
BOOK_FIELD_COUNT: Final = 15  # fields in an unpacked record, padding included

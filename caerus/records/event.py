"""EVENT record field positions, generated from ``caerus.wire.EVENT`` by ``python -m caerus.codegen``: do not edit.

Each name is its field's position in a tuple unpacked from a EVENT record (``rec[EVENT_AUX]``).
Import the names you read directly; hot loops bind them to locals. Padding fields (``_pad``) have no name.
tests/unit/test_codegen.py fails when this file is stale."""

from typing import Final

EVENT_VENUE: Final = 0
EVENT_KIND: Final = 1
EVENT_CODE: Final = 2
EVENT_CONN: Final = 3
EVENT_T_NS: Final = 4
EVENT_VALUE: Final = 5
EVENT_AUX: Final = 6
EVENT_FIELD_COUNT: Final = 7  # fields in an unpacked record, padding included

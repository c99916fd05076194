"""Field positions of every wire record layout, one generated module per layout (``python -m caerus.codegen``).

``caerus.wire`` defines the layouts; ``caerus.records.book`` (``order``, ``exec``, ``event``) name each field's
position in an unpacked record as a module-level int, e.g. ``BOOK_T_RECV``. Import those names directly; never
re-alias them, and never write a position as a number.
"""

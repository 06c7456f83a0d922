"""Marker bytes of the key codec: the first byte of every encoded key value.

Every value in a key starts with one of these bytes, so a key can be decoded (and pretty-printed)
without its schema, including the direction of each value: ascending and descending forms have
distinct markers. Within one type and direction, markers are laid out so that byte order equals
value order; across types the order is simply the order of this table (a SQL column has one
type, so only NULL's place matters: first ascending, last descending).

    0x00        NULL, ascending (sorts before every ascending value)
    0x01        not-NULL sentinel: never emitted; ``prefix + 0x01`` starts a span that skips
                the ascending NULLs (``col IS NOT NULL``)
    0x02-0x05   float: NaN, finite/inf, desc finite/inf, desc NaN
    0x06-0x11   decimal: NaN, -inf, negative, zero, positive, +inf, then the same descending
    0x12-0x15   bool: false, true, desc true, desc false
    0x16-0x17   bytes, desc bytes
    0x18-0x19   str, desc str
    0x1a-0x1b   date, desc date
    0x1c-0x1d   datetime, desc datetime
    0x1e-0x1f   extended types (a tag byte follows: TIME, UUID, INTERVAL, ARRAY), ascending, descending
    0x20-0x7f   int, descending (length-in-marker varint, 80 one-byte values)
    0x80-0xfd   int, ascending, and unsigned ids (length-in-marker varint, 110 one-byte values)
    0xfe        reserved
    0xff        NULL, descending (sorts after every descending value)
"""

from __future__ import annotations

from typing import Final

# Final: constants the compiled build (mypyc) inlines into the codec instead of looking them up.

NULL: Final = 0x00
NOT_NULL: Final = 0x01

FLOAT_NAN: Final = 0x02
FLOAT: Final = 0x03
FLOAT_DESC: Final = 0x04
FLOAT_NAN_DESC: Final = 0x05

DECIMAL_NAN: Final = 0x06
DECIMAL_NEG_INF: Final = 0x07
DECIMAL_NEG: Final = 0x08
DECIMAL_ZERO: Final = 0x09
DECIMAL_POS: Final = 0x0A
DECIMAL_INF: Final = 0x0B
DECIMAL_INF_DESC: Final = 0x0C
DECIMAL_POS_DESC: Final = 0x0D
DECIMAL_ZERO_DESC: Final = 0x0E
DECIMAL_NEG_DESC: Final = 0x0F
DECIMAL_NEG_INF_DESC: Final = 0x10
DECIMAL_NAN_DESC: Final = 0x11

FALSE: Final = 0x12
TRUE: Final = 0x13
TRUE_DESC: Final = 0x14
FALSE_DESC: Final = 0x15

BYTES: Final = 0x16
BYTES_DESC: Final = 0x17
STRING: Final = 0x18
STRING_DESC: Final = 0x19
DATE: Final = 0x1A
DATE_DESC: Final = 0x1B
TIMESTAMP: Final = 0x1C
TIMESTAMP_DESC: Final = 0x1D
EXTENDED: Final = 0x1E  # then a tag byte: see sqlkv/encoding/extended.py
EXTENDED_DESC: Final = 0x1F

# Varint families: ``base`` is the lowest marker (8-byte negatives), then 7 more negative
# lengths, then ``small`` one-byte values, then 8 positive lengths (1..8 payload bytes).
INT_DESC_BASE: Final = 0x20
INT_DESC_SMALL: Final = 80
INT_BASE: Final = 0x80
INT_SMALL: Final = 110
INT_ZERO: Final = INT_BASE + 8  # 0x88: the marker of 0 (and of id 0)
INT_SMALL_MAX: Final = INT_ZERO + INT_SMALL - 1  # 0xf5: the marker of 109
INT_MAX_MARKER: Final = INT_BASE + 15 + INT_SMALL  # 0xfd
INT_DESC_MAX_MARKER: Final = INT_DESC_BASE + 15 + INT_DESC_SMALL  # 0x7f

NULL_DESC: Final = 0xFF

DESCENDING_MARKERS: Final = frozenset(
    [FLOAT_DESC, FLOAT_NAN_DESC, TRUE_DESC, FALSE_DESC, BYTES_DESC, STRING_DESC, DATE_DESC]
    + [TIMESTAMP_DESC, EXTENDED_DESC, NULL_DESC]
    + list(range(DECIMAL_INF_DESC, DECIMAL_NAN_DESC + 1))
    + list(range(INT_DESC_BASE, INT_DESC_MAX_MARKER + 1))
)

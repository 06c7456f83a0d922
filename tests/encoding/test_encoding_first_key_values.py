"""`first_key_values` and `single_key_value` decode positive ints of 1-8 bytes inline (a table
per marker byte): every width, at its bounds, whole or cut short at any length, decodes to what
`decode_key` gives, or fails with the same CorruptionError."""

from __future__ import annotations

import pytest

from sqlkv.encoding.key_columns import first_key_values
from sqlkv.encoding.keys import decode_key, encode_key
from sqlkv.encoding.single_key import single_key_value
from sqlkv.errors import CorruptionError

PREFIX = b"\x8a\x89"
EDGES = sorted({0, 1, 109, 110, 111, 2**63 - 1} | {v for n in range(1, 8) for v in (256**n - 1, 256**n, 256**n + 1)})


def _outcome(decode, key: bytes) -> object:
    try:
        return ("value", decode(key))
    except CorruptionError as exc:
        return ("error", str(exc))


@pytest.mark.parametrize("desc", [False, True])
def test_every_width_whole_and_cut_short_as_decode_key(desc: bool) -> None:
    offset = len(PREFIX)
    keys = [encode_key([v], [desc], PREFIX) for v in EDGES]
    assert first_key_values([k + b"\x88" for k in keys], offset, desc) == EDGES
    for key in keys:
        for cut in range(offset, len(key) + 1):
            short = key[:cut]
            want = _outcome(lambda k: decode_key(k, 1, [desc], offset)[0][0], short)
            got = _outcome(lambda k: first_key_values([keys[0], k], offset, desc)[1], short)
            assert got == want, (key, cut)


def test_single_key_value_at_every_width_whole_and_cut_short_as_decode_key() -> None:
    offset = len(PREFIX)
    for value in EDGES:
        key = encode_key([value], [False], PREFIX)
        assert single_key_value(key + b"\x88", offset) == value
        for cut in range(offset, len(key) + 1):
            short = key[:cut]
            assert _outcome(lambda k: single_key_value(k, offset), short) == \
                _outcome(lambda k: decode_key(k, 1, [False], offset)[0][0], short), (key, cut)

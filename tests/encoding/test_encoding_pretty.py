"""Pretty keys and spans: known renderings, names, and never raising on any bytes."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.encoding import (
    encode_key,
    encode_uvarint,
    family_suffix,
    index_prefix,
    pretty_key,
    pretty_prefix,
    pretty_span,
    table_prefix,
)
from sqlkv.storage.kv import prefix_end

USERS_PK = index_prefix(104, 1)
USERS_EMAIL = index_prefix(104, 2)


def names(table_id: int, index_id: int | None) -> tuple[str, str | None]:
    tables = {104: ("users", {1: "primary", 2: "users_email_idx"})}
    table_name, indexes = tables[table_id]  # KeyError for unknown tables: must not escape
    return table_name, indexes.get(index_id) if index_id is not None else None


@pytest.mark.parametrize(
    "key, expected",
    [
        (USERS_PK + encode_key([10]) + family_suffix(0), "/Table/104/1/10/0"),
        (USERS_PK + encode_key([-5, 300]), "/Table/104/1/-5/300"),
        (USERS_EMAIL + encode_key(["a@b.c", 10]), '/Table/104/2/"a@b.c"/10'),
        (USERS_EMAIL + encode_key(['q"\\', None]), '/Table/104/2/"q\\"\\\\"/NULL'),
        (USERS_EMAIL + encode_key([b"ab\x00'"]), "/Table/104/2/'ab\\x00\\x27'"),
        (USERS_EMAIL + encode_key([1.5, float("nan"), float("-inf")]), "/Table/104/2/1.5/NaN/-Inf"),
        (USERS_EMAIL + encode_key([Decimal("2.50"), True, False]), "/Table/104/2/2.5/true/false"),
        (USERS_EMAIL + encode_key([datetime.date(2024, 1, 31)]), "/Table/104/2/2024-01-31"),
        (
            USERS_EMAIL + encode_key([datetime.datetime(2024, 1, 31, 12, 0, 0, 1)]),
            "/Table/104/2/2024-01-31 12:00:00.000001",
        ),
        (USERS_EMAIL + encode_key(["bob", None, 7], [True, True]), '/Table/104/2/~"bob"/~NULL/7'),
        (table_prefix(104), "/Table/104"),
        (USERS_PK, "/Table/104/1"),
        (encode_uvarint(3) + encode_uvarint(1) + encode_key([0, "users"]), '/Table/3/1/0/"users"'),
        (b"", "/Min"),
        (b"\x01\x02", "/0x0102"),
        (table_prefix(104) + b"\x00", "/Table/104/0x00"),
        (USERS_PK + encode_key([10]) + b"\xfe\x01", "/Table/104/1/10/0xfe01"),
        (prefix_end(USERS_EMAIL + encode_key(["ab"])), '/Table/104/2/"ab"/PrefixEnd'),
        (prefix_end(USERS_EMAIL + encode_key(["ab"], [True])), '/Table/104/2/~"ab"/PrefixEnd'),
    ],
)
def test_known_renderings(key: bytes, expected: str) -> None:
    assert pretty_key(key) == expected


def test_names() -> None:
    key = USERS_PK + encode_key([10]) + family_suffix(0)
    assert pretty_key(key, names) == "/users/primary/10/0"
    assert pretty_key(index_prefix(104, 9) + encode_key([1]), names) == "/users/9/1"
    assert pretty_key(table_prefix(104), names) == "/users"
    assert pretty_key(index_prefix(105, 1), names) == "/Table/105/1"  # lookup failed
    assert pretty_key(index_prefix(104, 1), lambda t, i: None) == "/Table/104/1"  # type: ignore[arg-type,return-value]


def test_spans() -> None:
    start, end = USERS_PK + encode_key([10]), USERS_PK + encode_key([20])
    assert pretty_span(start, end) == "/Table/104/1/10 - /Table/104/1/20"
    assert pretty_span(start, end, names) == "/users/primary/10 - /users/primary/20"
    prefix = USERS_EMAIL + encode_key(["ab"])
    assert pretty_span(prefix, prefix_end(prefix)) == '/Table/104/2/"ab"'
    assert pretty_prefix(prefix) == '/Table/104/2/"ab"'
    assert pretty_span(start, start + b"\x00") == "/Table/104/1/10"
    assert pretty_span(start, None) == "/Table/104/1/10 - /Max"
    assert pretty_span(b"", None) == "/Min - /Max"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=32))
def test_any_bytes_render_without_raising(data: bytes) -> None:
    text = pretty_key(data, names)
    assert text.startswith("/")
    assert pretty_span(data, prefix_end(data)).startswith("/")

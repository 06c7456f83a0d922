"""Regular expressions, format/printf, to_char, age, make_date/make_timestamp, greatest/least on
every type, md5/sha256, encode/decode; unknown functions named as typed.

printf is checked against sqlite3's; hashes against hashlib; the rest are PostgreSQL's answers
computed by hand.
"""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.expr.dates import Interval
from tests.query.oracle import Pair
from tests.statements.support import rows, s  # noqa: F401


@pytest.fixture
def a(s):
    s.execute('CREATE TABLE a (k INT PRIMARY KEY, s TEXT, "key" TEXT)')
    s.execute("INSERT INTO a VALUES (1, 'abc', 'x'), (2, 'ABD', 'y'), (3, NULL, 'z')")
    return s


def test_regex_operators(a):
    assert rows(a, "SELECT k, s ~ '^a', s ~* '^a', s !~ 'b', s !~* 'B' FROM a ORDER BY k") == [
        (1, True, True, False, False), (2, False, True, True, False), (3, None, None, None, None)]
    assert rows(a, "SELECT k FROM a WHERE s ~ 'b.$' ORDER BY k") == [(1,)]
    assert rows(a, 'SELECT k FROM a WHERE "key" ~ ? ORDER BY k', ("[xz]",)) == [(1,), (3,)]
    assert rows(a, "SELECT k FROM a WHERE s ~ ('^' || upper('a'))") == [(2,)]
    assert rows(a, "SELECT ~1, 5 & ~1") == [(-2, 4)]  # unary ~ is still bitwise NOT


def test_similar_to(s):
    assert rows(s, "SELECT 'abc' SIMILAR TO 'a%', 'abc' SIMILAR TO '(a|b)%c', 'a.c' SIMILAR TO 'a.c', "
                   "'abc' SIMILAR TO 'a.c', 'abc' NOT SIMILAR TO 'b%', 'ab' SIMILAR TO 'a_', "
                   "'aaa' SIMILAR TO 'a{2,3}', 'ab' SIMILAR TO 'b'") == [(True, True, True, False, True, True, True, False)]


def test_regexp_replace(s):
    assert rows(s, r"SELECT regexp_replace('hello world', 'o', '0'), regexp_replace('hello world', 'o', '0', 'g'), "
                   r"regexp_replace('Hello', 'h(e)', '[\1\&]', 'gi')") == [("hell0 world", "hell0 w0rld", "[eHe]llo")]


@pytest.mark.parametrize("sql, error, text", [
    ("SELECT 'a' ~ '('", DataError, "invalid regular expression"),
    ("SELECT 1 ~ 'a'", ProgrammingError, "needs TEXT operands"),
    ("SELECT regexp_matches('a', 'b', 'g')", NotSupportedError, "in FROM"),
    ("SELECT regexp_split_to_array('a b', ' ', 'g')", DataError, "global"),
    ("SELECT regexp_replace('a', 'b', 'c', 'z')", DataError, "invalid regular expression option"),
    ("SELECT 'a' SIMILAR TO 'a' ESCAPE '#'", NotSupportedError, "ESCAPE"),
])
def test_regex_errors(s, sql, error, text):
    with pytest.raises(error, match=text):
        rows(s, sql)


def test_format(s):
    assert rows(s, "SELECT format('%s, %I, %L, %L, %%, %2$s, %-5s|', 'a', 'B c', 'it''s', NULL, 'x')") == [
        ("a, \"B c\", 'it''s', NULL, %, B c, it's |",)]
    assert rows(s, "SELECT format('%s-%s', 1, NULL), format(NULL, 1)") == [("1-", None)]
    with pytest.raises(DataError, match="too few arguments"):
        rows(s, "SELECT format('%s %s', 1)")
    with pytest.raises(DataError, match="NULL cannot be formatted as an SQL identifier"):
        rows(s, "SELECT format('%I', NULL)")


@pytest.mark.parametrize("sql", [
    "SELECT printf('%d|%5.2f|%s|%x|%05d|%-4s|%c|%%', 42, 3.14159, 'hi', 255, 7, 'ab', 'xyz')",
    "SELECT printf('%s and %d', 'only')",
    "SELECT printf('%e %g %X %o', 12345.678, 0.0001, 3054, 8)",
    "SELECT printf('%q', 'it''s')",
    "SELECT printf('%*d|%-*d|%.*f', 5, 3, 4, 7, 2, 3.14159)",
])
def test_printf_matches_sqlite(sql):
    Pair().check(sql)


def test_to_char(s):
    (r,) = rows(s, "SELECT to_char(TIMESTAMP '2024-03-05 14:07:09.123456', "
                   "'YYYY-MM-DD HH24:MI:SS.MS US HH12 AM Mon Month| Dy DDD D Q FMMonth FMDD \"at\" YY')")
    assert r == ("2024-03-05 14:07:09.123 123456 02 PM Mar March    | Tue 065 3 1 March 5 at 24",)
    assert rows(s, "SELECT to_char(DATE '2024-03-05', 'DD/MM/YYYY'), to_char(DATE '2024-03-05', 'day DAY')") == [
        ("05/03/2024", "tuesday   TUESDAY  ")]
    assert rows(s, "SELECT to_char(123.456, '999.99'), to_char(-5, '000'), to_char(1234567, 'FM9,999,999'), "
                   "to_char(0.5, 'FM0.00'), to_char(12345, '99'), to_char(7, 'S999')") == [
        (" 123.46", "-005", "1,234,567", "0.50", "##", "  +7")]
    with pytest.raises(NotSupportedError, match="number format"):
        rows(s, "SELECT to_char(5, 'L999')")


def test_age_make_date_make_timestamp(s):
    assert rows(s, "SELECT age(TIMESTAMP '2024-03-01', TIMESTAMP '2023-01-31 12:00'), "
                   "age(DATE '2020-01-01', DATE '2021-02-03')") == [
        (Interval(13, 0, 12 * 3600 * 10**6), Interval(-13, -2, 0))]
    assert rows(s, "SELECT make_date(2024, 2, 29), make_timestamp(2024, 2, 29, 13, 5, 6.5)") == [
        (dt.date(2024, 2, 29), dt.datetime(2024, 2, 29, 13, 5, 6, 500000))]
    with pytest.raises(DataError, match="date field value out of range: 2023-02-29"):
        rows(s, "SELECT make_date(2023, 2, 29)")
    with pytest.raises(DataError, match="time field value out of range"):
        rows(s, "SELECT make_timestamp(2024, 1, 1, 24, 0, 0)")
    assert rows(s, "SELECT date_part('month', TIMESTAMP '2024-05-06'), date_part('dow', DATE '2024-05-06')") == [
        (5.0, 1.0)]


def test_greatest_least_on_every_type(s):
    assert rows(s, "SELECT greatest(INTERVAL '1 day', INTERVAL '30 hours'), least('b', 'a', NULL), "
                   "greatest(DATE '2024-01-01', DATE '2025-01-01'), greatest(TRUE, FALSE), least(x'02', x'0101'), "
                   "greatest(1, 2.5), least(TIMESTAMP '2024-01-01 10:00', DATE '2024-01-02')") == [
        (Interval(0, 0, 30 * 3600 * 10**6), "a", dt.date(2025, 1, 1), True, b"\x01\x01", 2.5,
         dt.datetime(2024, 1, 1, 10))]


def test_hashes_and_encodings(s):
    (r,) = rows(s, "SELECT md5('abc'), sha256('abc'), md5(x'00'), encode(x'00ff5c41', 'hex'), "
                   "encode(x'00ff5c41', 'base64'), encode(x'00ff5c41', 'escape'), decode('00ff', 'hex'), "
                   r"decode('AP8=', 'base64'), decode('\000a\\', 'escape')")
    assert r == (hashlib.md5(b"abc").hexdigest(), hashlib.sha256(b"abc").digest(), hashlib.md5(b"\0").hexdigest(),
                 "00ff5c41", "AP9cQQ==", r"\000\377\\A", b"\x00\xff", b"\x00\xff", b"\x00a\\")
    assert rows(s, "SELECT encode('text', 'hex')") == [("74657874",)]  # text is encoded as UTF-8
    with pytest.raises(DataError, match="unrecognized encoding"):
        rows(s, "SELECT encode(x'00', 'rot13')")
    with pytest.raises(DataError, match="invalid hex data"):
        rows(s, "SELECT decode('zz', 'hex')")


@pytest.mark.parametrize("sql, name", [
    ("SELECT json_extract(1, 2)", "json_extract"), ("SELECT nosuchfunc(1)", "nosuchfunc"),
    ("SELECT json_extract(1)", "json_extract"),
])
def test_unknown_functions_are_named_as_typed(s, sql, name):
    with pytest.raises(ProgrammingError, match=rf"{name}\(\)"):
        rows(s, sql)

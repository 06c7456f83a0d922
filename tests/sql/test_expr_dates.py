"""INTERVAL parsing and arithmetic, EXTRACT and date_trunc edge cases."""

from __future__ import annotations

import datetime as dt

import pytest

from sqlkv.errors import DataError, ProgrammingError
from sqlkv.sql.expr.dates import Interval, add_interval, extract, parse_interval


@pytest.mark.parametrize(
    "text, unit, expected",
    [
        ("1 day", None, Interval(days=1)),
        ("2 hours 30 minutes", None, Interval(micros=(2 * 3600 + 30 * 60) * 1_000_000)),
        ("1 year 2 mons", None, Interval(months=14)),
        ("3 weeks", None, Interval(days=21)),
        ("-1 day", None, Interval(days=-1)),
        ("1 day 01:30:00", None, Interval(days=1, micros=5400 * 1_000_000)),
        ("00:00:01.5", None, Interval(micros=1_500_000)),
        ("3", "DAY", Interval(days=3)),
        ("2", "MONTH", Interval(months=2)),
        ("1.5", "DAY", Interval(days=1, micros=43_200_000_000)),
        ("10", "SECOND", Interval(micros=10_000_000)),
    ],
)
def test_parse_interval(text, unit, expected):
    assert parse_interval(text, unit) == expected


@pytest.mark.parametrize("text", ["", "banana", "1 fortnight", "1.5 months", "day"])
def test_parse_interval_errors(text):
    with pytest.raises((DataError, ProgrammingError)):
        parse_interval(text)


def test_add_interval_months_clamp_and_carry():
    assert add_interval(dt.date(2024, 1, 31), Interval(months=1)) == dt.datetime(2024, 2, 29)
    assert add_interval(dt.date(2023, 1, 31), Interval(months=1)) == dt.datetime(2023, 2, 28)
    assert add_interval(dt.datetime(2024, 11, 30, 5), Interval(months=3)) == dt.datetime(2025, 2, 28, 5)
    assert add_interval(dt.datetime(2024, 3, 31), Interval(months=-1)) == dt.datetime(2024, 2, 29)
    assert add_interval(dt.datetime(2024, 12, 31, 23), Interval(micros=3600 * 1_000_000)) == dt.datetime(2025, 1, 1)
    with pytest.raises(DataError):
        add_interval(dt.datetime(9999, 12, 31), Interval(days=1))


def test_interval_text_and_algebra():
    iv = parse_interval("1 year 2 mons 3 days 04:05:06")
    assert str(iv) == "1 year 2 mons 3 days 04:05:06"
    assert iv.plus(iv.negated()) == Interval()
    assert str(Interval()) == "00:00:00"


def test_extract_parts():
    ts = dt.datetime(2024, 12, 29, 10, 20, 30, 250000)  # a Sunday in ISO week 52
    assert extract("dow", ts) == 0 and extract("isodow", ts) == 7
    assert extract("week", ts) == 52
    assert extract("quarter", ts) == 4
    assert extract("second", ts) == 30.25
    assert extract("millisecond", ts) == 30250
    assert extract("doy", dt.date(2024, 12, 31)) == 366
    assert extract("century", dt.date(2000, 1, 1)) == 20 and extract("century", dt.date(2001, 1, 1)) == 21
    assert extract("day", parse_interval("3 days")) == 3
    with pytest.raises(ProgrammingError):
        extract("fortnight", ts)

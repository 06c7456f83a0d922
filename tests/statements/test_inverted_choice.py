"""Inverted scan or full scan, chosen per execution by a bounded probe (issue 15;
sqlkv/sql/exec/inverted_choice.py). Assertions are on EXPLAIN's text, never on timing."""

from __future__ import annotations

import pytest

from sqlkv.encoding.arrays import SqlArray
from sqlkv.sql.exec.inverted_choice import FULL_SCAN_SHARE, MIN_CANDIDATES, PROBE_START, choose_reading, count_entries
from tests.statements.support import rows, s  # noqa: F401

N = 300  # rows; every one has tag 1 and "all": 1, tag/k 7 on N / 50 of them


@pytest.fixture
def t(s):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, tags INT[], d JSONB, n INT, "
              "INVERTED INDEX (tags), INVERTED INDEX (d), FAMILY f1 (id, tags, d), FAMILY f2 (n))")
    s.execute("CREATE TABLE f (id INT PRIMARY KEY, tags INT[], d JSONB, n INT)")  # no index: the oracle
    for name in ("t", "f"):
        for i in range(N):
            s.execute(f"INSERT INTO {name} VALUES (?, ?, ?, ?)", (i, [1, i % 50], {"k": i % 50, "all": 1}, i))
    return s


def scan_line(session, sql: str, params=()) -> str:
    [line] = [r[0] for r in rows(session, "EXPLAIN " + sql, params) if "inverted scan" in r[0]]
    return line


def same_rows(session, where: str, params=()) -> list:
    got = rows(session, f"SELECT id FROM t WHERE {where} ORDER BY id", params)
    assert got == rows(session, f"SELECT id FROM f WHERE {where} ORDER BY id", params), where
    return got


@pytest.mark.parametrize("where,full,count", [
    ("tags @> ARRAY[1]", True, N),
    ("d @> '{\"all\": 1}'", True, N),
    ("tags && ARRAY[1, 2]", True, N),
    ("d ? 'k'", True, N),
    ("tags @> ARRAY[7]", False, N // 50),
    ("d @> '{\"k\": 7}'", False, N // 50),
    ("tags @> ARRAY[1, 7]", False, N // 50),  # the smallest group decides
    ("tags && ARRAY[2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]", False, 12 * N // 50),
])
def test_spans_covering_most_of_the_table_read_it_whole(t, where, full, count):
    line = scan_line(t, f"SELECT id FROM t WHERE {where}")
    assert ("reads the whole table instead" in line) == full, line
    assert len(same_rows(t, where)) == count


def test_the_choice_follows_parameters_and_data_under_one_cached_plan(t):
    sql = "SELECT id FROM t WHERE tags @> ?"
    one, seven = (SqlArray([1]),), (SqlArray([7]),)  # as the driver binds a list
    assert "reads the whole table instead" in scan_line(t, sql, one)
    assert "the spans hold 6 entries" in scan_line(t, sql, seven)
    assert len(same_rows(t, "tags @> ?", one)) == N and len(same_rows(t, "tags @> ?", seven)) == 6
    # the data changes under the same plan: tag 7 becomes common
    for name in ("t", "f"):
        t.execute(f"UPDATE {name} SET tags = array_append(tags, 7) WHERE id % 2 = 0")
    assert "reads the whole table instead" in scan_line(t, sql, seven)
    assert len(same_rows(t, "tags @> ?", seven)) == N // 2 + 6  # the even rows and the 6 odd ones with i % 50 == 7
    assert rows(t, "CHECK DATABASE") == []


def test_explain_analyze_reports_the_probe_and_the_rows(t):
    lines = [r[0] for r in rows(t, "EXPLAIN ANALYZE SELECT id FROM t WHERE tags @> ARRAY[1]")]
    assert any("reads the whole table instead" in line and "rows=300" in line for line in lines), lines


class _Keys:
    """A reader over sorted keys, counting what it hands out."""

    def __init__(self, keys: list[bytes]) -> None:
        self.keys = sorted(keys)
        self.read = 0

    def scan(self, start, end, reverse, limit):
        out = [k for k in self.keys if start <= k < end][:limit]
        self.read += len(out)
        return [(k, b"") for k in out]


def test_rule_and_probe_bounds():
    index = [b"i" + bytes([g, n]) for g in (1, 2) for n in range(200)]
    table = [b"t" + n.to_bytes(2, "big") for n in range(1000)]
    reader = _Keys(index + table)
    assert count_entries(reader, [(b"i\x01", b"i\x02")], 50) == 50 and reader.read == 50
    span = [(b"i\x01", b"i\x02")]
    # 200 candidates of 1000 rows: index; the table is counted up to 3 x 200 keys (+1) only
    reader.read = 0
    choice = choose_reading(reader, [span], b"t", 1)
    assert not choice.full_scan and choice.bound == FULL_SCAN_SHARE * 200 and reader.read == 200 + 601
    # two families: each row has two keys, so 1000 keys are 500 rows, fewer than 3 x 200
    assert choose_reading(reader, [span], b"t", 2).full_scan
    # few candidates: the table is not counted at all
    reader.read = 0
    few = [(b"i\x01", b"i\x01" + bytes([MIN_CANDIDATES - 1]))]
    assert not choose_reading(reader, [few], b"t", 1).full_scan and reader.read == MIN_CANDIDATES - 1


def test_a_capped_count_grows_until_the_share_is_known():
    index = [b"i" + n.to_bytes(2, "big") for n in range(3000)]
    table = [b"t" + n.to_bytes(2, "big") for n in range(5000)]
    reader = _Keys(index + table)
    # 1024 candidates (capped) of more than 3072 rows: unknown, so 4096: 3000 of 5000 rows, a full scan
    choice = choose_reading(reader, [[(b"i", b"j")]], b"t", 1)
    assert choice.full_scan and choice.candidates == 3000 and choice.table_rows == 5000
    assert reader.read == (PROBE_START + 3 * PROBE_START + 1) + (3000 + 5000)
    assert "the spans hold 3000 entries, the table 5000 rows" in choice.explained()

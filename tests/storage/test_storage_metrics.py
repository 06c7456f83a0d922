"""The engine's own figures: histograms against a sorted-list oracle, bloom results, compactions,
approximate sizes against a dict, and counters that survive a reopen."""

from __future__ import annotations

import random

import pytest

from sqlkv.storage import MemoryEngine, WriteBatch
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.metrics import Histogram, _bucket


def _oracle_percentile(values: list[int], fraction: float) -> int:
    ordered = sorted(values)
    rank = max(1, -(-int(fraction * len(ordered) * 1_000_000) // 1_000_000))
    return ordered[rank - 1]


@pytest.mark.parametrize("seed", range(5))
def test_histogram_percentiles_within_an_eighth_of_the_truth(seed: int) -> None:
    rng = random.Random(seed)
    values = [int(rng.lognormvariate(10, 2)) for _ in range(rng.randint(1, 3000))]
    h = Histogram()
    for v in values:
        h.record(v)
    assert h.count == len(values)
    assert h.total == sum(values)
    assert h.max == max(values)
    for fraction in (0.5, 0.9, 0.99, 1.0):
        true = _oracle_percentile(values, fraction)
        got = h.percentile(fraction)
        assert got is not None
        assert abs(got - true) <= true / 8 + 1, (fraction, got, true)
    s = h.summary()
    assert s["p50_ms"] <= s["p90_ms"] <= s["p99_ms"] <= s["max_ms"]


def test_empty_histogram_reports_nothing() -> None:
    h = Histogram()
    assert h.percentile(0.5) is None
    assert h.summary() == {"count": 0, "mean_ms": None, "p50_ms": None, "p90_ms": None,
                           "p99_ms": None, "max_ms": None}


def _write(engine, pairs) -> None:
    batch = WriteBatch()
    for k, v in pairs:
        batch.put(k, v)
    engine.write(batch)


def test_gets_of_absent_keys_raise_bloom_useful_by_about_n(tmp_path) -> None:
    engine = open_lsm(str(tmp_path / "db"), background_threads=False)
    try:
        _write(engine, [(b"k%06d" % i, b"v") for i in range(0, 4000, 2)])
        engine.flush()
        before = engine.stats()
        n = 500
        for i in range(1, 2 * n, 2):  # odd keys: absent, but inside the table's key range
            assert engine.get(b"k%06d" % i) is None
        after = engine.stats()
        useful = after["bloom_useful"] - before["bloom_useful"]
        false_pos = after["bloom_false_positives"] - before["bloom_false_positives"]
        assert useful + false_pos == n  # every absent get reached the one table's filter
        assert useful >= 0.9 * n  # 10 bits per key: about 1% false positives
        for i in range(0, 200, 2):  # present keys: positives, never false ones
            assert engine.get(b"k%06d" % i) == b"v"
        final = engine.stats()
        assert final["bloom_false_positives"] == after["bloom_false_positives"]
        assert final["bloom_positives"] - after["bloom_positives"] == 100
        assert final["bloom_false_positive_rate"] == round(final["bloom_false_positives"] / (final["bloom_useful"] + final["bloom_false_positives"]), 4)
    finally:
        engine.close()


def test_forced_compaction_appears_in_the_log(tmp_path) -> None:
    engine = open_lsm(str(tmp_path / "db"), background_threads=False, memtable_size=1 << 20)
    try:
        for round_ in range(3):
            _write(engine, [(b"k%05d" % i, b"r%d" % round_ * 20) for i in range(500)])
            engine.flush()
        assert engine.recent_compactions() == []
        engine.compact()
        log = engine.recent_compactions()
        assert len(log) == engine.stats()["compactions"] >= 1
        merge = log[0]
        assert merge["kind"] == "merge" and merge["level"] == 0 and merge["output_level"] >= 1
        assert merge["input_files"] == 3 and merge["output_files"] >= 1
        assert 0 < merge["output_bytes"] < merge["input_bytes"]  # three versions of each key became one
        assert merge["duration_ms"] >= 0
        flush = engine.latencies()["flush"]
        assert flush.count == 3
    finally:
        engine.close()


def test_counters_persist_across_a_reopen(tmp_path) -> None:
    path = str(tmp_path / "db")
    engine = open_lsm(path, background_threads=False)
    _write(engine, [(b"a", b"1" * 100)])
    engine.flush()
    first = engine.stats()
    engine.close()
    engine = open_lsm(path, background_threads=False)
    try:
        again = engine.stats()
        assert again["since"] == first["since"]
        assert again["opened"] > first["opened"]
        for name in ("user_bytes_written", "flush_bytes_written", "flushes"):
            assert again[name] == first[name] > 0
        _write(engine, [(b"b", b"2" * 50)])
        assert engine.stats()["user_bytes_written"] == first["user_bytes_written"] + 51
        assert engine.latencies()["flush"].count == 0  # latencies count from this open
    finally:
        engine.close()


def test_latency_histograms_count_what_ran(tmp_path) -> None:
    engine = open_lsm(str(tmp_path / "db"), durability="full", background_threads=False)
    try:
        for i in range(10):
            _write(engine, [(b"k%d" % i, b"v")])
        lat = engine.latencies()
        assert lat["wal_fsync"].count == engine.stats()["wal_fsyncs"] >= 10
        for i in range(64):
            engine.get(b"k%d" % (i % 10))
        assert lat["get"].count == 64 // 16  # one get in SAMPLE_EVERY is timed
        list(engine.scan(b"k", None))
        list(engine.scan(b"k3", b"k5"))
        assert lat["scan"].count == 2
    finally:
        engine.close()


@pytest.mark.parametrize("kind", ["memory", "lsm"])
def test_approximate_sizes_against_a_dict(tmp_path, kind: str) -> None:
    engine = MemoryEngine() if kind == "memory" else open_lsm(str(tmp_path / "db"), background_threads=False,
                                                               block_size=512)
    try:
        model = {}
        for t in range(3):
            pairs = [(bytes([t]) + b"%05d" % i, b"x" * 20) for i in range(300 * (t + 1))]
            _write(engine, pairs)
            model.update(pairs)
            if kind == "lsm" and t == 1:
                engine.flush()  # table 0 and 1 on disk, table 2 in the memtable
        spans = [(bytes([t]), bytes([t + 1])) for t in range(3)] + [(bytes([9]), None)]
        got = engine.approximate_sizes(spans)
        for (start, end), (keys, size) in zip(spans, got):
            true_keys = sum(1 for k in model if start <= k and (end is None or k < end))
            true_bytes = sum(len(k) + len(v) for k, v in model.items() if start <= k and (end is None or k < end))
            if kind == "memory":
                assert (keys, size) == (true_keys, true_bytes)
            else:  # interior blocks count at the table's average: close, not exact
                assert abs(keys - true_keys) <= 0.1 * true_keys + 2, (start, keys, true_keys)
                assert (size == 0) == (true_bytes == 0)
    finally:
        engine.close()


def test_record_counts_each_value_in_its_buckets_bucket() -> None:
    """`Histogram.record` inlines `_bucket` (constants and all): every value lands where
    `_bucket` says, including the edges of the exact range and of each power of two."""
    rng = random.Random(5)
    values = [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 1000, 2**40 - 1, 2**40, 2**62 + 3]
    values += [rng.getrandbits(rng.randint(1, 62)) for _ in range(5000)]
    hist = Histogram()
    expected: dict[int, int] = {}
    for value in values:
        hist.record(value)
        expected[_bucket(value)] = expected.get(_bucket(value), 0) + 1
    assert {i: n for i, n in enumerate(hist.counts) if n} == expected
    assert hist.count == len(values) and hist.total == sum(values) and hist.max == max(values)


@pytest.mark.parametrize("seed", range(5))
def test_record_many_as_record_of_each(seed: int) -> None:
    """Durations taken in bulk land in the buckets, count, total and max that recording them
    one by one gives (small values, which are their own buckets, included)."""
    rng = random.Random(seed)
    for _ in range(40):
        values = [rng.choice([rng.randrange(0, 16), rng.randrange(16, 10**6), rng.randrange(10**6, 10**13)])
                  for _ in range(rng.randrange(0, 60))]
        if rng.random() < 0.5:
            values = [v for v in values if v >= 8]
        one, bulk = Histogram(), Histogram()
        one.record(12_345)
        bulk.record(12_345)
        for value in values:
            one.record(value)
        bulk.record_many(values)
        assert (bulk.counts, bulk.count, bulk.total, bulk.max) == (one.counts, one.count, one.total, one.max)

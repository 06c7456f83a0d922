"""The WAL never loses an acknowledged commit silently.

Two halves. Damage to any segment but the newest -- a flipped bit, a cut, a zeroed block, a
deleted file -- is a CorruptionError naming the file (only the newest segment may end in a
torn write). And failures while writing (a full disk, an I/O error, a failed fsync or rename,
injected through `sqlkv.storage.lsm.fileio`) reach the caller as OperationalError and never
make a later successful commit vanish on reopen.
"""

from __future__ import annotations

import errno
import glob
import os
import random

import pytest

from sqlkv.errors import CorruptionError, OperationalError
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.lsm.fileio import FaultPlan, inject_faults
from tests.storage.crash_support import as_if_crashed


def _put(engine, key: bytes, value: bytes) -> None:
    batch = WriteBatch()
    batch.put(key, value)
    engine.write(batch)


def _contents(path: str) -> dict[bytes, bytes]:
    engine = open_lsm(path)
    try:
        return dict(engine.scan(b"", None))
    finally:
        engine.close()


def _segments(path: str) -> list[str]:
    return sorted(glob.glob(os.path.join(path, "*.log")))


def _three_sessions(path: str) -> dict[bytes, bytes]:
    """Three open/write/close sessions and no flush: three live segments plus an empty newest."""
    data = {}
    for session in range(3):
        engine = open_lsm(path, memtable_size=1 << 24)
        for i in range(20):
            key, value = b"s%d-k%02d" % (session, i), b"v" * 50
            _put(engine, key, value)
            data[key] = value
        engine.close()
    open_lsm(path, memtable_size=1 << 24).close()  # starts the (empty) newest segment
    return data


def _nonempty_segments(path: str) -> list[str]:
    return [p for p in _segments(path) if os.path.getsize(p)]


@pytest.mark.parametrize("damage", ["flip", "truncate", "zero", "truncate-header"])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_damage_in_a_segment_that_is_not_the_newest_is_corruption(tmp_path, damage, which):
    path = str(tmp_path)
    _three_sessions(path)
    # the newest segment is the empty one the last open started; all three written ones are older
    segment = _nonempty_segments(path)[which]
    size = os.path.getsize(segment)
    with open(segment, "r+b") as f:
        if damage == "flip":
            f.seek(size - 40)
            byte = f.read(1)
            f.seek(size - 40)
            f.write(bytes([byte[0] ^ 0x10]))
        elif damage == "truncate":
            f.truncate(size - 30)
        elif damage == "truncate-header":
            f.truncate(size - (size % 97) - 5)
        else:
            f.seek(size - 200)
            f.write(b"\0" * 200)
    with pytest.raises(CorruptionError) as info:
        open_lsm(path).close()
    assert os.path.basename(segment) in str(info.value)
    assert "offset" in str(info.value)


@pytest.mark.parametrize("which", [0, 1, 2, -1])
def test_a_deleted_segment_is_detected(tmp_path, which):
    path = str(tmp_path)
    _three_sessions(path)
    segment = _segments(path)[which]
    os.unlink(segment)
    with pytest.raises(CorruptionError) as info:
        open_lsm(path).close()
    assert os.path.basename(segment) in str(info.value)


def _record_ends(segment: str) -> list[int]:
    """Offsets just past each whole record of a segment (the WAL's header: length first)."""
    data, ends, pos = open(segment, "rb").read(), [], 0
    while pos < len(data):
        pos += 12 + int.from_bytes(data[pos:pos + 4], "little")
        ends.append(pos)
    return ends


@pytest.mark.parametrize("records_cut", [1, 5])
def test_an_older_segment_cut_at_a_record_boundary_is_corruption(tmp_path, records_cut):
    """No torn record shows, and the newest segment is empty, so no seq gap shows either: only
    the size the MANIFEST recorded when the log moved on tells that commits are missing."""
    path = str(tmp_path)
    _three_sessions(path)
    segment = _nonempty_segments(path)[-1]
    os.truncate(segment, _record_ends(segment)[-1 - records_cut])
    with pytest.raises(CorruptionError, match=os.path.basename(segment) + ".*offset"):
        open_lsm(path).close()


def test_a_segment_the_log_rotated_away_from_keeps_its_size_across_a_crash(tmp_path):
    """Rotation by memtable size (no clean close, no reopen): the finished segment's size is
    in the MANIFEST, so cutting its last records is corruption, not a shorter history."""
    path = str(tmp_path)
    engine = open_lsm(path, memtable_size=1 << 24)
    for i in range(10):
        _put(engine, b"a%d" % i, b"v" * 40)
    with engine._core.write_lock:
        engine._core._rotate_memtable()  # what a full memtable does
    engine.close()
    as_if_crashed(path)
    finished = _nonempty_segments(path)[0]
    os.truncate(finished, _record_ends(finished)[-2])
    with pytest.raises(CorruptionError, match=os.path.basename(finished)):
        open_lsm(path).close()


def test_a_torn_tail_is_cut_so_later_sessions_still_open(tmp_path):
    path = str(tmp_path)
    engine = open_lsm(path, memtable_size=1 << 24)
    for i in range(10):
        _put(engine, b"k%d" % i, b"v%d" % i)
    engine.close()
    as_if_crashed(path)
    newest = _nonempty_segments(path)[-1]
    with open(newest, "r+b") as f:  # a crash mid-append: the last record is half there
        f.truncate(os.path.getsize(newest) - 3)
    expected = {b"k%d" % i: b"v%d" % i for i in range(9)}
    assert _contents(path) == expected  # the torn record was never acknowledged
    engine = open_lsm(path, memtable_size=1 << 24)  # that segment is now an older one
    _put(engine, b"after", b"x")
    engine.close()
    assert _contents(path) == {**expected, b"after": b"x"}


def test_enospc_mid_append_does_not_swallow_the_next_commit(tmp_path):
    path = str(tmp_path)
    engine = open_lsm(path)
    _put(engine, b"a", b"1")
    with inject_faults(FaultPlan("write", suffix=".log", short=7)) as plan:
        with pytest.raises(OperationalError, match="No space left"):
            _put(engine, b"b", b"2")
    assert plan.fired == 1
    _put(engine, b"c", b"3")  # the disk has room again: this commit must survive
    assert engine.get(b"b") is None
    engine.close()
    assert _contents(path) == {b"a": b"1", b"c": b"3"}


def test_when_the_wal_cannot_be_cut_back_writes_are_refused_until_reopen(tmp_path):
    path = str(tmp_path)
    engine = open_lsm(path)
    _put(engine, b"a", b"1")
    cut = FaultPlan("write", suffix=".log", short=5)
    with inject_faults(cut, FaultPlan("truncate", suffix=".log", errno=errno.EIO)):
        with pytest.raises(OperationalError, match="refuses writes"):
            _put(engine, b"b", b"2")
    with pytest.raises(OperationalError, match="refuses writes"):
        _put(engine, b"c", b"3")
    assert engine.get(b"a") == b"1"  # reads go on
    engine.close()
    # the half record is the newest segment's torn tail: dropped, and nothing acknowledged lost
    assert _contents(path) == {b"a": b"1"}
    engine = open_lsm(path)
    _put(engine, b"d", b"4")
    engine.close()
    assert _contents(path) == {b"a": b"1", b"d": b"4"}


def test_a_failed_fsync_fails_the_commit_and_every_later_write(tmp_path):
    path = str(tmp_path)
    engine = open_lsm(path, durability="full")
    _put(engine, b"a", b"1")
    with inject_faults(FaultPlan("sync", suffix=".log")):
        with pytest.raises(OperationalError, match="durable is unknown"):
            _put(engine, b"b", b"2")
    with pytest.raises(OperationalError, match="refuses writes"):
        _put(engine, b"c", b"3")
    engine.close()  # the failure was reported already; closing a failed engine is quiet
    contents = _contents(path)
    assert contents.get(b"a") == b"1" and b"c" not in contents  # b: outcome unknown either way


@pytest.mark.parametrize("op,suffix", [("open", ".log"), ("sync", ".log"), ("replace", "MANIFEST"),
                                       ("write", "MANIFEST.tmp"), ("syncdir", "")])
def test_a_failure_while_rotating_segments_loses_nothing_acknowledged(tmp_path, op, suffix):
    path = str(tmp_path)
    engine = open_lsm(path, memtable_size=2048, durability="normal")
    acked = {}
    with inject_faults(FaultPlan(op, suffix=suffix, nth=1)) as plan:
        for i in range(200):
            key, value = b"k%04d" % i, b"v" * 40
            try:
                _put(engine, key, value)
            except OperationalError:
                break
            acked[key] = value
    assert plan.fired == 1, plan.log
    with pytest.raises(OperationalError):
        _put(engine, b"later", b"x")
    try:
        engine.close()
    except OperationalError:
        pass
    contents = _contents(path)
    assert {k: contents.get(k) for k in acked} == acked


def test_a_full_disk_during_a_flush_reaches_writers_and_loses_nothing(tmp_path):
    path = str(tmp_path)
    engine = open_lsm(path, memtable_size=2048)
    acked = {}
    failed = None
    with inject_faults(FaultPlan("write", suffix=".sst", sticky=True)):
        for i in range(400):
            key, value = b"k%04d" % i, b"v" * 40
            try:
                _put(engine, key, value)
            except OperationalError as exc:
                failed = exc
                break
            acked[key] = value
    assert failed is not None and "background work failed" in str(failed)
    try:
        engine.close()
    except OperationalError:
        pass
    assert not [p for p in glob.glob(os.path.join(path, "*.sst"))
                if os.path.getsize(p) == 0]  # a half-written table is removed
    contents = _contents(path)
    assert {k: contents.get(k) for k in acked} == acked


@pytest.mark.parametrize("seed", range(int(os.environ.get("SQLKV_FAULT_SEEDS", "6"))))
def test_fault_campaign_against_a_model(tmp_path, seed):
    """Fail the Nth call of a random operation during a random workload; after reopen every
    acknowledged write is there and every refused append is not."""
    rng = random.Random(seed)
    injected = acknowledged = 0
    for round_ in range(8):
        path = str(tmp_path / f"r{round_}")
        op, suffix = rng.choice([("write", ".log"), ("sync", ".log"), ("open", ".log"),
                                 ("write", ".sst"), ("sync", ".sst"), ("replace", "MANIFEST"),
                                 ("write", "")])
        plan = FaultPlan(op, suffix=suffix, nth=rng.randint(1, 30), short=rng.choice([None, 3, 11]),
                         errno=rng.choice([errno.ENOSPC, errno.EIO]), sticky=rng.random() < 0.3)
        model: dict[bytes, bytes] = {}
        unknown: dict[bytes, set[bytes]] = {}  # values a write of unknown outcome may have left
        engine = open_lsm(path, memtable_size=3000, durability=rng.choice(["full", "normal"]))
        with inject_faults(plan):
            for i in range(300):
                batch = WriteBatch()
                writes = {b"k%03d" % rng.randrange(60): b"%d-%d" % (round_, i) for _ in range(3)}
                for key, value in writes.items():
                    batch.put(key, value)
                try:
                    engine.write(batch)
                except OperationalError as exc:
                    if "unknown" in str(exc) or "refuses" in str(exc):
                        for key, value in writes.items():
                            unknown.setdefault(key, set()).add(value)
                    continue
                model.update(writes)
        try:
            engine.close()
        except OperationalError:
            pass
        contents = _contents(path)
        for key, value in model.items():
            got = contents.get(key)
            assert got == value or got in unknown.get(key, ()), (plan, key, got, value)
        for key, got in contents.items():  # nothing a refused append wrote came back
            assert key in model or got in unknown.get(key, ()), (plan, key, got)
        injected += plan.fired
        acknowledged += len(model)
    print(f"\nfault campaign seed {seed}: 8 rounds, {injected} I/O calls failed, {acknowledged} "
          f"acknowledged keys checked after reopen, lost 0")


def test_check_database_reports_damage_that_happened_while_open(tmp_path):
    import sqlkv

    path = str(tmp_path / "db")
    conn = sqlkv.connect(path)
    conn.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
    for i in range(50):
        conn.execute("INSERT INTO t VALUES (?, ?)", (i, "x" * 30))
    conn.commit()
    assert conn.execute("CHECK DATABASE").fetchall() == []
    segment = _nonempty_segments(path)[-1]
    with open(segment, "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 1]))
    problems = [row[0] for row in conn.execute("CHECK DATABASE").fetchall()]
    assert problems and os.path.basename(segment) in problems[0] and "offset" in problems[0]
    conn.close()


def test_check_database_reads_every_table_block(tmp_path):
    import sqlkv

    path = str(tmp_path / "db")
    conn = sqlkv.connect(path)
    conn.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, "y" * 40) for i in range(500)])
    conn.commit()
    conn.close()
    engine = open_lsm(path)
    engine.flush()
    engine.close()
    table = sorted(glob.glob(os.path.join(path, "*.sst")), key=os.path.getsize)[-1]
    with open(table, "r+b") as f:
        f.seek(50)
        byte = f.read(1)
        f.seek(50)
        f.write(bytes([byte[0] ^ 4]))
    conn = sqlkv.connect(path)
    problems = [row[0] for row in conn.execute("CHECK DATABASE").fetchall()]
    assert any(os.path.basename(table) in p for p in problems), problems
    conn.close()


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_cleanly_closed_newest_segment_is_sealed(tmp_path, damage):
    """After a clean close the newest segment's tail was not torn by anything: a flipped bit
    in its last (acknowledged, fsynced) record is corruption, not a write to drop."""
    path = str(tmp_path)
    engine = open_lsm(path)
    batch = WriteBatch()
    for i in range(30):
        batch.put(b"k%02d" % i, b"v" * 20)
    engine.write(batch)  # one record, the only one
    engine.close()
    segment = _nonempty_segments(path)[-1]
    with open(segment, "r+b") as f:
        if damage == "flip":
            f.seek(60)
            byte = f.read(1)
            f.seek(60)
            f.write(bytes([byte[0] ^ 2]))
        else:
            f.truncate(os.path.getsize(segment) - 10)
    with pytest.raises(CorruptionError, match=os.path.basename(segment)):
        open_lsm(path).close()


@pytest.mark.parametrize("op", ["write", "sync", "replace", "open", "syncdir"])
def test_a_failure_while_opening_is_an_operational_error_and_harmless(tmp_path, op):
    path = str(tmp_path)
    engine = open_lsm(path)
    _put(engine, b"a", b"1")
    engine.close()
    with inject_faults(FaultPlan(op, sticky=True)):
        with pytest.raises(OperationalError, match="cannot open database"):
            open_lsm(path)
    assert _contents(path) == {b"a": b"1"}  # and the LOCK was released

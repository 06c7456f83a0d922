"""Damaged files raise CorruptionError naming the file; a torn WAL tail is dropped silently."""

from __future__ import annotations

import glob
import os
import struct

import pytest

from sqlkv.errors import CorruptionError
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm
from tests.storage.crash_support import as_if_crashed
from sqlkv.storage.lsm.sstable.builder import FOOTER, FOOTER_SIZE


def _fill(path: str, n: int = 2000, flush: bool = True, **options) -> dict[bytes, bytes]:
    engine = open_lsm(path, **options)
    data = {}
    for start in range(0, n, 100):
        batch = WriteBatch()
        for i in range(start, start + 100):
            key, value = b"key%06d" % i, b"value-%d" % i * 3
            batch.put(key, value)
            data[key] = value
        engine.write(batch)
    if flush:
        engine.flush()
    engine.close()
    return data


def _flip(path: str, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x5A]))


def _only(pattern: str) -> str:
    files = glob.glob(pattern)
    assert len(files) == 1, files
    return files[0]


def _read_everything(path: str) -> None:
    engine = open_lsm(path)
    try:
        list(engine.scan(b"", None))
    finally:
        engine.close()


def test_flipped_byte_in_data_block(tmp_path):
    path = str(tmp_path)
    data = _fill(path)
    table = _only(os.path.join(path, "*.sst"))
    _flip(table, 100)
    engine = open_lsm(path)  # opening does not read table data
    try:
        with pytest.raises(CorruptionError, match=os.path.basename(table)):
            for key in data:
                engine.get(key)
        with pytest.raises(CorruptionError, match=os.path.basename(table)):
            list(engine.scan(b"", None))
    finally:
        engine.close()


def _footer(table: str) -> tuple:
    with open(table, "rb") as f:
        f.seek(-FOOTER_SIZE, os.SEEK_END)
        return FOOTER.unpack(f.read(FOOTER.size))


def test_flipped_byte_in_index_block(tmp_path):
    path = str(tmp_path)
    _fill(path)
    table = _only(os.path.join(path, "*.sst"))
    index_offset, index_size, *_ = _footer(table)
    _flip(table, index_offset + index_size // 2)
    with pytest.raises(CorruptionError, match=os.path.basename(table)):
        _read_everything(path)


def test_flipped_byte_in_bloom_block(tmp_path):
    path = str(tmp_path)
    _fill(path)
    table = _only(os.path.join(path, "*.sst"))
    _, _, bloom_offset, bloom_size, *_ = _footer(table)
    _flip(table, bloom_offset + bloom_size // 2)
    with pytest.raises(CorruptionError, match=os.path.basename(table)):
        _read_everything(path)


@pytest.mark.parametrize("back", [1, 8, FOOTER_SIZE])
def test_flipped_byte_in_footer(tmp_path, back):
    path = str(tmp_path)
    _fill(path)
    table = _only(os.path.join(path, "*.sst"))
    _flip(table, os.path.getsize(table) - back)
    with pytest.raises(CorruptionError, match=os.path.basename(table)):
        _read_everything(path)


@pytest.mark.parametrize("where", ["header", "body"])
def test_flipped_byte_in_manifest(tmp_path, where):
    path = str(tmp_path)
    _fill(path)
    manifest = os.path.join(path, "MANIFEST")
    _flip(manifest, 3 if where == "header" else os.path.getsize(manifest) - 5)
    with pytest.raises(CorruptionError, match="MANIFEST"):
        open_lsm(path)


def _wal_after_writes(path: str) -> tuple[str, dict[bytes, bytes]]:
    """A WAL segment as a crash leaves it: the MANIFEST does not mark it closed cleanly (a
    clean close seals the newest segment, and then even its tail may not be damaged)."""
    data = _fill(path, n=500, flush=False, durability="normal", memtable_size=1 << 24)
    logs = [p for p in glob.glob(os.path.join(path, "*.log")) if os.path.getsize(p)]
    assert len(logs) == 1
    as_if_crashed(path)
    return logs[0], data


@pytest.mark.parametrize("cut", [1, 7, 300])
def test_truncated_wal_tail_is_dropped(tmp_path, cut):
    path = str(tmp_path)
    log, data = _wal_after_writes(path)
    os.truncate(log, os.path.getsize(log) - cut)
    engine = open_lsm(path)
    try:
        got = dict(engine.scan(b"", None))
        assert got == {k: v for k, v in data.items() if k < b"key%06d" % 400}  # last batch lost whole
        assert engine.last_seq == 400
    finally:
        engine.close()


def test_zero_filled_wal_tail_is_dropped(tmp_path):
    path = str(tmp_path)
    log, data = _wal_after_writes(path)
    with open(log, "ab") as f:
        f.write(b"\x00" * 4096)
    engine = open_lsm(path)
    try:
        assert dict(engine.scan(b"", None)) == data
    finally:
        engine.close()


@pytest.mark.parametrize("offset", [2, 10, 40])
def test_garbled_wal_middle_record_raises(tmp_path, offset):
    path = str(tmp_path)
    log, _ = _wal_after_writes(path)
    _flip(log, offset)  # inside the first record: header fields or payload
    with pytest.raises(CorruptionError, match=rf"{os.path.basename(log)}.*offset 0"):
        open_lsm(path)


def test_wal_record_length_is_checked(tmp_path):
    path = str(tmp_path)
    log, _ = _wal_after_writes(path)
    with open(log, "r+b") as f:
        f.write(struct.pack("<I", 1 << 30))  # an absurd length in the first header
    with pytest.raises(CorruptionError, match=os.path.basename(log)):
        open_lsm(path)


def test_missing_manifest_with_tables_is_not_a_new_database(tmp_path):
    path = str(tmp_path)
    _fill(path)
    os.unlink(os.path.join(path, "MANIFEST"))
    with pytest.raises(CorruptionError, match="MANIFEST .* is missing"):
        open_lsm(path)
    assert glob.glob(os.path.join(path, "*.sst"))  # nothing was deleted

"""`encode_put_block` (an ingestion's block whose pairs all hold one value at one seq) writes
the bytes `encode_packed_block` writes, for every offset width and array header size; a table
built by `add_puts` from such pairs, and from pairs mixing values or seqs, reads back whole."""

from __future__ import annotations

import pytest

from sqlkv.storage.lsm.cache import BlockCache
from sqlkv.storage.lsm.sstable.builder import TableBuilder
from sqlkv.storage.lsm.sstable.packed import encode_packed_block
from sqlkv.storage.lsm.sstable.put_block import encode_put_block
from sqlkv.storage.lsm.sstable.reader import TableReader


@pytest.mark.parametrize("count", [1, 15, 16, 300, 5000, 70000])
@pytest.mark.parametrize("value", [b"\x90", b"", b"v" * 40])
def test_the_bytes_of_encode_packed_block(count: int, value: bytes) -> None:
    keys = [b"k%07d" % i + b"x" * (i % 5) for i in range(count)]
    expected = encode_packed_block(0, 77, keys, [77] * count, [value] * count)
    assert encode_put_block(77, keys, value) == expected


@pytest.mark.parametrize("mixed", ["none", "values", "seqs"])
def test_a_table_of_puts_reads_back(tmp_path, mixed: str) -> None:
    builder = TableBuilder(str(tmp_path / "t.sst"), 1, 512, bloom=False)
    pairs: dict[bytes, tuple[int, bytes]] = {}
    for chunk in range(6):
        keys = [b"k%05d" % (chunk * 1000 + i) for i in range(0, 1000, 3)]
        seq = 9 if mixed != "seqs" else 5 + chunk % 2
        values = [b"\x90" if mixed != "values" or i % 7 else b"other" for i in range(len(keys))]
        assert builder.add_puts(keys, values, seq, 1 << 40) == len(keys)
        pairs.update((k, (seq, v)) for k, v in zip(keys, values))
    info = builder.finish(9)
    assert builder.payload == sum(len(k) + len(v) for k, (_s, v) in pairs.items())
    reader = TableReader(str(tmp_path / "t.sst"), info.number, info.size, BlockCache(1 << 20))
    try:
        for key, (seq, value) in pairs.items():
            assert reader.get(key, 1 << 40) == (seq, value)
        assert reader.get(b"k00001", 1 << 40) is None
    finally:
        reader.close()

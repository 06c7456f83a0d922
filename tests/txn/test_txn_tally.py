"""A batch of gets counts its keys into the manager's per-prefix reads (`TxnFigures.reads`)
as key-by-key gets would, per (table id, index id) the prefixes begin with (what the figures
read of them): at once when every key has the first key's prefix, else one by one."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from sqlkv.txn.figures import PREFIX_LEN, _by_ident
from sqlkv.txn.transaction import _tally_keys


@pytest.mark.parametrize("seed", range(6))
def test_batch_tally_counts_as_key_by_key(seed: int) -> None:
    rng = random.Random(seed)
    heads = [b"\x89\x8a", b"\x89\x8b", b"\x89", b"\x8a\x89\x01\x02", b"", b"\xf6\x01\x89", b"\x89\xf6\x02"]
    tally = {b"\x89\x8a\x12\x34": 3}
    model = Counter(tally)
    for _ in range(40):
        keys = [rng.choice(heads[: rng.randint(1, len(heads))]) + bytes(rng.randrange(256) for _ in range(rng.randint(0, 6)))
                for _ in range(rng.randint(0, 12))]
        if rng.random() < 0.5:  # one table's rows: a shared four-byte prefix
            keys = [b"\x89\x8a\x12\x34" + key for key in keys]
        _tally_keys(tally, keys)
        model.update(key[:PREFIX_LEN] for key in keys)
        assert _by_ident(tally, {}) == _by_ident(dict(model), {})
        assert sum(tally.values()) == sum(model.values())

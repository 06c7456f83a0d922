"""Per-operation timings of the encoding layer (not a test: run it by hand).

    .venv/bin/python -m tests.encoding.bench_encoding
"""

from __future__ import annotations

import datetime
import time
import timeit
from collections.abc import Callable
from decimal import Decimal

from sqlkv.encoding import (
    decode_key,
    decode_row_value,
    decode_values,
    encode_key,
    encode_row_value,
    encode_values,
    family_suffix,
    index_prefix,
)


def _per_op_ns(fn: Callable[[], object], number: int = 100_000) -> float:
    # CPU time of this process, so that other processes on a shared machine inflate it less
    best = min(timeit.repeat(fn, number=number, repeat=5, timer=time.process_time))
    return best / number * 1e9


def main() -> None:
    prefix = index_prefix(104, 1)
    fam = family_suffix(0)
    row = {2: "alice@example.com", 3: 12345, 4: 3.25, 5: True, 6: "Alice Liddell"}
    row_ext = {2: Decimal("12.50"), 3: datetime.date(2024, 1, 31), 4: datetime.datetime(2024, 1, 31, 12)}
    k_int = encode_key([10], prefix=prefix) + fam
    k_big = encode_key([123456789], prefix=prefix) + fam
    k_int_str = encode_key([10, "alice@example.com"], prefix=prefix)
    k_desc = encode_key([123456789, "alice@example.com"], [True, True], prefix=prefix)
    v_row, v_ext = encode_row_value(row), encode_row_value(row_ext)
    v_list = encode_values([10, "alice@example.com"])
    cases: list[tuple[str, Callable[[], object]]] = [
        ("encode_key((int,)) small, prefix", lambda: encode_key((10,), None, prefix)),
        ("encode_key((int,)) 123456789", lambda: encode_key((123456789,), None, prefix)),
        ("encode_key((int, str))", lambda: encode_key((10, "alice@example.com"), None, prefix)),
        ("encode_key((int, str)) both desc", lambda: encode_key((123456789, "alice@example.com"), (True, True), prefix)),
        ("encode_key((float, date, Decimal))", lambda: encode_key((2.5, datetime.date(2024, 1, 31), Decimal("12.5")))),
        ("decode_key pk (int,) + family", lambda: decode_key(k_int, 1, None, 2)),
        ("decode_key (int,) 123456789", lambda: decode_key(k_big, 1, None, 2)),
        ("decode_key (int, str)", lambda: decode_key(k_int_str, 2, None, 2)),
        ("decode_key (int, str) both desc", lambda: decode_key(k_desc, 2, (True, True), 2)),
        ("encode_row_value 5 cols (str,int,float,bool,str)", lambda: encode_row_value(row)),
        ("decode_row_value 5 cols", lambda: decode_row_value(v_row)),
        ("encode_row_value 3 ext cols (Decimal,date,datetime)", lambda: encode_row_value(row_ext)),
        ("decode_row_value 3 ext cols", lambda: decode_row_value(v_ext)),
        ("encode_values [int, str]", lambda: encode_values([10, "alice@example.com"])),
        ("decode_values [int, str]", lambda: decode_values(v_list)),
    ]
    for name, fn in cases:
        print(f"{name:55s} {_per_op_ns(fn):8.0f} ns")


if __name__ == "__main__":
    main()

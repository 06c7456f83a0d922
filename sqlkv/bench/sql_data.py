"""The benchmark's schema and data, generated deterministically so every engine gets the same rows.

Two tables: ``orders`` (``scale`` rows) and ``customers`` (10,000 rows, fewer at tiny scales).
Row ``i`` of ``orders`` is a pure function of ``(seed, i)`` -- generated in chunks with a
random generator seeded per chunk -- so sqlite3, sqlkv and DuckDB load identical tables
without the harness ever holding a whole table in memory. Keys the workloads look up are
derived the same way (`scattered_keys`, `Dataset.sku_of`), so result sets can be compared.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

SCHEMA = (
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, region TEXT NOT NULL, "
    "tier INTEGER NOT NULL)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, sku TEXT NOT NULL, "
    "quantity INTEGER NOT NULL, amount INTEGER NOT NULL, status TEXT)",
    "CREATE INDEX orders_sku ON orders (sku)",
    "CREATE INDEX orders_customer ON orders (customer_id)",
)

INSERT_CUSTOMER = "INSERT INTO customers (id, name, region, tier) VALUES (?, ?, ?, ?)"
INSERT_ORDER = (
    "INSERT INTO orders (id, customer_id, sku, quantity, amount, status) VALUES (?, ?, ?, ?, ?, ?)"
)

# NULL is one of the statuses on purpose: GROUP BY must put NULLs in a group of their own.
STATUSES = ("new", "paid", "shipped", "returned", None)

CHUNK_ROWS = 10_000
MAX_CUSTOMERS = 10_000
# Knuth's multiplicative hash constant: odd, so i -> i * K mod 2**32 is a bijection and skus are
# unique while their order is unrelated to the primary key order.
_SKU_MULTIPLIER = 2_654_435_761


@dataclass(frozen=True)
class Dataset:
    """The size and seed of one benchmark database."""

    scale: int
    seed: int = 7

    @property
    def customers(self) -> int:
        """10,000 customers (the spec's second table), fewer when the orders table is tiny."""
        return min(MAX_CUSTOMERS, max(10, self.scale // 10))

    def sku_of(self, order_id: int) -> str:
        return f"sku-{(order_id * _SKU_MULTIPLIER) % 2**32:010d}"

    def rng(self, purpose: str, part: int = 0) -> random.Random:
        """A generator private to one purpose (a chunk of rows, a workload's keys)."""
        return random.Random(f"{self.seed}/{purpose}/{part}")

    def customer_chunks(self) -> Iterator[list[tuple]]:
        for start in range(1, self.customers + 1, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, self.customers + 1)
            rng = self.rng("customers", start)
            yield [
                (i, f"customer {i}", f"region-{rng.randrange(20):02d}", 1 + rng.randrange(3))
                for i in range(start, stop)
            ]

    def order_chunks(self) -> Iterator[list[tuple]]:
        for start in range(1, self.scale + 1, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, self.scale + 1)
            rng = self.rng("orders", start)
            yield [self._order_row(i, rng) for i in range(start, stop)]

    def _order_row(self, order_id: int, rng: random.Random) -> tuple:
        return (
            order_id,
            1 + rng.randrange(self.customers),
            self.sku_of(order_id),
            1 + rng.randrange(20),
            rng.randrange(100, 100_000),
            rng.choice(STATUSES),
        )


def scattered_keys(n: int, start: int, count: int) -> list[int]:
    """``count`` distinct keys in ``1..n`` spread over the range, continuing from position ``start``.

    Positions ``0..n-1`` map to keys by a stride coprime to ``n``, so consecutive calls with
    ``start`` advancing by ``count`` never repeat a key until all ``n`` are used -- the delete
    workload relies on that to delete each key once across repetitions.
    """
    stride = 1_000_003
    while math.gcd(stride, n) != 1:
        stride += 2
    return [1 + ((start + j) * stride) % n for j in range(count)]

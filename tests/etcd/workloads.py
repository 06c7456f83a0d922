"""Client programs for the multi-process etcd tests (run in separate processes: importable)."""

from __future__ import annotations

import os
import random
import time

import sqlkv
from sqlkv.errors import IntegrityError, OperationalError, SerializationFailure


RETRIES = [0]  # SerializationFailures retried in this process (reported, never asserted on)


def in_txn(conn, fn, attempts: int = 200):
    """Run ``fn(cursor)`` and commit, retrying SerializationFailure (40001) with jittered backoff."""
    for attempt in range(attempts):
        RETRIES[0] += attempt > 0
        cur = conn.cursor()
        try:
            result = fn(cur)
            conn.commit()
            return result
        except SerializationFailure:
            conn.rollback()
            time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))
    raise AssertionError(f"no commit after {attempts} attempts")


def bank_worker(url: str, worker: int, transfers: int, accounts: int, seed: int, start=None) -> dict:
    """Random transfers; returns the ids of the acknowledged ones (and the unknown outcomes)."""
    rng = random.Random(seed)
    conn = sqlkv.connect(url)
    if start is not None:
        start.wait()
    acked, unknown = [], []
    for i in range(transfers):
        src, dst = rng.sample(range(accounts), 2)
        amount = rng.randint(1, 30)
        tid = f"w{worker}-{i}"

        def transfer(cur, src=src, dst=dst, amount=amount, tid=tid):
            cur.execute("SELECT balance FROM accounts WHERE id = ?", (src,))
            (balance,) = cur.fetchone()
            if balance < amount:
                return False
            cur.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, src))
            cur.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, dst))
            cur.execute("INSERT INTO ledger VALUES (?, ?, ?, ?)", (tid, src, dst, amount))
            return True

        try:
            if in_txn(conn, transfer):
                acked.append(tid)
        except OperationalError as exc:
            if "outcome unknown" not in str(exc):
                raise
            unknown.append(tid)
            conn.rollback()
    conn.close()
    return {"acked": acked, "unknown": unknown, "retries": RETRIES[0]}


def doctor_worker(url: str, doctor: int, shifts: int, start=None) -> int:
    """Write skew: go off call in each shift if someone else is still on call."""
    conn = sqlkv.connect(url)
    if start is not None:
        start.wait()
    went_off = 0
    for shift in range(shifts):

        def off(cur, shift=shift):
            cur.execute("SELECT count(*) FROM doctors WHERE shift = ? AND on_call", (shift,))
            (count,) = cur.fetchone()
            if count < 2:
                return 0
            cur.execute("UPDATE doctors SET on_call = false WHERE shift = ? AND id = ?", (shift, doctor))
            return 1

        went_off += in_txn(conn, off)
    conn.close()
    return went_off


def booking_worker(url: str, worker: int, attempts: int, rooms: int, capacity: int, start=None) -> int:
    """Phantom: book a room only while the count of its bookings is below capacity."""
    conn = sqlkv.connect(url)
    if start is not None:
        start.wait()
    booked = 0
    for i in range(attempts):
        room = i % rooms

        def book(cur, room=room, i=i):
            cur.execute("SELECT count(*) FROM bookings WHERE room = ?", (room,))
            (count,) = cur.fetchone()
            if count >= capacity:
                return 0
            cur.execute("INSERT INTO bookings VALUES (?, ?)", (f"w{worker}-{i}", room))
            return 1

        booked += in_txn(conn, book)
    conn.close()
    return booked


def unique_worker(url: str, worker: int, emails: int, start=None) -> list[str]:
    """Unique race: every worker inserts the same emails; returns 'ok' / 'dup' per email."""
    conn = sqlkv.connect(url)
    if start is not None:
        start.wait()
    outcomes = []
    for e in range(emails):

        def insert(cur, e=e):
            cur.execute("INSERT INTO users VALUES (?, ?)", (worker * 1000 + e, f"e{e}@x"))

        try:
            in_txn(conn, insert)
            outcomes.append("ok")
        except IntegrityError as exc:
            assert "users_email_key" in str(exc) or "unique" in str(exc), exc
            conn.rollback()
            outcomes.append("dup")
    conn.close()
    return outcomes


def ddl_worker(url: str, worker: int, tables: int, rows: int, start=None) -> list[tuple[str, int]]:
    """Concurrent CREATE TABLE (descriptor ids) and auto-assigned row ids in a shared table."""
    conn = sqlkv.connect(url)
    if start is not None:
        start.wait()
    for t in range(tables):
        name = f"t_{worker}_{t}"
        in_txn(conn, lambda cur, name=name: cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, owner TEXT)"))
        in_txn(conn, lambda cur, name=name: cur.execute(f"INSERT INTO {name} VALUES (1, '{name}')"))
    ids = []
    for r in range(rows):

        def add(cur, r=r):
            table = "shared" if r % 2 else "shared_serial"
            cur.execute(f"INSERT INTO {table} (who) VALUES (?) RETURNING id", (f"{worker}-{r}",))
            return table, cur.fetchone()[0]

        ids.append(in_txn(conn, add))
    conn.close()
    return ids


def pid() -> int:
    return os.getpid()

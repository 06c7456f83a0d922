"""Serializability checked two ways: an exact oracle over random interleavings, and threads.

The oracle: run 2-3 transactions interleaved op by op, recording everything each one observed.
The transactions that committed must be equivalent to running them one after another -- writers
in commit order, transactions that wrote nothing at their snapshot: replaying them serially on a
dict must reproduce every observation and the final state.

The threads: concurrent bank transfers with retries keep the total constant and lose none of
the transfers they report as committed, while read-only auditors always see the right total.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.errors import ConditionFailedError, SerializationFailure
from sqlkv.storage.memory import MemoryEngine
from sqlkv.txn import Transaction, TxnManager

KEYS = [b"k0", b"k1", b"k2", b"k3", b"k4"]
KEY = st.sampled_from(KEYS)

TXN_OP = st.one_of(
    st.tuples(st.just("get"), KEY),
    st.tuples(st.just("get_many"), st.lists(KEY, max_size=4)),
    st.tuples(st.just("read_range"), KEY, st.sampled_from(KEYS + [None]), st.booleans(), st.none() | st.integers(1, 3)),
    st.tuples(st.just("scan"), KEY, st.sampled_from(KEYS + [None]), st.booleans(), st.none() | st.integers(1, 3)),
    st.tuples(st.just("put"), KEY),
    st.tuples(st.just("delete"), KEY),
    st.tuples(st.just("put_if_absent"), KEY),
    st.tuples(st.just("delete_range"), KEY, KEY),
    st.just(("savepoint",)),
    st.just(("rollback_to_last",)),
)


class DictTxn:
    """The serial replay: the same ops on a plain dict."""

    def __init__(self, state: dict[bytes, bytes]) -> None:
        self.state = state
        self.saved: list[dict[bytes, bytes]] = []

    def savepoint(self) -> dict[bytes, bytes]:
        self.saved.append(dict(self.state))
        return self.saved[-1]

    def rollback_to(self, saved: dict[bytes, bytes]) -> None:
        self.state.clear()
        self.state.update(saved)

    def get(self, key: bytes) -> bytes | None:
        return self.state.get(key)

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        return [self.state.get(key) for key in keys]

    def scan(self, start, end, reverse=False, limit=None) -> Iterator[tuple[bytes, bytes]]:
        keys = sorted((k for k in self.state if k >= start and (end is None or k < end)), reverse=reverse)
        return iter([(k, self.state[k]) for k in keys][:limit])

    def put(self, key: bytes, value: bytes) -> None:
        self.state[key] = value

    def delete(self, key: bytes) -> None:
        self.state.pop(key, None)

    def put_if_absent(self, key: bytes, value: bytes) -> None:
        if key in self.state:
            raise ConditionFailedError(key, self.state[key])
        self.state[key] = value

    def delete_range(self, start: bytes, end: bytes) -> None:
        for key in [k for k in self.state if start <= k < end]:
            del self.state[key]


def perform(txn: Transaction | DictTxn, op: tuple, value: bytes, savepoints: dict) -> object:
    """Run one op and return what it observed (the oracle compares these).

    ``savepoints`` maps id(txn) to that transaction's open savepoints, innermost last.
    """
    kind = op[0]
    if kind == "savepoint":
        savepoints.setdefault(id(txn), []).append(txn.savepoint())
        return None
    if kind == "rollback_to_last":
        stack = savepoints.get(id(txn))
        if stack:
            txn.rollback_to(stack[-1])  # the savepoint stays open
        return None
    if kind == "get":
        return txn.get(op[1])
    if kind == "get_many":  # one call: its keys join the read set like single gets
        return txn.get_many(op[1])
    if kind == "read_range":  # a scan read whole: its span joins the read set as a scan's does
        if isinstance(txn, DictTxn):
            return list(txn.scan(op[1], op[2], reverse=op[3], limit=op[4]))
        return txn.read_range(op[1], op[2], op[3], op[4])
    if kind == "scan":
        return list(txn.scan(op[1], op[2], reverse=op[3], limit=op[4]))
    if kind == "put":
        txn.put(op[1], value)
    elif kind == "delete":
        txn.delete(op[1])
    elif kind == "delete_range":
        txn.delete_range(op[1], op[2])
    else:
        try:
            txn.put_if_absent(op[1], value)
        except ConditionFailedError as exc:
            return ("exists", exc.actual)
    return None


@settings(max_examples=400, deadline=None)
@given(
    initial=st.dictionaries(KEY, st.binary(min_size=1, max_size=2), max_size=5),
    programs=st.lists(st.lists(TXN_OP, max_size=5), min_size=2, max_size=3),
    schedule=st.lists(st.integers(0, 2), max_size=40),
)
def test_committed_transactions_equal_a_serial_run_in_commit_order(initial, programs, schedule) -> None:
    engine = MemoryEngine()
    manager = TxnManager(engine)
    setup = manager.begin()
    for key, value in initial.items():
        setup.put(key, value)
    setup.commit()

    txns = [manager.begin() for _ in programs]
    steps = [0] * len(programs)  # ops done; len(program) means "commit next"
    observed: list[list[object]] = [[] for _ in programs]
    commit_order: list[int] = []
    outcome: dict[int, str] = {}
    choices = iter(schedule)
    savepoints: dict[int, list] = {}
    while len(outcome) < len(programs):
        pending = [i for i in range(len(programs)) if i not in outcome]
        i = pending[next(choices, 0) % len(pending)]
        program = programs[i]
        if steps[i] < len(program):
            value = b"t%d.%d" % (i, steps[i])
            observed[i].append(perform(txns[i], program[steps[i]], value, savepoints))
            steps[i] += 1
            continue
        try:
            seq = txns[i].commit()
        except SerializationFailure:
            outcome[i] = "aborted"
        else:
            outcome[i] = "committed"
            # A transaction that wrote nothing serialises at its snapshot, taken here before
            # any of the others committed; a writer serialises at its commit.
            if seq is None:
                commit_order.insert(0, i)
            else:
                commit_order.append(i)
        if len(outcome) == 1:
            assert outcome[i] == "committed"  # nothing committed since its snapshot: no conflict

    state = dict(initial)
    for i in commit_order:
        replay, replay_savepoints = DictTxn(state), {}
        replayed = [
            perform(replay, op, b"t%d.%d" % (i, j), replay_savepoints) for j, op in enumerate(programs[i])
        ]
        assert replayed == observed[i], f"txn {i} saw a state no serial order produces"
    assert dict(engine.scan(b"", None)) == state
    assert manager.stats()["active"] == 0


def _transfer(txn: Transaction, accounts: list[bytes], rng: random.Random) -> tuple[bytes, bytes, int]:
    src, dst = rng.sample(accounts, 2)
    amount = rng.randint(1, 20)
    time.sleep(0)  # give other threads a chance to commit in between: real contention
    txn.put(src, str(int(txn.get(src)) - amount).encode())
    txn.put(dst, str(int(txn.get(dst)) + amount).encode())
    return src, dst, amount


@pytest.mark.parametrize("threads,transfers", [(4, 150)])
def test_bank_transfers_from_threads(manager: TxnManager, threads: int, transfers: int) -> None:
    accounts = [b"acct/%d" % i for i in range(5)]
    setup = manager.begin()
    for account in accounts:
        setup.put(account, b"1000")
    setup.commit()
    total = 1000 * len(accounts)
    committed: list[list[tuple[bytes, bytes, int]]] = [[] for _ in range(threads)]
    retries = [0] * threads
    audits: list[int] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def worker(n: int) -> None:
        rng = random.Random(n)
        try:
            for _ in range(transfers):
                while True:
                    txn = manager.begin()
                    try:
                        move = _transfer(txn, accounts, rng)
                        txn.commit()
                    except SerializationFailure:
                        retries[n] += 1
                        continue
                    committed[n].append(move)
                    break
        except BaseException as exc:  # surfaced by the main thread
            errors.append(exc)

    def auditor() -> None:
        try:
            while not stop.is_set():
                txn = manager.begin(read_only=True)
                audits.append(sum(int(v) for _, v in txn.scan(b"acct/", b"acct0")))
                txn.commit()
        except BaseException as exc:
            errors.append(exc)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often so transactions really overlap
    try:
        pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
        audit_thread = threading.Thread(target=auditor)
        audit_thread.start()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        stop.set()
        audit_thread.join()
    finally:
        sys.setswitchinterval(old_interval)

    assert not errors, errors
    assert all(len(moves) == transfers for moves in committed)
    expected = {account: 1000 for account in accounts}
    for moves in committed:
        for src, dst, amount in moves:
            expected[src] -= amount
            expected[dst] += amount
    final = {k: int(v) for k, v in manager.begin().scan(b"acct/", b"acct0")}
    assert final == expected  # every committed transfer applied exactly once
    assert sum(final.values()) == total
    assert audits and all(seen == total for seen in audits)
    stats = manager.stats()
    assert stats["aborts"] == sum(retries)
    assert stats["commits"] == threads * transfers + 1
    assert stats["conflict_log_entries"] == 0  # nothing active any more: the log was pruned


def _run_threads(targets: list) -> None:
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=t) for t in targets]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old_interval)


@pytest.mark.parametrize("threads,attempts,capacity", [(4, 15, 20)])
def test_capacity_check_under_concurrent_inserts(
    manager: TxnManager, threads: int, attempts: int, capacity: int
) -> None:
    """Insert only while the range holds fewer than `capacity` rows: a phantom would overfill it."""
    inserted = [0] * threads
    errors: list[BaseException] = []

    def booker(n: int) -> None:
        try:
            for i in range(attempts):
                def book(txn: Transaction) -> bool:
                    taken = sum(1 for _ in txn.scan(b"slot/", b"slot0"))
                    time.sleep(0)
                    if taken >= capacity:
                        return False
                    txn.put(b"slot/%d-%d" % (n, i), b"x")
                    return True

                if manager.run(book, max_attempts=1000):
                    inserted[n] += 1
        except BaseException as exc:
            errors.append(exc)

    _run_threads([lambda n=n: booker(n) for n in range(threads)])
    assert not errors, errors
    rows = list(manager.begin().scan(b"slot/", b"slot0"))
    assert len(rows) == capacity == sum(inserted)


@pytest.mark.slow
def test_bank_soak(manager: TxnManager) -> None:
    test_bank_transfers_from_threads(manager, threads=8, transfers=1000)

"""Sequences: a descriptor in the catalog and a counter in the sequence system table.

``CREATE SEQUENCE s START 10 INCREMENT 5`` stores a `SequenceDescriptor` (id 105, say) like a
table's: ``/Table/1/1/"s"`` -> 105 and ``/Table/2/1/105`` -> the descriptor. Its counter lives
at ``/Table/3/1/105`` (the system table that also holds the descriptor-id counter) as msgpack
``[last value, called]``; absent means "never called" (the next value is START).

``nextval('s')`` advances the counter in a transaction of its own (`advance`): read the counter,
put the next value, commit -- a compare-and-swap, since the commit fails (SerializationFailure)
when another nextval changed the counter after the read, and the loop retries. The value is
returned only once that commit is durable, so no value is handed out twice, even across a crash
(kill -9); a crash can only leave a gap. As in PostgreSQL and CockroachDB, the counter does not
roll back with the caller's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgpack

from sqlkv.encoding.keys import encode_key, index_prefix
from sqlkv.errors import DataError, OperationalError, SerializationFailure

SEQUENCE_COUNTERS = index_prefix(3, 1)  # the sequence system table (catalog.SEQUENCE_TABLE_ID)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_RETRIES = 1000


@dataclass
class SequenceDescriptor:
    id: int
    name: str
    start: int = 1
    increment: int = 1
    minvalue: int = 1
    maxvalue: int = INT64_MAX
    cycle: bool = False
    owner: list[int] | None = None  # [table id, column id] of an identity column using it

    kind = "sequence"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "sequence", "id": self.id, "name": self.name, "start": self.start, "increment": self.increment,
                "min": self.minvalue, "max": self.maxvalue, "cycle": self.cycle, "owner": self.owner}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> SequenceDescriptor:
        return SequenceDescriptor(d["id"], d["name"], d["start"], d["increment"], d["min"], d["max"], d["cycle"],
                                  d.get("owner"))


def counter_key(seq_id: int) -> bytes:
    return SEQUENCE_COUNTERS + encode_key([seq_id])


def _following(desc: SequenceDescriptor, state: tuple[int, bool] | None) -> int:
    if state is None or not state[1]:
        return desc.start if state is None else state[0]
    nxt = state[0] + desc.increment
    if desc.minvalue <= nxt <= desc.maxvalue:
        return nxt
    if not desc.cycle:
        bound = "maximum" if desc.increment > 0 else "minimum"
        value = desc.maxvalue if desc.increment > 0 else desc.minvalue
        raise DataError(f'nextval: reached {bound} value of sequence "{desc.name}" ({value})')
    return desc.minvalue if desc.increment > 0 else desc.maxvalue


def _state(raw: bytes | None) -> tuple[int, bool] | None:
    if raw is None:
        return None
    value, called = msgpack.unpackb(raw)
    return int(value), bool(called)


def _swap(manager, desc: SequenceDescriptor, what: str, new_state) -> int:
    """Commit ``new_state(current state)`` -> (value, called) in a transaction of its own,
    retrying when a concurrent update of the counter makes the commit fail."""
    for _ in range(_RETRIES):
        txn = manager.begin()
        try:
            value, called = new_state(_state(txn.get(counter_key(desc.id))))
            txn.put(counter_key(desc.id), msgpack.packb([value, called]))
            txn.commit()
            return value
        except SerializationFailure:
            continue  # another call moved the counter since our read: read it again
        finally:
            if txn.active:
                txn.rollback()
    raise OperationalError(f'{what}: sequence "{desc.name}" is too contended (gave up after {_RETRIES} tries)')


def counter_state(reader, desc: SequenceDescriptor) -> tuple[int, bool] | None:
    """(last value, called) of the counter, None when nextval was never called."""
    return _state(reader.get(counter_key(desc.id)))


def create_sequence_sql(desc: SequenceDescriptor) -> str:
    """The options of ``desc`` as CREATE SEQUENCE / identity clauses (``START WITH 1 INCREMENT BY 1 ...``)."""
    text = f"START WITH {desc.start} INCREMENT BY {desc.increment} MINVALUE {desc.minvalue} MAXVALUE {desc.maxvalue}"
    return text + (" CYCLE" if desc.cycle else "")


def advance(manager, desc: SequenceDescriptor) -> int:
    """The sequence's next value, committed (durably) before it is returned."""
    return _swap(manager, desc, "nextval", lambda state: (_following(desc, state), True))


def assign(manager, desc: SequenceDescriptor, value: int, called: bool) -> int:
    """setval: the counter becomes ``value`` (the next nextval returns the value after it, or
    ``value`` itself when ``called`` is false); committed in its own transaction."""
    if not desc.minvalue <= value <= desc.maxvalue:
        raise DataError(f'setval: value {value} is out of bounds for sequence "{desc.name}" '
                        f"({desc.minvalue}..{desc.maxvalue})")
    return _swap(manager, desc, "setval", lambda _state: (value, called))

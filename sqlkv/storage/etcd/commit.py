"""Turning one WriteBatch into one etcd ``txn``: compares, merged writes, limits, unknown outcomes.

A commit of ``UPDATE accounts SET balance = balance - 10 WHERE id = 1`` whose transaction read
key ``k1`` and scanned ``[a, b)`` at snapshot revision ``R`` becomes::

    compare: mod_revision(P+k1) < R+1                  -- the point read is unchanged
             mod_revision([P+a, P+b)) < R+1            -- every key now in the span is older
                                                          than R, so none was put or tombstoned
                                                          (a phantom insert has a newer one)
             mod_revision(rangedel guard) < R+1        -- no physical range delete since R
             mod_revision(lane) == <lane's last rev>   -- see "unknown outcomes" below
    success: range(guard, revision=R)                  -- fails the whole txn if R was
                                                          compacted (tombstone GC relies on it)
             put(P+k1, b"v" + row)                     -- the writes, one op per key
             put(lane, nonce)
    failure: the same spans read back with min_mod_revision=R+1, to name the key that changed,
             and the lane, to tell a lane written by someone else from a member whose
             revisions diverged (grammar-notes/etcd.md, "Members that diverge")

etcd applies all or nothing, after evaluating the compares against the newest state -- the
validation and the write are one atomic step for every client of the cluster.

Conditions (``WriteBatch.expect``, used by direct engine users) read the key first and compare
its ``mod_revision`` to what was read (0 for an absent key: etcd's ``create_revision == 0``);
when only such a compare fails and the condition still holds, the commit is simply rebuilt.
A failed read compare is `SerializationFailure`; a condition that no longer holds is
`ConditionFailedError` (the SQL layer's unique and primary-key checks are point reads of the
snapshot, so a concurrent insert of the same key surfaces as SerializationFailure and the
retry reports the IntegrityError, as on the LSM engine).

Unknown outcomes: a txn whose answer is lost (timeout, the member died) may still be applied.
Each in-flight commit owns a *lane* key (``P+m/lane/<client>/<n>``) and compares its
mod_revision; to find out, the client "fences" the lane through any live member: a txn that
overwrites the lane only if it is unchanged. If the fence applies, the lost commit can never
apply (its lane compare now fails) and the commit is safely sent again; if the lane had changed,
the lost commit did apply, at the lane's mod_revision. Only when no member answers in time is
the caller told ``OperationalError: outcome unknown``.

Limits: etcd refuses a txn with more than ``--max-txn-ops`` (default 128) compares or ops, and
a request over ``--max-request-bytes`` (1.5 MiB). Read spans beyond the compare budget are
coalesced into wider ranges (conservative: a wider span can only add conflicts); writes
cannot shrink, so a batch over a limit fails before it is sent with an OperationalError naming
the limit (nothing is written). Splitting into staged writes plus a commit record would need
every reader to resolve intents; raising the cluster's limits is the supported way.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from bisect import bisect_left
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlkv.errors import ConditionFailedError, OperationalError, SerializationFailure
from sqlkv.storage.etcd.client import EtcdRequestError, OutcomeUnknown, b64, revision_of, unb64
from sqlkv.storage.kv import OP_DELETE, OP_DELETE_RANGE, OP_PUT, WriteBatch

if TYPE_CHECKING:
    from sqlkv.storage.etcd.engine import EtcdEngine

LIVE = b"v"
TOMBSTONE = b""
_MAX_REBUILDS = 20


class CommitOutcomeUnknown(OperationalError):
    """A commit was sent, its answer lost, and no member could say whether it applied.

    SQLSTATE 40003 (PostgreSQL's statement_completion_unknown, CockroachDB's "result is
    ambiguous"): not a SerializationFailure, so retry loops do not blindly run it again.
    """

    sqlstate = "40003"
    code_in_message = True


class LaneChanged(OperationalError):
    """A commit's lane holds a value another process wrote (lanes are per client); the member's
    answer is definite: the commit was not applied."""


@dataclass
class CommitLimits:
    """The cluster's limits, as configured on its members (etcd's defaults)."""

    max_txn_ops: int = 128
    max_request_bytes: int = 1536 * 1024


@dataclass
class _Lane:
    index: int
    mod: int = 0  # the lane key's mod_revision after our last commit on it (0: absent)
    value: str = ""  # what that commit (or fence) wrote there, base64 ("": absent)


@dataclass
class _Plan:
    compares: list[dict[str, Any]]
    success: list[dict[str, Any]]
    failure: list[dict[str, Any]]
    spans: list[tuple[bytes, bytes | None]]  # the read spans compared, in compare order
    conditions: list[tuple[bytes, bytes | None, int]]  # key, expected, mod_revision read
    read_seq: int | None


class Committer:
    def __init__(self, engine: EtcdEngine, limits: CommitLimits) -> None:
        self.engine = engine
        self.limits = limits
        self._lanes: list[_Lane] = []
        self._lane_lock = threading.Lock()
        self._next_lane = 0
        self.commits = 0
        self.conflicts = 0
        self.unknown_resolved = 0
        self.tombstones_purged = 0

    # -- keys -------------------------------------------------------------------------------

    def _data(self, key: bytes) -> bytes:
        return self.engine.data_prefix + key

    def _data_end(self, end: bytes | None) -> bytes:
        return self.engine.data_prefix + end if end is not None else self.engine.data_end

    def _lane_key(self, lane: _Lane) -> bytes:
        return self.engine.meta_prefix + b"lane/" + self.engine.client_id.encode() + b"/%d" % lane.index

    @property
    def _guard_key(self) -> bytes:
        return self.engine.meta_prefix + b"rangedel"

    # -- commit -----------------------------------------------------------------------------

    def commit(self, batch: WriteBatch) -> int:
        puts, ranges = merge_ops(batch)
        lane = self._take_lane()
        try:
            for _ in range(_MAX_REBUILDS):
                plan = self._plan(batch, puts, ranges, lane)
                rev = self._send(plan, lane)
                if rev is not None:
                    self.commits += 1
                    return rev
            raise SerializationFailure(
                f"restart transaction: its conditions kept changing under {_MAX_REBUILDS} "
                "attempts (SQLSTATE 40001)"
            )
        except (CommitOutcomeUnknown, LaneChanged):
            lane = None  # its state is unknown: never reuse it
            raise
        finally:
            if lane is not None:
                self._give_lane(lane)

    def _plan(
        self,
        batch: WriteBatch,
        puts: dict[bytes, bytes],
        ranges: list[tuple[bytes, bytes]],
        lane: _Lane,
    ) -> _Plan:
        compares: list[dict[str, Any]] = []
        success: list[dict[str, Any]] = []
        failure: list[dict[str, Any]] = []
        size = 0
        conditions = []
        for key, expected in batch.conditions:
            value, mod = self._read_latest(key)
            actual = value[1:] if value else None
            if actual != expected:
                raise ConditionFailedError(key, actual)
            conditions.append((key, expected, mod))
            compares.append({"target": "MOD", "result": "EQUAL", "key": b64(self._data(key)), "mod_revision": mod})
            failure.append({"request_range": {"key": b64(self._data(key))}})
            size += len(key) + 16
        spans: list[tuple[bytes, bytes | None]] = []
        if batch.read_seq is not None:
            below = batch.read_seq + 1
            budget = self.limits.max_txn_ops - len(compares) - 2  # the guard and the lane
            spans = coalesce(batch.read_points, batch.read_ranges, max(1, budget))
            for start, end in spans:
                compares.append(
                    {"target": "MOD", "result": "LESS", "key": b64(self._data(start)),
                     "range_end": b64(self._data_end(end)), "mod_revision": below}
                )
                failure.append({"request_range": {
                    "key": b64(self._data(start)), "range_end": b64(self._data_end(end)),
                    "min_mod_revision": below, "keys_only": True, "limit": 1}})
                size += len(start) + len(end or b"") + 16
            guard = b64(self._guard_key)
            compares.append({"target": "MOD", "result": "LESS", "key": guard, "mod_revision": below})
            failure.append({"request_range": {"key": guard, "keys_only": True}})
            # a read at the snapshot revision fails the whole txn if etcd compacted it away
            success.append({"request_range": {"key": guard, "revision": batch.read_seq, "keys_only": True}})
        lane_key = b64(self._lane_key(lane))
        compares.append({"target": "MOD", "result": "EQUAL", "key": lane_key, "mod_revision": lane.mod})
        failure.append({"request_range": {"key": lane_key}})  # read back last: see _lane_changed
        success.append({"request_put": {"key": lane_key, "value": self._lane_value()}})
        for start, end in ranges:
            success.append({"request_delete_range": {"key": b64(self._data(start)), "range_end": b64(self._data(end))}})
            size += len(start) + len(end)
        if ranges:
            success.append({"request_put": {"key": b64(self._guard_key), "value": b64(b"1")}})
        for key, stored in puts.items():
            success.append({"request_put": {"key": b64(self._data(key)), "value": b64(stored)}})
            size += len(key) + len(stored) + 8
        self._check_limits(len(compares), len(success), size)
        return _Plan(compares, success, failure, spans, conditions, batch.read_seq)

    def _check_limits(self, n_compares: int, n_ops: int, size: int) -> None:
        limit = self.limits.max_txn_ops
        if n_ops > limit or n_compares > limit:
            raise OperationalError(
                f"transaction too large for etcd: {n_ops} operations in one etcd txn exceed the "
                f"cluster's max-txn-ops limit of {limit} (etcd --max-txn-ops; tell sqlkv with "
                "?max_txn_ops=N in the etcd:// URL); nothing was written -- commit in smaller "
                "transactions"
            )
        if size > self.limits.max_request_bytes:
            raise OperationalError(
                f"transaction too large for etcd: about {size} bytes in one etcd txn exceed the "
                f"cluster's max-request-bytes limit of {self.limits.max_request_bytes} (etcd "
                "--max-request-bytes; ?max_request_bytes=N in the URL); nothing was written"
            )

    def _send(self, plan: _Plan, lane: _Lane) -> int | None:
        """Run the txn; the new revision, or None when a condition's compare failed but it holds."""
        body = {"compare": plan.compares, "success": plan.success, "failure": plan.failure}
        try:
            answer = self.engine.client.call("kv/txn", body, idempotent=False)
        except OutcomeUnknown as exc:
            return self._resolve_unknown(lane, plan, str(exc))
        except EtcdRequestError as exc:
            raise _limit_error(exc) from None
        rev = revision_of(answer)
        if answer.get("succeeded"):
            lane.mod, lane.value = rev, _lane_nonce(plan, self._lane_key(lane))
            return rev
        return self._diagnose(plan, answer.get("responses") or [], rev, lane)

    def _diagnose(self, plan: _Plan, responses: list[dict[str, Any]], rev: int, lane: _Lane) -> None:
        """Why the compares failed: a condition (rebuild or ConditionFailedError) or a read."""
        results = [r.get("response_range", {}) for r in responses]
        rebuild = False
        for (key, expected, mod), result in zip(plan.conditions, results):
            kvs = result.get("kvs") or ()
            now_mod = int(kvs[0].get("mod_revision", 0)) if kvs else 0
            if now_mod == mod:
                continue
            value = unb64(kvs[0].get("value")) if kvs else TOMBSTONE
            actual = value[1:] if value else None
            if actual != expected:
                raise ConditionFailedError(key, actual)
            rebuild = True
        if plan.read_seq is not None:
            span_results = results[len(plan.conditions):]
            for (start, end), result in zip(plan.spans, span_results):
                kvs = result.get("kvs") or ()
                if kvs:
                    witness = unb64(kvs[0].get("key"))[len(self.engine.data_prefix):]
                    self._conflict(f"read of key {_show(witness)} conflicts with a write", plan.read_seq, rev,
                                   witness)
            guard = (span_results[len(plan.spans)] if len(span_results) > len(plan.spans) else {}).get("kvs") or ()
            if guard and int(guard[0].get("mod_revision", 0)) > plan.read_seq:
                what = "a range delete (DROP/TRUNCATE/DROP INDEX, or a tombstone purge)"
                self._conflict(what, plan.read_seq, rev)
        if rebuild:
            return None
        raise self._lane_changed(lane, results[-1] if results else {}, rev)

    def _lane_changed(self, lane: _Lane, result: dict[str, Any], rev: int) -> OperationalError:
        """The error for a commit whose only failed compare was its lane's (``result``: the
        lane read back by the failure branch, at revision ``rev``).

        Only this client writes its lanes and it records the mod_revision each of its writes
        got, so in a healthy cluster this cannot happen. A lane holding a write of ours (every
        value names the client) that is not the last one acknowledged, or at another
        mod_revision, means the member that answered disagrees with the members that
        acknowledged: its data diverged (etcd 3.5.0-3.5.2 after a crash), it fails compares the
        others pass, and they may have applied this commit -- outcome unknown. So does a lane
        missing there (deleted, or never applied by that member). Only a value of someone
        else's is a sure answer: another process wrote the lane; nothing was applied.
        """
        kvs = result.get("kvs") or ()
        value = kvs[0].get("value", "") if kvs else ""
        mod = int(kvs[0].get("mod_revision", 0)) if kvs else 0
        if kvs and not self._ours(value):
            return LaneChanged(
                f"etcd: this client's commit lane was overwritten at revision {mod}, expected as "
                f"written at revision {lane.mod}: another process wrote it (lanes are per client "
                "and must not be touched); the transaction was not applied"
            )
        if kvs:
            held = "its last write" if value == lane.value else "an earlier write of this client"
            what = f"holds this client's commit lane at revision {mod} with {held}"
        else:
            what = "has no commit lane of this client (another process deleted it, or the member lost it)"
        return CommitOutcomeUnknown(
            f"etcd commit outcome unknown: the member that answered {what}, but the cluster "
            f"acknowledged this client's last write to that lane at revision {lane.mod}: that "
            "member disagrees with the members that acknowledged it (its data diverged; etcd "
            "3.5.0-3.5.2 can lose a write on a member killed under load, etcd issue 13766 -- "
            f"upgrade etcd to 3.5.3 or later and replace that member); it refused the commit at "
            f"its revision {rev}, other members may have applied it"
        )

    def _lane_value(self) -> str:
        """A new value for a lane (base64): the client's id, so any member can tell it is ours,
        and a nonce, so a lost commit can be recognised."""
        return b64(self.engine.client_id.encode() + b"/" + uuid.uuid4().bytes)

    def _ours(self, value: str) -> bool:
        return unb64(value).startswith(self.engine.client_id.encode() + b"/")

    def _conflict(self, what: str, read_seq: int, rev: int, witness: bytes | None = None) -> None:
        self.conflicts += 1
        exc = SerializationFailure(
            f"restart transaction: {what} committed by another client after this transaction's "
            f"snapshot at etcd revision {read_seq} (now {rev}) (SQLSTATE 40001)"
        )
        # for sqlkv_internal.transactions: the key both sides touched (None: the range-delete
        # guard) and the revision etcd answered at (the conflicting write is at or below it)
        exc.conflict_key, exc.conflict_seq = witness, rev
        raise exc

    # -- unknown outcomes -----------------------------------------------------------------

    def _resolve_unknown(self, lane: _Lane, plan: _Plan, why: str) -> int | None:
        lane_key = b64(self._lane_key(lane))
        sent_nonce = _lane_nonce(plan, self._lane_key(lane))
        fences: set[str] = set()
        give_up = time.monotonic() + self.engine.client.deadline
        while True:
            if time.monotonic() > give_up:
                raise CommitOutcomeUnknown(
                    f"etcd commit outcome unknown: the commit was sent but its answer was lost "
                    f"({why}) and no member settled it within {self.engine.client.deadline:g}s; "
                    "the transaction may or may not have been applied"
                )
            fence = self._lane_value()
            fences.add(fence)
            body = {
                "compare": [{"target": "MOD", "result": "EQUAL", "key": lane_key, "mod_revision": lane.mod}],
                "success": [{"request_put": {"key": lane_key, "value": fence}}],
                "failure": [{"request_range": {"key": lane_key}}],
            }
            try:
                answer = self.engine.client.call("kv/txn", body, idempotent=False)
            except OutcomeUnknown:
                time.sleep(0.05)
                continue  # the fence's own answer was lost: fence again (compare decides)
            except OperationalError as exc:
                raise CommitOutcomeUnknown(
                    f"etcd commit outcome unknown: the commit was sent but its answer was lost "
                    f"({why}) and no member could confirm it ({exc}); the transaction may or "
                    "may not have been applied"
                ) from None
            self.unknown_resolved += 1
            if answer.get("succeeded"):
                lane.mod, lane.value = revision_of(answer), fence
                return self._retry_marker()  # fenced: the lost commit can never apply
            kvs = (answer.get("responses") or [{}])[0].get("response_range", {}).get("kvs") or ()
            value = kvs[0].get("value", "") if kvs else ""
            mod = int(kvs[0].get("mod_revision", 0)) if kvs else 0
            lane.mod, lane.value = mod, value
            if value == sent_nonce:
                return mod  # the lost commit applied, at this revision
            if value in fences:
                return self._retry_marker()  # an earlier fence of ours landed
            raise CommitOutcomeUnknown(
                f"etcd commit outcome unknown: the commit was sent but its answer was lost ({why}), "
                "and its lane now holds neither it nor a fence of this client (another process "
                "wrote the lane, or the member that answered diverged from the cluster)"
            )

    def _retry_marker(self) -> None:
        return None  # the caller rebuilds and resends the commit

    # -- lanes ------------------------------------------------------------------------------

    def _take_lane(self) -> _Lane:
        with self._lane_lock:
            if self._lanes:
                return self._lanes.pop()
            self._next_lane += 1
            return _Lane(self._next_lane)

    def _give_lane(self, lane: _Lane) -> None:
        with self._lane_lock:
            self._lanes.append(lane)

    def release_lanes(self) -> None:
        """Delete this client's idle lane keys (best effort: they are a few bytes each).

        A lane whose commit ended "outcome unknown" is not idle and stays: deleting it would
        bring back the mod_revision that commit compares, letting it apply after all.
        """
        with self._lane_lock:
            lanes, self._lanes = self._lanes, []
        keys = [b64(self._lane_key(lane)) for lane in lanes]
        step = max(1, self.limits.max_txn_ops)
        try:
            for i in range(0, len(keys), step):
                ops = [{"request_delete_range": {"key": key}} for key in keys[i : i + step]]
                self.engine.client.call("kv/txn", {"success": ops}, idempotent=True)
        except OperationalError:
            pass

    def _read_latest(self, key: bytes) -> tuple[bytes, int]:
        answer = self.engine.client.call("kv/range", {"key": b64(self._data(key))})
        kvs = answer.get("kvs") or ()
        if not kvs:
            return TOMBSTONE, 0
        return unb64(kvs[0].get("value")), int(kvs[0].get("mod_revision", 0))

    # -- compaction -------------------------------------------------------------------------

    def compact_and_purge(self, rev: int) -> None:
        try:
            self.engine.client.call("kv/compaction", {"revision": rev, "physical": True})
        except SerializationFailure:
            pass  # already compacted at or past ``rev``
        engine = self.engine
        body: dict[str, Any] = {"key": b64(engine.data_prefix), "range_end": b64(engine.data_end),
                                "revision": rev, "limit": 1000}
        chunk = max(1, self.limits.max_txn_ops - 1)
        while True:
            answer = engine.client.call("kv/range", body)
            kvs = answer.get("kvs") or []
            dead = [(kv["key"], int(kv.get("mod_revision", 0))) for kv in kvs if not kv.get("value")]
            for i in range(0, len(dead), chunk):
                part = dead[i : i + chunk]
                # Purged tombstones vanish without a newer revision, like a range delete's keys:
                # bump the same guard, so `changed_since` (the schema caches of other clients)
                # still sees that something changed -- e.g. a DROP VIEW's deleted descriptor.
                txn = {
                    "compare": [{"target": "MOD", "result": "EQUAL", "key": k, "mod_revision": m} for k, m in part],
                    "success": [{"request_delete_range": {"key": k}} for k, _ in part]
                    + [{"request_put": {"key": b64(self._guard_key), "value": b64(b"1")}}],
                }
                if engine.client.call("kv/txn", txn, idempotent=True).get("succeeded"):
                    self.tombstones_purged += len(part)
            if not answer.get("more") or not kvs:
                return
            body["key"] = b64(unb64(kvs[-1]["key"]) + b"\x00")

    def stats(self) -> dict[str, Any]:
        return {
            "commits": self.commits,
            "commit_conflicts": self.conflicts,
            "unknown_outcomes_resolved": self.unknown_resolved,
            "tombstones_purged": self.tombstones_purged,
        }


def _lane_nonce(plan: _Plan, lane_key: bytes) -> str:
    """The value ``plan`` writes to its lane (base64): how a later read recognises the commit."""
    key = b64(lane_key)
    return next(op["request_put"]["value"] for op in plan.success
                if "request_put" in op and op["request_put"]["key"] == key)


def merge_ops(batch: WriteBatch) -> tuple[dict[bytes, bytes], list[tuple[bytes, bytes]]]:
    """The batch as one stored value per key plus disjoint range deletes none of them overlap.

    etcd refuses a txn touching a key twice, or a put inside a range it deletes. Later ops win:
    a put after a range delete splits the range around it; a point delete becomes a tombstone
    put unless a range delete covers it (the range's guard tells readers then).
    """
    puts: dict[bytes, bytes] = {}
    ranges: list[tuple[bytes, bytes]] = []
    for op, a, b in batch.ops:
        if op == OP_PUT:
            puts[a] = LIVE + b  # type: ignore[operator]
        elif op == OP_DELETE:
            puts[a] = TOMBSTONE
        elif op == OP_DELETE_RANGE:
            assert b is not None
            if b <= a:
                continue
            for key in [k for k in puts if a <= k < b]:
                del puts[key]
            ranges.append((a, b))
        else:
            raise ValueError(f"unknown batch op {op}")
    if not ranges:
        return puts, []
    merged = _merge_spans([(a, b) for a, b in ranges])
    starts = [s for s, _ in merged]
    kept_puts: dict[bytes, bytes] = {}
    inside: dict[int, list[bytes]] = {}
    for key, stored in puts.items():
        i = bisect_left(starts, key + b"\x00") - 1
        if i >= 0 and merged[i][0] <= key < merged[i][1]:  # type: ignore[operator]
            if stored == TOMBSTONE:
                continue  # the range delete removes it anyway
            inside.setdefault(i, []).append(key)
        kept_puts[key] = stored
    split: list[tuple[bytes, bytes]] = []
    for i, (start, end) in enumerate(merged):
        lo = start
        for key in sorted(inside.get(i, ())):
            if lo < key:
                split.append((lo, key))
            lo = key + b"\x00"
        if end is not None and lo < end:
            split.append((lo, end))
    return kept_puts, split


def _merge_spans(spans: list[tuple[bytes, bytes | None]]) -> list[tuple[bytes, bytes | None]]:
    out: list[tuple[bytes, bytes | None]] = []
    for start, end in sorted(spans, key=lambda s: s[0]):
        if out and (out[-1][1] is None or start <= out[-1][1]):
            prev_end = out[-1][1]
            if prev_end is not None and (end is None or end > prev_end):
                out[-1] = (out[-1][0], end)
            continue
        out.append((start, end))
    return out


def coalesce(
    points: list[bytes], ranges: list[tuple[bytes, bytes | None]], budget: int
) -> list[tuple[bytes, bytes | None]]:
    """Read spans as at most ``budget`` sorted disjoint ranges (wider ones when over budget)."""
    spans = _merge_spans([(k, k + b"\x00") for k in points] + list(ranges))
    if len(spans) <= budget:
        return spans
    per = math.ceil(len(spans) / budget)
    out: list[tuple[bytes, bytes | None]] = []
    for i in range(0, len(spans), per):
        group = spans[i : i + per]
        out.append((group[0][0], group[-1][1]))  # disjoint and sorted: the last end is the max
    return out


def _limit_error(exc: EtcdRequestError) -> OperationalError:
    text = str(exc)
    if "too many operations" in text:
        return OperationalError(
            f"transaction too large for etcd: the cluster's max-txn-ops limit is lower than sqlkv "
            f"was told ({text}); nothing was written"
        )
    if "request is too large" in text:
        return OperationalError(
            f"transaction too large for etcd: over the cluster's max-request-bytes limit ({text}); "
            "nothing was written"
        )
    return exc


def _show(key: bytes, limit: int = 48) -> str:
    text = repr(key)
    return text if len(text) <= limit else text[: limit - 3] + "..."

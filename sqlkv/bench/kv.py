"""``sqlkv bench kv``: the LSM engine against sqlite3 used as a key-value store.

Each engine runs the same phases over ``--keys`` keys (16 bytes) with ~100-byte values:
sequential batched puts (1000 per batch), random-order batched overwrites, random point gets of
present keys (data in tables after a flush, block cache warm), gets of absent keys, 1000-key
scans from random starting points, reopen time, and space amplification after every key has
been written 3 more times and the store compacted. sqlite3 runs as ``CREATE TABLE kv(k BLOB
PRIMARY KEY, v BLOB) WITHOUT ROWID`` in WAL mode with the matching ``synchronous`` level;
RocksDB (via ``rocksdict``) joins when that package is importable.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlkv.cli.progress import ticker
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm

BATCH = 1000
SCAN_LENGTH = 1000
SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL", "off": "OFF"}


@dataclass
class Result:
    name: str
    times: dict[str, float] = field(default_factory=dict)  # phase -> seconds per unit
    units: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    final_stats: dict | None = None  # the LSM engine's stats() before its last close


def key_of(i: int) -> bytes:
    return b"key%013d" % i


class Workload:
    def __init__(self, n: int, seed: int = 42) -> None:
        rng = random.Random(seed)
        self.n = n
        self.pool = [rng.randbytes(100) for _ in range(997)]
        self.random_order = list(range(n))
        rng.shuffle(self.random_order)
        lookups = min(n, 100_000)
        self.get_keys = [key_of(rng.randrange(n)) for _ in range(lookups)]
        self.missing_keys = [b"kez%013d" % rng.randrange(n) for _ in range(lookups)]
        self.scan_starts = [key_of(rng.randrange(max(1, n - SCAN_LENGTH))) for _ in range(200)]

    def value(self, i: int, round_: int) -> bytes:
        return self.pool[(i * 7 + round_) % len(self.pool)]

    def batches(self, order: list[int], round_: int):
        for start in range(0, len(order), BATCH):
            yield [(key_of(i), self.value(i, round_)) for i in order[start:start + BATCH]]


class LSMTarget:
    name = "sqlkv-lsm"

    def __init__(self, path: str, durability: str, cache_bytes: int, workers: bool = True) -> None:
        self.path, self.durability, self.cache_bytes = path, durability, cache_bytes
        self.directory = path
        self.workers = workers
        self.engine = open_lsm(path, durability=durability, cache_size=cache_bytes,
                               background_processes=workers)

    def ingest(self, pairs) -> None:
        self.engine.ingest(pairs)

    def put_batch(self, pairs: list[tuple[bytes, bytes]]) -> None:
        batch = WriteBatch()
        for k, v in pairs:
            batch.put(k, v)
        self.engine.write(batch)

    def get(self, key: bytes) -> bytes | None:
        return self.engine.get(key)

    def scan(self, start: bytes, n: int) -> int:
        return len(list(self.engine.scan(start, None, limit=n)))

    def delete_range(self, start: bytes, end: bytes) -> None:
        batch = WriteBatch()
        batch.delete_range(start, end)
        self.engine.write(batch)

    def settle(self) -> None:
        """Flush, then wait until background compaction has nothing left to do."""
        self.engine.flush()
        deadline = time.time() + 600
        last_count = -1
        while time.time() < deadline:
            stats = self.engine.stats()
            idle = stats["pending_compaction_bytes"] == 0 and stats["immutable_memtables"] == 0
            if idle and stats["compactions"] == last_count:
                return
            last_count = stats["compactions"]
            time.sleep(0.5)

    def compact(self) -> None:
        self.engine.compact()

    def reopen(self) -> None:
        self.engine.close()
        self.engine = open_lsm(self.path, durability=self.durability, cache_size=self.cache_bytes,
                               background_processes=self.workers)

    def close(self) -> None:
        self.engine.close()

    def describe(self) -> str:
        stats = self.engine.stats()
        levels = " ".join(f"L{lv['level']}:{lv['files']}" for lv in stats["levels"] if lv["files"])
        return (f"levels {levels}; write amp {stats['write_amplification']}; "
                f"read amp {stats['read_amplification']}; cache hit rate {stats['block_cache']['hit_rate']}")


class SqliteTarget:
    name = "sqlite3"

    def __init__(self, path: str, durability: str, cache_bytes: int) -> None:
        self.file = os.path.join(path, "kv.sqlite")
        self.directory = path
        os.makedirs(path, exist_ok=True)
        self.durability, self.cache_bytes = durability, cache_bytes
        self._connect()
        self.db.execute("CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID")

    def _connect(self) -> None:
        self.db = sqlite3.connect(self.file, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"PRAGMA synchronous={SYNCHRONOUS[self.durability]}")
        self.db.execute(f"PRAGMA cache_size=-{self.cache_bytes // 1024}")

    def put_batch(self, pairs: list[tuple[bytes, bytes]]) -> None:
        self.db.execute("BEGIN")
        self.db.executemany("INSERT OR REPLACE INTO kv(k, v) VALUES (?, ?)", pairs)
        self.db.execute("COMMIT")

    def ingest(self, pairs) -> None:
        """sqlite3's bulk load: one transaction of sorted inserts."""
        self.put_batch(list(pairs))

    def get(self, key: bytes) -> bytes | None:
        row = self.db.execute("SELECT v FROM kv WHERE k = ?", (key,)).fetchone()
        return row[0] if row else None

    def scan(self, start: bytes, n: int) -> int:
        return len(self.db.execute("SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT ?", (start, n)).fetchall())

    def delete_range(self, start: bytes, end: bytes) -> None:
        self.db.execute("DELETE FROM kv WHERE k >= ? AND k < ?", (start, end))

    def settle(self) -> None:
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def compact(self) -> None:
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.db.execute("VACUUM")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def reopen(self) -> None:
        self.db.close()
        self._connect()

    def close(self) -> None:
        self.db.close()

    def describe(self) -> str:
        return f"file {os.path.getsize(self.file) // 1024} KiB"


class RocksTarget:  # pragma: no cover - only when rocksdict is installed
    name = "rocksdb"

    def __init__(self, path: str, durability: str, cache_bytes: int) -> None:
        import rocksdict  # an optional package: imported only when the rocksdb target runs

        self.rocksdict = rocksdict
        self.path = self.directory = path
        self.sync = durability == "full"
        self.db = rocksdict.Rdict(path)

    def ingest(self, pairs):
        pairs = list(pairs)
        for start in range(0, len(pairs), BATCH):
            self.put_batch(pairs[start:start + BATCH])

    def put_batch(self, pairs):
        wb = self.rocksdict.WriteBatch()
        for k, v in pairs:
            wb.put(k, v)
        opts = self.rocksdict.WriteOptions()
        opts.sync = self.sync
        self.db.write(wb, opts)

    def get(self, key):
        return self.db.get(key)

    def scan(self, start, n):
        it = self.db.iter()
        it.seek(start)
        count = 0
        while it.valid() and count < n:
            it.key(), it.value()
            count += 1
            it.next()
        return count

    def delete_range(self, start, end):
        self.db.delete_range(start, end)

    def settle(self):
        self.db.flush()

    def compact(self):
        self.db.compact_range(None, None)

    def reopen(self):
        self.db.close()
        self.db = self.rocksdict.Rdict(self.path)

    def close(self):
        self.db.close()

    def describe(self):
        return ""


def dir_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(root, name))
    return total


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def latencies_during_load(target, w: Workload, load: Callable[[], None]) -> dict[str, float]:
    """Run ``load`` while a second thread times point gets of the keys already loaded (one
    every millisecond, as a light foreground would), then time the first 2,000 gets after the
    load returns while background work catches up. p50 and p99 of each."""
    during: list[float] = []
    done = threading.Event()
    keys = w.get_keys

    def reader() -> None:
        i = 0
        while not done.is_set():
            key = keys[i % len(keys)]
            started = time.perf_counter()
            target.get(key)
            during.append(time.perf_counter() - started)
            i += 1
            time.sleep(0.001)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    started = time.perf_counter()
    load()
    loaded = time.perf_counter() - started
    done.set()
    thread.join()
    after = []
    for key in keys[:2000]:
        t0 = time.perf_counter()
        target.get(key)
        after.append(time.perf_counter() - t0)
    out = {"load": loaded}
    for name, sample in (("during load", during), ("just after load", after)):
        sample.sort()
        if sample:
            out[f"get {name} p50"] = sample[len(sample) // 2]
            out[f"get {name} p99"] = sample[min(len(sample) - 1, len(sample) * 99 // 100)]
    return out


def run_all(makers: list[Callable[[], object]], w: Workload, log: Callable[[str], None]) -> list[Result]:
    """Run every phase on every engine, phase by phase (engines back to back), so that both
    see the same machine load -- on a shared machine, running one engine's whole suite after
    the other's skews the ratios."""
    targets = [make() for make in makers]
    results = [Result(t.name) for t in targets]
    n = w.n

    def record(res: Result, phase: str, seconds: float, count: int, unit: str) -> None:
        res.times[phase] = seconds / max(1, count)
        res.units[phase] = unit
        log(f"  {res.name:10s} {phase:28s} {seconds / max(1, count) * 1e6:12.2f} us/{unit}")

    def each(phase: str, count: int, unit: str, work: Callable[[object], object]) -> None:
        for target, res in zip(targets, results):
            record(res, phase, timed(lambda: work(target)), count, unit)

    def load(target, order: list[int], round_: int) -> None:
        for pairs in w.batches(order, round_):
            target.put_batch(pairs)

    def gets(target) -> None:
        hits = sum(1 for key in w.get_keys if target.get(key) is not None)
        assert hits == len(w.get_keys), f"{target.name}: {len(w.get_keys) - hits} keys missing"

    cut = key_of(n * 9 // 10)
    deleted_starts = [key_of(i * 7 % max(1, n * 9 // 10)) for i in range(20)]
    each("sequential put (batched)", n, "key", lambda t: load(t, list(range(n)), 0))
    for target, res in zip(targets, results):
        # a fresh store's first flushes and compactions run during this load: these gets are
        # what a user's first queries after a bulk load wait for (a bench of interference)
        lat = latencies_during_load(target, w, lambda: load(target, w.random_order, 1))
        record(res, "random put (batched)", lat.pop("load"), n, "key")
        for name, seconds in lat.items():
            record(res, name, seconds, 1, "get")
    ingest_pairs = [(b"ing" + key_of(i)[3:], w.value(i, 4)) for i in range(n)]
    each("ingest (sorted, one call)", n, "key", lambda t: t.ingest(iter(ingest_pairs)))
    for target in targets:
        target.settle()
        for key in w.get_keys:  # warm the cache
            target.get(key)
        for start in w.scan_starts[:20]:
            target.scan(start, SCAN_LENGTH)
    each("random get (hit)", len(w.get_keys), "get", gets)
    each("random get (missing key)", len(w.missing_keys), "get",
         lambda t: [t.get(k) for k in w.missing_keys])
    each("1k-key scan", len(w.scan_starts), "scan", lambda t: [t.scan(s, SCAN_LENGTH) for s in w.scan_starts])
    for target, res in zip(targets, results):
        res.notes["state"] = target.describe()
    each("delete 90% (one range)", 1, "op", lambda t: t.delete_range(key_of(0), cut))
    each("1k scan, just after delete", len(deleted_starts), "scan",
         lambda t: [t.scan(s, SCAN_LENGTH) for s in deleted_starts])
    for target in targets:
        target.settle()
    each("1k scan, delete settled", len(deleted_starts), "scan",
         lambda t: [t.scan(s, SCAN_LENGTH) for s in deleted_starts])
    each("reopen + first get", 1, "open", lambda t: (t.reopen(), t.get(w.get_keys[0])))
    logical = n * (16 + 100)
    for target, res in zip(targets, results):
        for round_ in (2, 3):
            load(target, w.random_order, round_)
        target.compact()
        amp = dir_bytes(target.directory) / logical
        res.times["space amp (3x overwrite+compact)"] = amp
        res.units["space amp (3x overwrite+compact)"] = "x"
        log(f"  {res.name:10s} space amp after 3x overwrite + compact: {amp:.3f}")
        if isinstance(target, LSMTarget):
            res.final_stats = target.engine.stats()
        target.close()
    return results


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sqlkv bench kv", description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=1_000_000, help="number of keys (default 1,000,000)")
    parser.add_argument("--dir", default=None, help="work directory (default: a temporary one, removed after)")
    parser.add_argument("--durability", choices=list(SYNCHRONOUS), default="normal",
                        help="LSM durability / sqlite synchronous level (default normal)")
    parser.add_argument("--cache-mb", type=int, default=256, help="block / page cache size in MB (default 256)")
    parser.add_argument("--stats", action="store_true", help="print the LSM engine's stats() at the end")
    parser.add_argument("--engines", default="lsm,sqlite,rocksdb", help="comma-separated subset to run")
    parser.add_argument("--no-workers", action="store_true",
                        help="build LSM tables in the engine's threads, not in worker processes (A/B)")
    args = parser.parse_args(argv)
    base = args.dir or tempfile.mkdtemp(prefix="sqlkv-bench-")
    os.makedirs(base, exist_ok=True)
    w = Workload(args.keys)
    cache = args.cache_mb << 20
    makers: list[tuple[str, Callable[[], object]]] = []
    wanted = set(args.engines.split(","))
    if "lsm" in wanted:
        makers.append(("lsm", lambda: LSMTarget(os.path.join(base, "lsm"), args.durability, cache,
                                                          not args.no_workers)))
    if "sqlite" in wanted:
        makers.append(("sqlite", lambda: SqliteTarget(os.path.join(base, "sqlite"), args.durability, cache)))
    if "rocksdb" in wanted:
        if importlib.util.find_spec("rocksdict") is not None:
            makers.append(("rocksdb", lambda: RocksTarget(os.path.join(base, "rocksdb"), args.durability, cache)))
        else:
            print("rocksdb: skipped (rocksdict is not installed)")
    print(f"bench kv: {args.keys} keys, 16-byte keys, 100-byte values, durability={args.durability}, "
          f"cache {args.cache_mb} MB, dir {base}")
    for name, _ in makers:
        shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    try:
        with ticker("sqlkv bench kv", label="phases") as tick:  # on stderr, when it is a terminal

            def log(line: str) -> None:
                print(line)  # above the bar: stdout is patched while it is up
                tick()

            results = run_all([make for _, make in makers], w, log)
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    _report(results)
    if args.stats:
        for r in results:
            if r.final_stats is not None:
                print(f"{r.name} stats() at the end of the run:")
                print(json.dumps(r.final_stats, indent=1, default=str))
    return 0


def _report(results: list[Result]) -> None:
    if not results:
        return
    by_name = {r.name: r for r in results}
    lsm, lite = by_name.get("sqlkv-lsm"), by_name.get("sqlite3")
    names = [r.name for r in results]
    print()
    print(f"{'phase':34s}" + "".join(f"{n:>14s}" for n in names) + ("   lsm/sqlite3" if lsm and lite else ""))
    for phase in results[0].times:
        unit = results[0].units[phase]
        cells = []
        for r in results:
            value = r.times.get(phase)
            cells.append(f"{value:14.3f}" if unit == "x" else f"{value * 1e6:11.2f} us")
        ratio = ""
        if lsm and lite and lite.times.get(phase):
            ratio = f"{lsm.times[phase] / lite.times[phase]:14.2f}"
        print(f"{phase + ' (' + unit + ')':34s}" + "".join(cells) + ratio)
    for r in results:
        if r.notes:
            print(f"{r.name}: {r.notes.get('state', '')}")


if __name__ == "__main__":
    raise SystemExit(run())

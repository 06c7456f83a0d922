"""Benchmarks that ship with sqlkv: ``sqlkv bench kv`` (storage engine vs sqlite3 as a KV store) and
``sqlkv bench sql`` (SQL workloads vs sqlite3, and DuckDB when installed), run in one process so the
ratios compare like with like on the user's own machine; ``sqlkv bench expr`` times compiled
expressions per row against hand-written Python."""

"""The SQL layer: SQL text in, KV gets, scans and conditional puts out.

Entry points: `Database.open(path)` (database.py) opens or shares a database in this process;
`Session` (session.py) runs statements on it and returns `Result`s (result.py). The driver
(`sqlkv.dbapi`) and the CLI (`sqlkv.cli`) are built on these three.

The life of one statement, ``cursor.execute("UPDATE users SET name = ? WHERE id = ?", ("ann", 10))``,
floor by floor; each floor imports only those below it:

1. **parse** -- `parse.parse_statement` turns the text into a `ParsedStatement`: a sqlglot AST
   with ``?`` numbered, plus what sqlglot has no node for (UPSERT, STORING, EXPLAIN, savepoints).
   Cached per text.
2. **session** -- `Session.execute` (the statement loop) asks `txnstate.TxnState` for the
   transaction: the open one, or a fresh one it commits after the statement (autocommit). In an
   open transaction the statement runs under a savepoint, so a failure undoes only its own
   writes (a fresh one is rolled back whole); a Python error becomes a PEP 249 one (pep249.py). DDL goes to `ddl/` directly; EXPLAIN to explain.py.
3. **plan** -- `plancache.PlanCache` returns the plan of this text if the schema has not changed,
   else `plan.statement.plan_statement` plans it against the catalog (`sqlkv.catalog`):
   `plan.modify.plan_update` resolves ``users``, lets `plan.access` pick the access path (here a
   point get on the primary key, its span computed per execution), and compiles the SET list
   and checks with `expr` (expressions -> Python closures, typed by types.py). The plan is a
   tree of operators (`exec.operator.Operator`) topped, for DML, by a write operator::

       update users set name
         get users@users_pkey /Table/104/1/10

4. **execute** -- the session binds the parameters, transaction and time into the plan's
   `context.ExecContext` and runs it: `exec.modify.Update` pulls the target rows from
   `exec.scan.IndexScan`, computes and checks the new rows, and hands them to the row store.
   A SELECT's root operator is not run here: its rows stream to the caller through the Result.
5. **rowstore** -- rows <-> KV pairs in one place: `rowstore.RowWriter` deletes and puts the
   changed keys (``/Table/104/1/10/0 -> {2: 'ann'}`` and the index entries), `TableCodec`
   decodes scanned pairs back into rows, `rowstore.keyspans` turns WHERE bounds into key spans.
6. **txn** -- the pairs are read and buffered in a SERIALIZABLE `sqlkv.txn.Transaction`; COMMIT
   validates the reads and writes one batch to the **storage** engine (`sqlkv.storage`).

The session calls each floor and each floor calls only those below it: at every KV call the
stack reads session -> plan or exec -> rowstore -> txn -> storage, never back up
(tests/sql/test_sql_layering.py checks this, and that the imports inside this package form no
cycle and none is hidden in a function).

Beside the pipeline: parse_edits.py, parse_extras.py, parse_alter.py and parse_errors.py
(sqlkv's own syntax and located syntax errors), parse_params.py (numbered parameters' tokens),
parse_tree.py (the parsed tree walked once, and copied for the planner), headers.py (result
column names as typed),
show.py (SHOW/DESCRIBE as queries); virtual.py (information_schema and sqlkv_internal tables)
with catalog_tables.py and observe.py (the catalog and the engine's figures as tables);
stmtstats.py (per-statement figures) with normalize.py (their key, the normalized text),
observe_explain.py (EXPLAIN ANALYZE's timing);
check.py (CHECK DATABASE), context.py (columns, scopes, the execution context), depth.py (how
deep input may nest), casts.py beside types.py.
"""

from sqlkv.sql.database import Database
from sqlkv.sql.result import Result
from sqlkv.sql.session import Session

__all__ = ["Database", "Result", "Session"]

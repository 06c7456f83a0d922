-- A tour of the keys sqlkv writes. Every row and every index entry is one KV pair; the virtual
-- table sqlkv_internal.kv lists them with the key in the key grammar:
--   /<table>/<index>/<key column values...>/<column family>       primary index: the row
--   /<table>/<index>/<indexed values...>/<primary key values>      secondary index entry
-- (a UNIQUE index keeps the primary key in the value instead, so its key is just the value)
-- Run it:  sqlkv -f examples/key_tour.sql --mode box
-- (In the REPL, `.kv users` shows the same for one table.)

CREATE TABLE users (
  id INTEGER PRIMARY KEY,
  email TEXT NOT NULL,
  name TEXT
);
CREATE UNIQUE INDEX users_email_key ON users (email);
CREATE INDEX users_name_desc ON users (name DESC);

-- Each row inserted writes three keys: the row itself and one entry per index.
INSERT INTO users VALUES (10, 'ada@example.com', 'Ada'), (2, 'alan@example.com', 'Alan');
SELECT index_name, key, value FROM sqlkv_internal.kv WHERE table_name = 'users' ORDER BY raw_key;

-- Keys sort by value, not by insertion order: id 2 comes before id 10 because integers are
-- encoded so that byte order is numeric order. A DESC index stores complemented bytes (~).

-- An UPDATE of an indexed column moves the index entry: a delete and a put.
UPDATE users SET email = 'ada@lovelace.org' WHERE id = 10;
SELECT key, value FROM sqlkv_internal.kv
WHERE table_name = 'users' AND index_name = 'users_email_key' ORDER BY raw_key;

-- A DELETE removes the row and all its index entries.
DELETE FROM users WHERE id = 2;
SELECT index_name, COUNT(*) AS keys FROM sqlkv_internal.kv
WHERE table_name = 'users' GROUP BY index_name ORDER BY index_name;

-- EXPLAIN shows the span a query reads: a point lookup on the primary key...
EXPLAIN SELECT name FROM users WHERE id = 10;
-- ...and a range scan on the email index.
EXPLAIN SELECT id FROM users WHERE email >= 'a' AND email < 'b';

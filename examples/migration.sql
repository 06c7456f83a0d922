-- A CI-style migration with assertions: split account balances into a ledger.
-- Run it:  sqlkv ci.db -f examples/migration.sql
-- Every statement runs on its own unless inside BEGIN ... COMMIT. The first failing statement
-- stops the script with "migration.sql:LINE:COL: message" on stderr and exit status 1, which is
-- what fails the CI job; the failing transaction is rolled back, earlier ones stay committed.

-- Version 1: the schema the application has been running with.
BEGIN;
CREATE TABLE accounts (
  id INTEGER PRIMARY KEY,
  owner TEXT NOT NULL,
  balance_cents INTEGER NOT NULL
);
INSERT INTO accounts (id, owner, balance_cents) VALUES
  (1, 'ada', 125000), (2, 'alan', 4200), (3, 'grace', 0), (4, 'edsger', 98000);
COMMIT;

-- Version 2: balances become the sum of ledger entries. All or nothing.
BEGIN;
CREATE TABLE ledger (
  account_id INTEGER NOT NULL,
  entry INTEGER NOT NULL,
  amount_cents INTEGER NOT NULL,
  note TEXT,
  PRIMARY KEY (account_id, entry)
);
INSERT INTO ledger (account_id, entry, amount_cents, note)
  SELECT id, 1, balance_cents, 'opening balance' FROM accounts;
CREATE INDEX ledger_by_note ON ledger (note);
COMMIT;

-- Assertions. A row whose "ok" is false breaks the CHECK; a NULL (say, SUM over nothing)
-- breaks NOT NULL. Either way the INSERT fails and so does the script.
CREATE TABLE migration_checks (
  name TEXT PRIMARY KEY,
  ok BOOLEAN NOT NULL CHECK (ok)
);
INSERT INTO migration_checks (name, ok)
  SELECT 'ledger total equals balances',
         (SELECT SUM(amount_cents) FROM ledger) = (SELECT SUM(balance_cents) FROM accounts);
INSERT INTO migration_checks (name, ok)
  SELECT 'one opening entry per account', COUNT(*) = 0
  FROM accounts a
  WHERE (SELECT COUNT(*) FROM ledger l WHERE l.account_id = a.id AND l.entry = 1) <> 1;
INSERT INTO migration_checks (name, ok)
  SELECT 'no negative balances', NOT EXISTS (SELECT 1 FROM accounts WHERE balance_cents < 0);

SELECT name, ok FROM migration_checks ORDER BY name;

-- A small shop: customers, products, orders and their lines, with secondary indexes.
-- Run it:  sqlkv -f examples/shop.sql            (in memory)
--          sqlkv shop.db -f examples/shop.sql     (kept in the directory shop.db)
-- The SQL is plain enough that sqlite3 runs it too; the test suite compares the two outputs.

CREATE TABLE customers (
  id INTEGER PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  city TEXT
);

CREATE TABLE products (
  sku TEXT PRIMARY KEY,
  title TEXT NOT NULL,
  price_cents INTEGER NOT NULL CHECK (price_cents > 0),
  stock INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL,
  placed_on DATE NOT NULL,
  status TEXT NOT NULL DEFAULT 'new'
);

CREATE TABLE order_lines (
  order_id INTEGER NOT NULL,
  sku TEXT NOT NULL,
  quantity INTEGER NOT NULL CHECK (quantity > 0),
  PRIMARY KEY (order_id, sku)
);

-- Secondary indexes: each is a second set of keys /<table>/<index>/<columns>/<primary key>.
CREATE INDEX orders_by_customer ON orders (customer_id);
CREATE INDEX orders_by_status ON orders (status, placed_on);
CREATE INDEX customers_by_city ON customers (city);

INSERT INTO customers (id, email, name, city) VALUES
  (1, 'ada@example.com', 'Ada Lovelace', 'London'),
  (2, 'alan@example.com', 'Alan Turing', 'Manchester'),
  (3, 'grace@example.com', 'Grace Hopper', 'New York'),
  (4, 'edsger@example.com', 'Edsger Dijkstra', 'Eindhoven'),
  (5, 'barbara@example.com', 'Barbara Liskov', NULL);

INSERT INTO products (sku, title, price_cents, stock) VALUES
  ('KB-01', 'Mechanical keyboard', 8900, 12),
  ('MS-02', 'Trackball mouse', 4500, 30),
  ('MN-27', '27-inch monitor', 27900, 4),
  ('CB-10', 'USB-C cable', 900, 200),
  ('LMP-1', 'Desk lamp', 3200, 0);

INSERT INTO orders (id, customer_id, placed_on, status) VALUES
  (100, 1, '2024-03-01', 'shipped'),
  (101, 2, '2024-03-02', 'shipped'),
  (102, 1, '2024-03-05', 'new'),
  (103, 3, '2024-03-05', 'cancelled'),
  (104, 4, '2024-03-07', 'new'),
  (105, 1, '2024-03-09', 'shipped');

INSERT INTO order_lines (order_id, sku, quantity) VALUES
  (100, 'KB-01', 1), (100, 'CB-10', 3),
  (101, 'MN-27', 2),
  (102, 'MS-02', 1), (102, 'CB-10', 1),
  (103, 'LMP-1', 1),
  (104, 'KB-01', 2), (104, 'MS-02', 2), (104, 'CB-10', 5),
  (105, 'MN-27', 1);

-- A point lookup by primary key: one KV get.
SELECT name, city FROM customers WHERE id = 3;

-- A lookup through the secondary index orders_by_customer.
SELECT id, placed_on, status FROM orders WHERE customer_id = 1 ORDER BY id;

-- Revenue per customer over orders that were not cancelled.
SELECT c.name, COUNT(DISTINCT o.id) AS orders, SUM(l.quantity * p.price_cents) AS revenue_cents
FROM customers c
JOIN orders o ON o.customer_id = c.id
JOIN order_lines l ON l.order_id = o.id
JOIN products p ON p.sku = l.sku
WHERE o.status <> 'cancelled'
GROUP BY c.name
ORDER BY revenue_cents DESC, c.name;

-- Customers who never ordered.
SELECT name FROM customers c
WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)
ORDER BY name;

-- Best sellers by units.
SELECT p.title, SUM(l.quantity) AS units
FROM order_lines l JOIN products p ON p.sku = l.sku
GROUP BY p.title
HAVING SUM(l.quantity) > 1
ORDER BY units DESC, p.title
LIMIT 3;

-- Ship the new orders and take the stock they use, in one transaction.
BEGIN;
UPDATE products SET stock = stock - (
  SELECT SUM(l.quantity) FROM order_lines l JOIN orders o ON o.id = l.order_id
  WHERE l.sku = products.sku AND o.status = 'new')
WHERE sku IN (SELECT l.sku FROM order_lines l JOIN orders o ON o.id = l.order_id WHERE o.status = 'new');
UPDATE orders SET status = 'shipped' WHERE status = 'new';
COMMIT;

SELECT sku, stock FROM products ORDER BY sku;
SELECT status, COUNT(*) AS n FROM orders GROUP BY status ORDER BY status;

-- A customer with no city sorts first (NULLs are smallest, as in sqlite3).
SELECT name, city FROM customers ORDER BY city, name;

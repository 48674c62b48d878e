-- Deterministic SQLite workload for the picos integration tests.
-- Run as: sqlite3 DIR/test.db < sqlite_script.sql (with a fresh db file).
.bail on
.headers on
.mode list
PRAGMA journal_mode = WAL;
PRAGMA foreign_keys = ON;

CREATE TABLE categories (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL UNIQUE
);
CREATE TABLE items (
    id       INTEGER PRIMARY KEY,
    name     TEXT NOT NULL,
    category INTEGER NOT NULL REFERENCES categories(id),
    price    INTEGER NOT NULL,
    qty      INTEGER NOT NULL
);

INSERT INTO categories (id, name) VALUES
    (0, 'apples'), (1, 'bolts'), (2, 'cables'), (3, 'drills'), (4, 'engines'), (5, 'filters'), (6, 'gears');

WITH RECURSIVE c(x) AS (
    SELECT 1
    UNION ALL
    SELECT x + 1 FROM c WHERE x < 10000
)
INSERT INTO items (id, name, category, price, qty)
SELECT x,
       'item-' || printf('%05d', x) || CASE WHEN x % 13 = 0 THEN '-special' ELSE '' END,
       x % 7,
       (x * 7919) % 1000 + 1,
       (x * 31) % 50
FROM c;

CREATE INDEX items_category ON items(category);
CREATE INDEX items_price ON items(price);

SELECT 'count' AS q, count(*) AS n FROM items;
SELECT 'sum' AS q, sum(price) AS total_price, sum(qty) AS total_qty, sum(price * qty) AS value FROM items;
SELECT 'minmax' AS q, min(price), max(price), round(avg(price), 3) AS avg_price FROM items;

SELECT category, count(*) AS n, sum(price) AS total, max(qty) AS max_qty
FROM items GROUP BY category ORDER BY total DESC, category;

SELECT c.name, count(i.id) AS n, sum(i.price * i.qty) AS value
FROM categories c JOIN items i ON i.category = c.id
WHERE i.price > 900
GROUP BY c.id ORDER BY value DESC, c.name;

SELECT 'like' AS q, count(*) AS n FROM items WHERE name LIKE '%-special';
SELECT name, price FROM items WHERE name LIKE 'item-0999%' ORDER BY id;

EXPLAIN QUERY PLAN SELECT * FROM items WHERE category = 3 AND price < 10;
SELECT id, name, price FROM items WHERE category = 3 AND price < 10 ORDER BY price, id LIMIT 5;

BEGIN TRANSACTION;
UPDATE items SET price = price + 1000 WHERE name LIKE '%-special';
UPDATE items SET qty = 0 WHERE category = (SELECT id FROM categories WHERE name = 'gears');
SELECT 'in txn' AS q, count(*) AS n FROM items WHERE price > 1000;
COMMIT;

BEGIN;
DELETE FROM items;
SELECT 'deleted in txn' AS q, count(*) AS n FROM items;
ROLLBACK;

PRAGMA integrity_check;
SELECT 'final' AS q, count(*) AS n, sum(price) AS total_price, sum(qty) AS total_qty,
       sum(CASE WHEN price > 1000 THEN 1 ELSE 0 END) AS expensive
FROM items;
.mode column
SELECT c.name, count(*) AS n, sum(i.qty) AS qty
FROM items i JOIN categories c ON c.id = i.category
GROUP BY c.name ORDER BY c.name;

-- The same row in the two layouts of ARRAY and JSONB columns (grammar-notes/keys.md, "Layouts").
CREATE TABLE packed (id INT PRIMARY KEY, name TEXT, tags TEXT[], doc JSONB);
CREATE TABLE exploded (id INT PRIMARY KEY, name TEXT, tags TEXT[], doc JSONB,
  FAMILY f_tags (tags) WITH (layout = exploded), FAMILY f_doc (doc) WITH (layout = exploded));
INSERT INTO packed VALUES (7, 'ann', ARRAY['a', NULL, 'c'], '{"email": "a@b.c", "n": {"k": [1, 2]}}');
INSERT INTO exploded SELECT * FROM packed;
.kv packed
.kv exploded
EXPLAIN SELECT tags[3], doc->>'email' FROM exploded WHERE id = 7;

-- The cost of the deduplication check in the PostgreSQL events insert
-- (crates/sluice-store/src/postgres/dedup.rs), in the database alone: a
-- table shaped like `events` with 500,000 rows, then 300 inserts of 100
-- new ids each in every form, twice over. Compare the times psql prints:
-- no check (bucket NULL), the unique index only, the window check
-- (NOT EXISTS), ON CONFLICT DO NOTHING, and both.
--
--   psql "$(scripts/postgres-test-server.sh url)" -q -f bench/perf/pg-dedup-insert.sql | grep Time
-- The last time printed is the query that lists the runs, not a run.
\ir pg-dedup-table.sql

CREATE FUNCTION run(form text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..300 LOOP
    CASE form
    WHEN 'none' THEN
      INSERT INTO ev (source_id, message_id, received_at, body, b)
      SELECT 'src_1', m, 2000, repeat('x', 400), NULL
      FROM (SELECT gen_random_uuid()::text m FROM generate_series(1, 100)) u;
    WHEN 'unique' THEN
      INSERT INTO ev (source_id, message_id, received_at, body, b)
      SELECT 'src_1', m, 2000, repeat('x', 400), 0
      FROM (SELECT gen_random_uuid()::text m FROM generate_series(1, 100)) u;
    WHEN 'check' THEN
      INSERT INTO ev (source_id, message_id, received_at, body, b)
      SELECT 'src_1', m, 2000, repeat('x', 400), 0
      FROM (SELECT gen_random_uuid()::text m FROM generate_series(1, 100)) u
      WHERE NOT EXISTS (SELECT 1 FROM ev o WHERE o.message_id = u.m AND o.source_id = 'src_1'
                          AND o.b IS NOT NULL AND o.received_at BETWEEN 0 AND 5000 OFFSET 0);
    WHEN 'conflict' THEN
      INSERT INTO ev (source_id, message_id, received_at, body, b)
      SELECT 'src_1', m, 2000, repeat('x', 400), 0
      FROM (SELECT gen_random_uuid()::text m FROM generate_series(1, 100)) u
      ON CONFLICT DO NOTHING;
    ELSE
      INSERT INTO ev (source_id, message_id, received_at, body, b)
      SELECT 'src_1', m, 2000, repeat('x', 400), 0
      FROM (SELECT gen_random_uuid()::text m FROM generate_series(1, 100)) u
      WHERE NOT EXISTS (SELECT 1 FROM ev o WHERE o.message_id = u.m AND o.source_id = 'src_1'
                          AND o.b IS NOT NULL AND o.received_at BETWEEN 0 AND 5000 OFFSET 0)
      ON CONFLICT DO NOTHING;
    END CASE;
  END LOOP;
END $$;

-- 2 rounds, each running every form once, in this order.
\timing on
SELECT format('SELECT run(%L)', form)
FROM generate_series(1, 2) AS round, unnest(ARRAY['none', 'unique', 'check', 'conflict', 'both']) WITH ORDINALITY AS f(form, n)
ORDER BY round, n \gexec
\timing off
DROP SCHEMA dedup_bench CASCADE;

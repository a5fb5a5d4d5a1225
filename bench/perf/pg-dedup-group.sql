-- The deduplication check of the PostgreSQL events insert done once per
-- group instead of once per row (crates/sluice-store/src/postgres/dedup.rs):
-- the group's ids looked up together with one `= ANY` index scan into a
-- materialised list, which the insert then checks. On a table shaped like
-- `events` with 500,000 rows, 300 inserts of 100 new ids each, the ids bound
-- as arrays in every form, six rounds alternating: no check, the per-row
-- check Sluice uses (NOT EXISTS), and the group form. Compare the times.
--
--   psql "$(scripts/postgres-test-server.sh url)" -q -f bench/perf/pg-dedup-group.sql | grep Time
-- The last time printed is the query that lists the runs, not a run.
\ir pg-dedup-table.sql

CREATE FUNCTION run(form text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE arr text[]; srcs text[]; ts bigint[];
BEGIN
  FOR i IN 1..300 LOOP
    arr := ARRAY(SELECT gen_random_uuid()::text FROM generate_series(1, 100));
    srcs := array_fill('src_1'::text, ARRAY[100]);
    ts := array_fill(2000::bigint, ARRAY[100]);
    CASE form
    WHEN 'none' THEN
      INSERT INTO ev (source_id, message_id, received_at, body, b)
      SELECT u.src, u.m, u.t, repeat('x', 400), NULL FROM unnest(arr, srcs, ts) u(m, src, t);
    WHEN 'check' THEN
      INSERT INTO ev (source_id, message_id, received_at, body, b)
      SELECT u.src, u.m, u.t, repeat('x', 400), 0 FROM unnest(arr, srcs, ts) u(m, src, t)
      WHERE NOT EXISTS (SELECT 1 FROM ev o WHERE o.message_id = u.m AND o.source_id = u.src
                          AND o.b IS NOT NULL AND o.received_at >= u.t - 5000 AND o.received_at <= u.t + 5000 OFFSET 0);
    WHEN 'group' THEN
      WITH seen AS MATERIALIZED (
        SELECT o.message_id, o.source_id, o.received_at FROM ev o
        WHERE o.message_id = ANY(arr) AND o.b IS NOT NULL)
      INSERT INTO ev (source_id, message_id, received_at, body, b)
      SELECT u.src, u.m, u.t, repeat('x', 400), 0 FROM unnest(arr, srcs, ts) u(m, src, t)
      WHERE NOT EXISTS (SELECT 1 FROM seen s WHERE s.message_id = u.m AND s.source_id = u.src
                          AND s.received_at >= u.t - 5000 AND s.received_at <= u.t + 5000);
    END CASE;
  END LOOP;
END $$;

-- 6 rounds, each running every form once, in this order.
\timing on
SELECT format('SELECT run(%L)', form)
FROM generate_series(1, 6) AS round, unnest(ARRAY['none', 'check', 'group']) WITH ORDINALITY AS f(form, n)
ORDER BY round, n \gexec
\timing off
DROP SCHEMA dedup_bench CASCADE;

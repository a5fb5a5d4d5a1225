-- Whether the PostgreSQL events insert with the deduplication check
-- (crates/sluice-store/src/postgres/dedup.rs) is planned at every run, and
-- what that costs: a table shaped like `events` with 200,000 rows, then
-- (after a warm-up) 2,000 runs of each prepared insert with 5 new ids (a
-- group of single calls), each run sent by psql as text: without the check, with it as PostgreSQL chooses its plans, and
-- with it under `plan_cache_mode = force_generic_plan`. Prints the
-- microseconds per run of each and how each statement was planned.
--
--   psql "$(scripts/postgres-test-server.sh url)" -q -f bench/perf/pg-dedup-plan.sql
DROP SCHEMA IF EXISTS dedup_plan CASCADE;
SET client_min_messages = warning;
CREATE SCHEMA dedup_plan;
SET search_path = dedup_plan;
CREATE TABLE events (
    seq bigint PRIMARY KEY, source_id text COLLATE "C" NOT NULL,
    message_id text COLLATE "C" NOT NULL, event_type text, received_at bigint NOT NULL,
    body text, blocked text, person smallint, dedup_bucket bigint
);
CREATE UNIQUE INDEX events_message_id_once ON events (message_id, source_id, dedup_bucket);
INSERT INTO events
SELECT g, 'src', 'm-' || g, 'track', 1000000 + g, '{}', NULL, 0, (1000000 + g) / 86400000
FROM generate_series(1, 200000) g;
VACUUM ANALYZE events;

PREPARE plain(bigint[], text[], text[], text[], bigint[], text[], text[], smallint[]) AS
INSERT INTO events (seq, source_id, message_id, event_type, received_at, body, blocked, person)
SELECT * FROM UNNEST($1, $2, $3, $4, $5, $6, $7, $8);

PREPARE checked(bigint[], text[], text[], text[], bigint[], text[], text[], smallint[], bigint) AS
INSERT INTO events (seq, source_id, message_id, event_type, received_at, body, blocked, person,
                    dedup_bucket)
SELECT u.s, u.src, u.mid, u.ty, u.t, u.b, u.bl, u.p, u.t / $9
FROM UNNEST($1, $2, $3, $4, $5, $6, $7, $8) AS u(s, src, mid, ty, t, b, bl, p)
WHERE NOT EXISTS (
    SELECT 1 FROM events o
    WHERE o.message_id = u.mid AND o.source_id = u.src AND o.dedup_bucket IS NOT NULL
      AND o.received_at >= u.t - $9 AND o.received_at <= u.t + $9
    OFFSET 0)
RETURNING seq;

-- 2,000 runs of `stmt`, the ids from `first` on.
CREATE TABLE runs (stmt text, first bigint);
INSERT INTO runs VALUES ('warm-up', 4000000), ('plain', 1000000), ('checked', 2000000),
                        ('generic', 3000000);
CREATE FUNCTION executes(which text) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT format('EXECUTE %s(%L, %L, %L, %L, %L, %L, %L, %L%s)',
                CASE WHEN which IN ('plain', 'warm-up') THEN 'plain' ELSE 'checked' END,
                array_agg(i), array_agg('src'::text), array_agg('n-' || i), array_agg('track'::text),
                array_agg(5000000 + i), array_agg('{}'::text), array_agg(NULL::text), array_agg(0),
                CASE WHEN which IN ('plain', 'warm-up') THEN '' ELSE ', 86400000' END)
  FROM runs, generate_series(0, 1999) r, generate_series(first + r * 5, first + r * 5 + 4) i
  WHERE stmt = which
  GROUP BY r ORDER BY r
$$;

\o /dev/null
SELECT executes('warm-up') \gexec
\o
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
\o /dev/null
SELECT executes('plain') \gexec
\o
SELECT extract(epoch FROM clock_timestamp()) AS t1 \gset
\o /dev/null
SELECT executes('checked') \gexec
\o
SELECT extract(epoch FROM clock_timestamp()) AS t2 \gset
SET plan_cache_mode = force_generic_plan;
\o /dev/null
SELECT executes('generic') \gexec
\o
SELECT extract(epoch FROM clock_timestamp()) AS t3 \gset
RESET plan_cache_mode;

SELECT round((:t1 - :t0) * 1e6 / 2000) AS no_check_us,
       round((:t2 - :t1) * 1e6 / 2000) AS check_planned_each_run_us,
       round((:t3 - :t2) * 1e6 / 2000) AS check_generic_us;
SELECT name, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name;
DROP SCHEMA dedup_plan CASCADE;

-- The table both deduplication measurements insert into: shaped like
-- `events` (crates/sluice-store/src/postgres/schema.rs), with the unique
-- index the check relies on and 500,000 rows already in it. Included by
-- pg-dedup-insert.sql and pg-dedup-group.sql, which drop the schema at the
-- end.
DROP SCHEMA IF EXISTS dedup_bench CASCADE;
CREATE SCHEMA dedup_bench;
SET search_path = dedup_bench;
CREATE TABLE ev (
    seq bigserial PRIMARY KEY, source_id text COLLATE "C" NOT NULL,
    message_id text COLLATE "C" NOT NULL, received_at bigint NOT NULL,
    body text NOT NULL, b bigint
);
CREATE INDEX ev_src ON ev (source_id, seq);
CREATE INDEX ev_rat ON ev (received_at);
CREATE UNIQUE INDEX ev_once ON ev (message_id, source_id, b);
INSERT INTO ev (source_id, message_id, received_at, body, b)
SELECT 'src_1', gen_random_uuid()::text, 1000, repeat('x', 400), 0 FROM generate_series(1, 500000);
VACUUM ANALYZE ev;

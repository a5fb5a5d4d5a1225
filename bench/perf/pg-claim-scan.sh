#!/usr/bin/env bash
# While `sluice-bench --backend postgres` runs, times the delivery claim's
# index scan in the newest bench schema every 2.5 s, with the dead row
# versions of `deliveries` and its last vacuums beside it (docs/postgres.md,
# "Latency after a large backlog drains").
#
#   target/release/sluice-bench --backend postgres --only end-to-end &
#   bench/perf/pg-claim-scan.sh 16
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/postgres-test-server.sh start >/dev/null
url=$(scripts/postgres-test-server.sh url)
for _ in $(seq 1 "${1:-16}"); do
  sleep 2.5
  schema=$(psql "$url" -Atc "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'bench%' ORDER BY oid DESC LIMIT 1")
  [ -z "$schema" ] && continue
  plan=$(psql "$url" -Atc "SET search_path = \"$schema\";
    EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
    SELECT id FROM deliveries
    WHERE state = 'pending' AND next_attempt_at <= (extract(epoch FROM now()) * 1000)::bigint
    ORDER BY next_attempt_at, id LIMIT 100" 2>/dev/null | tail -n +2 |
    python3 -c 'import json,sys; d=json.load(sys.stdin)[0]; p=d["Plan"]; print("scan %.2f ms, %s rows, %s pages" % (d["Execution Time"], p.get("Actual Rows"), p.get("Shared Hit Blocks")))' 2>/dev/null || true)
  dead=$(psql "$url" -Atc "SELECT n_dead_tup, vacuum_count, autovacuum_count FROM pg_stat_user_tables
    WHERE schemaname = '$schema' AND relname = 'deliveries'")
  echo "$(date -u +%T) $schema $plan | dead, vacuums, autovacuums: $dead"
done

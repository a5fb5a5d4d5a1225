#!/usr/bin/env bash
# Where the database's time goes while a command runs: loads
# pg_stat_statements into the project's PostgreSQL test server (a restart),
# runs the command, prints the statements that took the most execution
# time with their calls and rows, then unloads it again (another restart).
# Times include waiting for a core, so on a shared machine read the shares,
# not the absolute figures (docs/postgres.md, "Where a delivered event's
# database time goes").
#
#   bench/perf/pg-statements.sh target/release/sluice-bench --backend postgres \
#       --postgres-url "$(scripts/postgres-test-server.sh url)" --only end-to-end
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
server=scripts/postgres-test-server.sh
$server start >/dev/null
url=$($server url)
restart() { $server stop >/dev/null 2>&1; $server start >/dev/null; }
psql "$url" -qc "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
trap 'psql "$url" -qc "DROP EXTENSION IF EXISTS pg_stat_statements" >/dev/null 2>&1 || true
      psql "$url" -qc "ALTER SYSTEM RESET shared_preload_libraries" >/dev/null && restart' EXIT
restart
psql "$url" -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"
psql "$url" -qAtc "SELECT pg_stat_statements_reset()" >/dev/null
"$@" >&2
psql "$url" -c "
  SELECT round((100 * total_exec_time / sum(total_exec_time) OVER ())::numeric, 1) AS pct,
         round(total_exec_time::numeric) AS ms, calls, rows,
         left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS statement
  FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15"

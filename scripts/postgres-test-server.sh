#!/usr/bin/env bash
# A throwaway PostgreSQL server for Sluice's tests.
#
#   scripts/postgres-test-server.sh install # only make sure the server and PgBouncer binaries are there
#   scripts/postgres-test-server.sh start   # install if needed, init, start; prints the URL
#   scripts/postgres-test-server.sh pooler MODE  # PgBouncer in MODE (session|transaction)
#                                               # in front of the server; prints its URL
#   scripts/postgres-test-server.sh url     # prints the URL of the running server
#   scripts/postgres-test-server.sh ca      # prints the path of the CA that issued its certificate
#   scripts/postgres-test-server.sh stop    # stops it (the data stays until `clean`)
#   scripts/postgres-test-server.sh clean   # stops it and deletes its data
#
# Then: SLUICE_TEST_POSTGRES_URL=$(scripts/postgres-test-server.sh url) \
#         cargo test -p sluice-store --features postgres
#
# The server listens on 127.0.0.1 only, with trust authentication (local
# tests, never production), TLS on (a certificate for `localhost` only, not
# for 127.0.0.1, issued by a CA made here: the TLS tests check both names), data under target/pg-test (override with
# SLUICE_PG_TEST_DIR), port 55432 or the next free one (override the start
# with SLUICE_PG_TEST_PORT). Every command is idempotent.
#
# Binaries come from /usr/lib/postgresql/*/bin (newest), else `pg_config
# --bindir`, else PATH; when none is found and we are root, Debian's
# `postgresql` package is installed. PostgreSQL refuses to run as root, so
# as root the server runs as the `postgres` user (created by the package),
# or a dedicated `sluice-pg` system user when that does not exist.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
base=${SLUICE_PG_TEST_DIR:-$repo/target/pg-test}
data=$base/data
log=$base/server.log
port_file=$base/port
tls=$base/tls
database=sluice_test
superuser=postgres

die() { echo "postgres-test-server: $*" >&2; exit 1; }
say() { echo "postgres-test-server: $*" >&2; }

find_bindir() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [[ -x $dir/initdb && -x $dir/pg_ctl ]] && { echo "$dir"; return 0; }
    done
    if command -v pg_config >/dev/null; then
        dir=$(pg_config --bindir 2>/dev/null || true)
        [[ -n $dir && -x $dir/initdb && -x $dir/pg_ctl ]] && { echo "$dir"; return 0; }
    fi
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
        dirname "$(command -v initdb)"
        return 0
    fi
    return 1
}

ensure_bindir() {
    if bindir=$(find_bindir); then return 0; fi
    [[ $(id -u) -eq 0 ]] || die "no PostgreSQL server binaries found (initdb, pg_ctl). Install them \
(Debian/Ubuntu: sudo apt-get install -y postgresql) or run this script as root to install them."
    say "installing PostgreSQL (apt-get install postgresql)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    bindir=$(find_bindir) || die "postgresql installed, but initdb/pg_ctl are still not found"
}

# Runs a command as the user owning the cluster (`as_user CMD ARGS...`).
as_user() {
    if [[ -z $run_as ]]; then
        "$@"
    elif command -v runuser >/dev/null; then
        runuser -u "$run_as" -- "$@"
    else
        su "$run_as" -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
}

choose_user() {
    run_as=
    [[ $(id -u) -eq 0 ]] || return 0
    if id postgres >/dev/null 2>&1; then
        run_as=postgres
    else
        id sluice-pg >/dev/null 2>&1 ||
            useradd --system --no-create-home --shell /usr/sbin/nologin sluice-pg
        run_as=sluice-pg
    fi
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

running() { [[ -f $data/postmaster.pid ]] && as_user "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; }

# A CA and a server certificate for `localhost`, made once with openssl.
make_certs() {
    [[ -f $tls/server.pem && -f $tls/ca.pem ]] && return 0
    command -v openssl >/dev/null || die "openssl is needed for the server's TLS certificate"
    mkdir -p "$tls"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
        -subj "/CN=Sluice test CA" -keyout "$tls/ca.key" -out "$tls/ca.pem" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        >/dev/null 2>&1 || die "openssl could not make the test CA"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -subj "/CN=localhost" -keyout "$tls/server.key" -out "$tls/server.csr" >/dev/null 2>&1 ||
        die "openssl could not make the server key"
    printf '%s\n' "subjectAltName=DNS:localhost" "basicConstraints=critical,CA:FALSE" \
        "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >"$tls/server.ext"
    openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" \
        -CAcreateserial -days 3650 -extfile "$tls/server.ext" -out "$tls/server.pem" >/dev/null 2>&1 ||
        die "openssl could not sign the server certificate"
    chmod 600 "$tls/server.key" "$tls/ca.key"
    [[ -z $run_as ]] || chown "$run_as" "$tls/server.key" "$tls/server.pem"
}

ca() {
    [[ -f $tls/ca.pem ]] || die "no CA yet; run: scripts/postgres-test-server.sh start"
    echo "$tls/ca.pem"
}

url() {
    [[ -f $port_file ]] && port_in_use "$(cat "$port_file")" ||
        die "not running; run: scripts/postgres-test-server.sh start"
    echo "postgres://$superuser@127.0.0.1:$(cat "$port_file")/$database"
}

start() {
    ensure_bindir
    choose_user
    mkdir -p "$base"
    if [[ -n $run_as ]]; then
        chown "$run_as" "$base"
        # The server user must reach the data dir through the repo's parents.
        as_user test -x "$base" || die "user $run_as cannot enter $base; set SLUICE_PG_TEST_DIR to a directory it can reach"
    fi
    if [[ ! -f $data/PG_VERSION ]]; then
        say "initdb in $data"
        rm -rf "$data"
        as_user "$bindir/initdb" -D "$data" -U "$superuser" --auth=trust --encoding=UTF8 \
            --locale=C >"$base/initdb.log" 2>&1 || die "initdb failed; see $base/initdb.log"
    fi
    make_certs
    if running; then
        url
        return 0
    fi
    local port=${SLUICE_PG_TEST_PORT:-55432} last
    last=$((port + 100))
    # The probe can race another server that is still releasing a port, so a
    # start that fails to bind moves on to the next port instead of failing.
    while :; do
        while port_in_use "$port"; do
            port=$((port + 1))
            ((port < last)) || die "no free port in ${SLUICE_PG_TEST_PORT:-55432}..$last"
        done
        # Sockets off: TCP on loopback only, so nothing depends on /var/run.
        # fsync off: a test server trades crash safety for speed.
        if as_user "$bindir/pg_ctl" -D "$data" -l "$log" -w -t 60 \
            -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c ssl=on -c ssl_cert_file=$tls/server.pem -c ssl_key_file=$tls/server.key" \
            start >/dev/null; then
            break
        fi
        if tail -n 20 "$log" | grep -q "could not create any TCP/IP sockets" && ((port + 1 < last)); then
            port=$((port + 1))
            continue
        fi
        tail -n 20 "$log" >&2 || true
        die "server did not start; see $log"
    done
    echo "$port" >"$port_file"
    local psql=("$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U "$superuser" -d postgres -v ON_ERROR_STOP=1)
    if [[ $("${psql[@]}" -tAc "SELECT 1 FROM pg_database WHERE datname = '$database'") != 1 ]]; then
        "${psql[@]}" -c "CREATE DATABASE $database" >/dev/null
    fi
    url
}

# Sets `bouncer` to the PgBouncer binary, installing it when missing.
ensure_bouncer() {
    bouncer=$(command -v pgbouncer || ls /usr/sbin/pgbouncer 2>/dev/null) && return 0
    [[ $(id -u) -eq 0 ]] || die "pgbouncer is not installed (Debian/Ubuntu: sudo apt-get install -y pgbouncer)"
    say "installing PgBouncer (apt-get install pgbouncer)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq pgbouncer >&2
    bouncer=$(command -v pgbouncer || ls /usr/sbin/pgbouncer 2>/dev/null) || die "pgbouncer still not found"
}

# A PgBouncer in pool mode $1 in front of the running server, installed
# when missing (as root); prints its URL. Trust authentication, loopback.
pooler() {
    local mode=${1:-} dir port
    [[ $mode == session || $mode == transaction ]] || die "usage: $0 pooler session|transaction"
    [[ -f $port_file ]] || die "not running; run: scripts/postgres-test-server.sh start"
    ensure_bouncer
    choose_user
    dir=$base/pooler-$mode
    mkdir -p "$dir"
    [[ -z $run_as ]] || chown "$run_as" "$dir"
    if [[ -f $dir/port ]] && port_in_use "$(cat "$dir/port")"; then
        echo "postgres://$superuser@127.0.0.1:$(cat "$dir/port")/$database"
        return 0
    fi
    port=$(( $(cat "$port_file") + 1000 ))
    while port_in_use "$port"; do port=$((port + 1)); done
    printf '"%s" ""\n' "$superuser" >"$dir/users.txt"
    cat >"$dir/pgbouncer.ini" <<INI
[databases]
$database = host=127.0.0.1 port=$(cat "$port_file") dbname=$database
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = $mode
max_client_conn = 200
default_pool_size = 20
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
    [[ -z $run_as ]] || chown "$run_as" "$dir"/*
    as_user "$bouncer" -d "$dir/pgbouncer.ini" || die "pgbouncer did not start; see $dir/pgbouncer.log"
    for _ in $(seq 50); do port_in_use "$port" && break; sleep 0.1; done
    port_in_use "$port" || die "pgbouncer is not listening; see $dir/pgbouncer.log"
    echo "$port" >"$dir/port"
    echo "postgres://$superuser@127.0.0.1:$port/$database"
}

stop_poolers() {
    local pid
    for pid in "$base"/pooler-*/pgbouncer.pid; do
        [[ -f $pid ]] && kill "$(cat "$pid")" 2>/dev/null || true
        rm -f "$pid" "$(dirname "$pid")/port"
    done
}

stop() {
    stop_poolers
    if ! bindir=$(find_bindir); then return 0; fi
    choose_user
    if running; then
        as_user "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null
        say "stopped"
    fi
    rm -f "$port_file"
}

case ${1:-} in
    install) ensure_bindir; ensure_bouncer; say "server binaries in $bindir, PgBouncer at $bouncer" ;;
    start) start ;;
    pooler) pooler "${2:-}" ;;
    stop) stop ;;
    url) url ;;
    ca) ca ;;
    clean) stop; rm -rf "$base" ;;
    *) die "usage: $0 install|start|stop|url|ca|pooler MODE|clean" ;;
esac

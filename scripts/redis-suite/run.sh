#!/usr/bin/env bash
# Runs Redis 7.0's own test suite (from Debian's `redis` source package)
# against `thicket serve` in external mode, one unit at a time, each against
# a fresh server over a new store, and prints the pass counts per unit.
#
# usage: scripts/redis-suite/run.sh [UNIT...]     (default: the units below)
# env:   THICKET_BIN   the thicket binary (default: target/release/thicket,
#                      built when missing)
#        REDIS_SUITE_DIR  where the source package is kept
#                      (default: ~/.cache/thicket/redis-suite)
#        REDIS_SUITE_MIN  fail unless at least this many tests pass in total
#
# Needs `tclsh` (apt-get install tcl) and deb-src entries for apt
# (`apt-get source` fetches the package; no root needed for that).
# Tests the server cannot pass by design are skipped by name
# (`skip.txt`, reasons in docs/server.md, "Redis's test suite"), and tests
# tagged needs:debug, needs:repl, needs:save, needs:config-maxmemory are
# left out by tag.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
units=("$@")
if [ ${#units[@]} -eq 0 ]; then
    units=(unit/type/string unit/type/incr unit/type/hash unit/type/set unit/type/zset
        unit/type/list unit/expire unit/keyspace unit/scan unit/multi)
fi

cache="${REDIS_SUITE_DIR:-$HOME/.cache/thicket/redis-suite}"
mkdir -p "$cache"
src="$(find "$cache" -maxdepth 1 -type d -name 'redis-7.0.*' | sort | tail -1)"
if [ -z "$src" ]; then
    (cd "$cache" && apt-get source --download-only redis >/dev/null) || {
        echo "error: apt-get source redis failed; add deb-src entries (Types: deb deb-src) and run apt-get update" >&2
        exit 2
    }
    tarball="$(find "$cache" -maxdepth 1 -name 'redis_7.0.*.orig.tar.gz' | sort | tail -1)"
    [ -n "$tarball" ] || { echo "error: no redis 7.0 source in $cache" >&2; exit 2; }
    tar -xzf "$tarball" -C "$cache"
    src="$(find "$cache" -maxdepth 1 -type d -name 'redis-7.0.*' | sort | tail -1)"
fi
# The one change to Redis's harness: in external mode it runs `FUNCTION
# FLUSH` before every test file, and the server has no functions (Lua is
# outside its data model), so a refusal there must not abort the file.
sed -i 's/^    r function flush$/    catch {r function flush}/' "$src/tests/support/server.tcl"
command -v tclsh >/dev/null || { echo "error: tclsh missing (apt-get install tcl)" >&2; exit 2; }

bin="${THICKET_BIN:-$root/${CARGO_TARGET_DIR:-target}/release/thicket}"
if [ ! -x "$bin" ]; then
    (cd "$root" && cargo build --release -p thicket-cli)
fi

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

start_server() {
    rm -rf "$work/db" "$work/out"
    "$bin" serve --db "$work/db" --listen 127.0.0.1:0 >"$work/out" 2>"$work/err" &
    server_pid=$!
    for _ in $(seq 100); do
        if grep -q '^listening on ' "$work/out" 2>/dev/null; then
            port="$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$work/out")"
            return 0
        fi
        sleep 0.1
    done
    echo "error: thicket serve did not start" >&2
    cat "$work/err" >&2
    exit 2
}

stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}

total_ok=0
total_failed=0
printf '%-18s %6s %6s %6s %6s\n' unit passed failed errors skipped
for unit in "${units[@]}"; do
    start_server
    log="$work/$(echo "$unit" | tr / _).log"
    (
        cd "$src"
        timeout 900 tclsh tests/test_helper.tcl --host 127.0.0.1 --port "$port" --singledb \
            --durable --single "$unit" --skipfile "$here/skip.txt" \
            --tags -needs:debug --tags -needs:repl --tags -needs:save \
            --tags -needs:config-maxmemory >"$log" 2>&1
    ) || true
    stop_server
    # Without the colour codes the harness puts around the verdicts.
    sed -i 's/\x1b\[[0-9;]*m//g' "$log"
    ok=$(grep -c '^\[ok\]' "$log" || true)
    err=$(grep -c '^\[err\]' "$log" || true)
    exc=$(grep -c '^\[exception\]' "$log" || true)
    skipped=$(grep -c '^\[skip\]' "$log" || true)
    printf '%-18s %6d %6d %6d %6d\n' "$unit" "$ok" "$err" "$exc" "$skipped"
    total_ok=$((total_ok + ok))
    total_failed=$((total_failed + err + exc))
    if [ -n "${REDIS_SUITE_VERBOSE:-}" ]; then
        grep -E '^\[(err|exception)\]' -A 3 "$log" || true
    fi
    cp "$log" "${REDIS_SUITE_LOGS:-$work}/" 2>/dev/null || true
done
printf '%-18s %6d %6d\n' total "$total_ok" "$total_failed"
if [ -n "${REDIS_SUITE_MIN:-}" ] && [ "$total_ok" -lt "$REDIS_SUITE_MIN" ]; then
    echo "error: $total_ok tests passed, fewer than REDIS_SUITE_MIN=$REDIS_SUITE_MIN" >&2
    exit 1
fi

#!/usr/bin/env bash
# CI for thicket-server (`thicket serve`): installs Redis's tools and
# twemproxy, runs the tests that need them (replies diffed against
# redis-server through redis-cli and the redis crate, redis-benchmark and an
# RSS soak, SIGKILL crash loops, three shards behind twemproxy), runs
# Redis 7.0's own test suite against the server (scripts/redis-suite; needs
# deb-src entries for apt-get source). The request parser's fuzz target runs
# with the others in .ci/fuzz.sh. Run from .ci/run after the workspace
# tests; about 4-6 minutes on 2 cores.
set -euo pipefail

cd "$(dirname "$0")/.."

if [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi

need_install=""
for tool in redis-server redis-cli redis-benchmark nutcracker tclsh; do
    if ! command -v "$tool" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$tool" ]; then
        need_install=1
    fi
done
if [ -n "$need_install" ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends \
        redis-server redis-tools nutcracker tcl
fi
PATH="$PATH:/usr/sbin"

target_dir="${CARGO_TARGET_DIR:-target}"
# `--workspace` in both: after the README's test command and
# `.ci/bindings.sh` nothing is rebuilt (with `-p`, cargo resolves the
# features of one package and recompiles the engine and its dependencies).
cargo build --release --workspace
THICKET_BIN="$(realpath "$target_dir/release/thicket")" \
    cargo test --release --workspace --test external -- --ignored --test-threads 1

# Redis's own tests, in external mode, one unit per fresh server. The floor
# is the pass count this tree reached (docs/server.md, "Redis's test
# suite"); fewer passes mean a regression.
REDIS_SUITE_VERBOSE=1 THICKET_BIN="$(realpath "$target_dir/release/thicket")" REDIS_SUITE_MIN="${REDIS_SUITE_MIN:-643}" \
    scripts/redis-suite/run.sh

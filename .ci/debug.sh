#!/usr/bin/env bash
# The checks a release build compiles out (issue 39): the model, fault,
# YoDB, power-loss and process crash tests built with the test profile,
# so with debug assertions, integer-overflow checks and the lock-order
# checker (`db/lsm/lock_order.rs`, compiled in with debug assertions);
# then Miri over the memtable's `unsafe` code (`memtable/miri_tests.rs`).
# The sizes are cut to fit CI's budget (docs/reliability.md): the release
# run of the same suites runs them in full.
set -euo pipefail

cd "$(dirname "$0")/.."

step() { echo "=== debug.sh [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }

step "engine suites with debug assertions and the lock-order checker"
THICKET_MODEL_OPS=1500 cargo test -p thicketdb \
    --test model --test fault --test yodb --test triad_fault --test power_loss
step "process crash tests with debug assertions"
THICKET_CRASH_CYCLES=3 cargo test -p thicket-cli --test crash

step "Miri over the memtable"
if ! rustup +nightly component list --installed 2>/dev/null | grep -q '^miri'; then
    rustup toolchain install nightly --profile minimal --component miri,rust-src
fi
cargo +nightly miri test -p thicketdb --lib memtable::miri_tests
step done

#!/usr/bin/env bash
# The benchmark cross-check (docs/benchmarks.md, "Cross-check"): the
# driver's throughput ratios thicket/rocksdb and thicket/fjall against a
# minimal direct loop's, on a small store, for settled random reads
# (fillrandom's spread on a shared machine exceeds the tolerance). Fails when they differ by more
# than the tolerance. Needs the `peers` build that `.ci/run` makes before
# calling this (the bench integration test builds it).
set -euo pipefail

cd "$(dirname "$0")/.."

thicket="${CARGO_TARGET_DIR:-target}/release/thicket"
if [ ! -x "$thicket" ]; then
    cargo build --release -p thicket-cli --features peers
fi

check_dir="$(mktemp -d)"
trap 'rm -rf "$check_dir"' EXIT
crosscheck() {
    rm -rf "$check_dir/stores"
    "$thicket" bench crosscheck --db "$check_dir/stores" \
        --engine thicket,rocksdb,fjall --workload readrandom \
        --num 200000 --write-buffer-mb 8 --cache-mb 64 --rounds 5 --settle
}
# A busy machine can push a run past the tolerance (seen here: +100% with
# a build beside it, then -9% on the next run): up to three fresh runs, and
# CI fails only when all three do. A driver that really flatters an engine
# fails every one.
for attempt in 1 2 3; do
    if crosscheck; then
        exit 0
    fi
    echo "cross-check: run $attempt outside the tolerance"
done
echo "cross-check: three runs outside the tolerance" >&2
exit 1

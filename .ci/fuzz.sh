#!/usr/bin/env bash
# Every fuzz target (the engine's decoders and the server's request parser)
# for a few seconds each: CI's smoke form. Longer campaigns and crash
# reproduction: crates/thicketdb/fuzz/README.md (cargo-fuzz).
#
# Built here the way `cargo fuzz run -O -a` builds (the same sanitizer and
# coverage flags, nightly for AddressSanitizer), but with plain cargo: CI
# then needs no cargo-fuzz install, and both fuzz projects share one target
# directory, so their common dependencies compile once.
set -euo pipefail

cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-10}"
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"

if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
host="$(rustc -vV | sed -n 's/^host: //p')"

# cargo-fuzz's flags for `-O -a` (release, debug assertions) with ASan.
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Zsanitizer=address \
-Cdebug-assertions -Coverflow-checks"
export ASAN_OPTIONS="detect_odr_violation=0"
export CARGO_TARGET_DIR="$target/fuzz"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for project in crates/thicketdb/fuzz crates/thicket-server/fuzz; do
    (
        cd "$project"
        # `--target`: build scripts and proc macros stay uninstrumented.
        cargo +nightly build --release --target "$host" --bins
        for fuzz_target in $(awk -F'"' '/^\[\[bin\]\]/ { bin = 1 } bin && /^name = / { print $2; bin = 0 }' Cargo.toml); do
            # New inputs go to a scratch corpus; the committed seeds are
            # only read. A target without seeds starts from an empty one.
            mkdir -p "$scratch/$fuzz_target" "corpus/$fuzz_target"
            "$CARGO_TARGET_DIR/$host/release/$fuzz_target" "$scratch/$fuzz_target" \
                "corpus/$fuzz_target" -max_total_time="$seconds" -timeout=10 \
                -rss_limit_mb=2048 -artifact_prefix="$scratch/crash-$fuzz_target-"
        done
    )
done

#!/usr/bin/env bash
# Builds the benchmark peers' RocksDB (the C++ that librocksdb-sys bundles,
# CI's longest compile) into DIR/lib/librocksdb.a, in a project and target
# directory of its own. .ci/run starts it first, at the lowest priority, so
# it takes the CPU the other steps leave idle instead of running alone
# later; its own target directory keeps it off the workspace's build lock.
# The peers build then links it (ROCKSDB_LIB_DIR, ROCKSDB_STATIC) instead of
# compiling it.
#
# The version and features come from the workspace's own resolution of
# `thicket-cli/peers` (cargo metadata), and the workspace's Cargo.lock pins
# every dependency, so the library is the one the peers build would compile.
# At -O1 by default: CI compares RocksDB only with itself (the bench test,
# the cross-check's ratios), and -O1 compiles faster than -O3. Benchmark
# figures need RocksDB's own release build: pass 3 as OPT_LEVEL.
#
# Usage: .ci/rocksdb-prebuild.sh DIR [OPT_LEVEL]
set -euo pipefail

out="$1"
opt_level="${2:-1}"
cd "$(dirname "$0")/.."
mkdir -p "$out/src" "$out/lib"
out="$(cd "$out" && pwd)"

cargo metadata --format-version 1 --features thicket-cli/peers | python3 -c '
import json, sys
opt_level = sys.argv[1]
meta = json.load(sys.stdin)
node = next(n for n in meta["resolve"]["nodes"] if "librocksdb-sys@" in n["id"])
package = next(p for p in meta["packages"] if p["id"] == node["id"])
features = ", ".join(f"\"{f}\"" for f in node["features"])
print(f"""[package]
name = "rocksdb-prebuild"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
librocksdb-sys = {{ version = "={package["version"]}", default-features = false, features = [{features}] }}

[profile.release.package.librocksdb-sys]
debug = 0
opt-level = {opt_level}""")
' "$opt_level" >"$out/Cargo.toml"
: >"$out/src/lib.rs"
cp Cargo.lock "$out/Cargo.lock"

(cd "$out" && cargo build --release --target-dir "$out/target")
library="$(find "$out/target/release/build" -name librocksdb.a -path '*librocksdb-sys-*' | head -n 1)"
if [ -z "$library" ]; then
    echo "rocksdb-prebuild: no librocksdb.a under $out/target" >&2
    exit 1
fi
cp "$library" "$out/lib/librocksdb.a"

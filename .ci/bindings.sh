#!/usr/bin/env bash
# Bindings CI (issue 20): the LevelDB-compatible C API under AddressSanitizer
# and the Python package built with maturin and tested with pytest.
# Runs after `cargo test --workspace --release`, whose release build of the
# engine `cargo build -p thicket-c` reuses. Measured on 2 cores: 2m12s with
# the machine otherwise idle, 5m27s-7m56s while other builds loaded it.
set -euo pipefail

cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
# Debian's python3 lacks ensurepip (so venv) until python3-venv is installed.
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then need_apt+=(python3-venv); fi
if [ "${#need_apt[@]}" -gt 0 ]; then
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need_apt[@]}"
fi

echo "=== C API: build libthicket and run the C test under AddressSanitizer"
cargo build --release -p thicket-c
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The headers must also parse as C++ (LevelDB's do).
c++ -fsyntax-only -x c++ -Iinclude - <<<'#include <leveldb/c.h>'
cc -std=c99 -Wall -Wextra -Werror -g -fsanitize=address -fno-omit-frame-pointer \
    -Iinclude crates/thicket-c/tests/c_test.c "$target/release/libthicket.a" \
    -lpthread -ldl -lm -o "$work/c_test_asan"
TEST_TMPDIR="$work/tmp" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$work/c_test_asan"
# The same program linked dynamically, as an existing LevelDB program would
# be with -lthicket.
cc -std=c99 -O1 -Iinclude crates/thicket-c/tests/c_test.c -L"$target/release" -lthicket \
    -o "$work/c_test_shared"
TEST_TMPDIR="$work/tmp" LD_LIBRARY_PATH="$target/release" "$work/c_test_shared"

echo "=== Python: pip install ./crates/thicket-py (maturin) and pytest"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --upgrade pip
"$work/venv/bin/pip" install --quiet pytest
# The README's install command; maturin comes from PyPI as the build backend.
CARGO_TARGET_DIR="$target/py" "$work/venv/bin/pip" install --quiet ./crates/thicket-py
(cd "$work" && "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
    "$OLDPWD/crates/thicket-py/tests")
# The package's own Rust unit tests and lints (it is outside the workspace).
# --release shares the build scripts and dependencies of the wheel's build.
(cd crates/thicket-py \
    && CARGO_TARGET_DIR="$target/py" cargo clippy --release --all-targets -- -D warnings \
    && cargo fmt --check \
    && CARGO_TARGET_DIR="$target/py" cargo test --release)

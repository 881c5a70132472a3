#!/usr/bin/env bash
# Bindings CI (issue 20): the LevelDB-compatible C API under AddressSanitizer
# (our C test, and LevelDB's own db/c_test.c from Debian's leveldb 1.23
# source package, unmodified) and the Python package built with maturin and
# tested with pytest.
# Runs after `cargo test --workspace --release`. A test build makes no
# libthicket.so, so the workspace is built once more; `crates/workspace-hack`
# gives it the test build's features, so it reuses the engine and compiles
# little more than thicket-c's libraries (with `-p thicket-c`, cargo would
# resolve one package's features and recompile the engine).
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
command -v dpkg-source >/dev/null 2>&1 || need_apt+=(dpkg-dev)
if [ "${#need_apt[@]}" -gt 0 ]; then
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need_apt[@]}"
fi

# LevelDB's own C API test, from the source package Debian ships (1.23,
# the API libthicket implements). `apt-get source` needs deb-src lines:
# when apt has none, they are added beside the deb lines (same mirrors,
# suites and key) in a file of our own. The unpacked source is kept in the
# target directory, so later runs fetch nothing.
leveldb_version="1.23-4"
leveldb_src="$target/leveldb-src"
leveldb_c_test="$leveldb_src/leveldb-1.23/db/c_test.c"
if [ ! -f "$leveldb_c_test" ]; then
    if ! apt-cache showsrc leveldb 2>/dev/null | grep -q '^Package: leveldb$'; then
        src_list=/etc/apt/sources.list.d/thicket-deb-src.sources
        if [ -f /etc/apt/sources.list.d/debian.sources ]; then
            sed -e 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
                | $SUDO tee "$src_list" >/dev/null
        else
            src_list=/etc/apt/sources.list.d/thicket-deb-src.list
            grep -h '^deb ' /etc/apt/sources.list | sed -e 's/^deb /deb-src /' \
                | $SUDO tee "$src_list" >/dev/null
        fi
        $SUDO apt-get update
    fi
    rm -rf "$leveldb_src"
    mkdir -p "$leveldb_src"
    # The pinned version where the archive has it, else whatever leveldb
    # source it has, which must still be 1.23 (checked below).
    (cd "$leveldb_src" && { apt-get source "leveldb=$leveldb_version" || apt-get source leveldb; })
    if [ ! -f "$leveldb_c_test" ]; then
        echo "apt-get source leveldb gave no leveldb-1.23/db/c_test.c" >&2
        exit 1
    fi
fi

echo "=== C API: build libthicket and run the C tests under AddressSanitizer"
cargo build --release --workspace
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The shared library's SONAME is libthicket.so.1 (crates/thicket-c/build.rs):
# programs linked with -lthicket load that name.
if ! readelf -d "$target/release/libthicket.so" | grep -q 'SONAME.*\[libthicket\.so\.1\]'; then
    echo "libthicket.so lacks the SONAME libthicket.so.1" >&2
    exit 1
fi
mkdir -p "$work/lib"
ln -s "$target/release/libthicket.so" "$work/lib/libthicket.so.1"
# The headers must also parse as C++ (LevelDB's do).
c++ -fsyntax-only -x c++ -Iinclude - <<<'#include <leveldb/c.h>'
cc -std=c99 -Wall -Wextra -Werror -g -fsanitize=address -fno-omit-frame-pointer \
    -Iinclude crates/thicket-c/tests/c_test.c "$target/release/libthicket.a" \
    -lpthread -ldl -lm -o "$work/c_test_asan"
TEST_TMPDIR="$work/tmp" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$work/c_test_asan"
# LevelDB's test, as LevelDB builds it (C, its own warnings), under ASan.
cc -Wall -g -fsanitize=address -fno-omit-frame-pointer -Iinclude "$leveldb_c_test" \
    "$target/release/libthicket.a" -lpthread -ldl -lm -o "$work/leveldb_c_test_asan"
TEST_TMPDIR="$work/tmp-leveldb" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    "$work/leveldb_c_test_asan"
# Both programs linked dynamically, as an existing LevelDB program would be
# with -lthicket.
cc -std=c99 -O1 -Iinclude crates/thicket-c/tests/c_test.c -L"$target/release" -lthicket \
    -o "$work/c_test_shared"
TEST_TMPDIR="$work/tmp" LD_LIBRARY_PATH="$work/lib" "$work/c_test_shared"
cc -O1 -Iinclude "$leveldb_c_test" -L"$target/release" -lthicket -o "$work/leveldb_c_test_shared"
TEST_TMPDIR="$work/tmp-leveldb" LD_LIBRARY_PATH="$work/lib" "$work/leveldb_c_test_shared"

echo "=== Python: pip install ./crates/thicket-py (maturin) and pytest"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --upgrade pip
"$work/venv/bin/pip" install --quiet pytest
# The README's install command; maturin comes from PyPI as the build backend.
# The package is a workspace member: with the workspace's target directory
# the wheel's build reuses the dependencies built above, and its Rust lints
# and unit tests ran with the workspace's.
CARGO_TARGET_DIR="$target" "$work/venv/bin/pip" install --quiet ./crates/thicket-py
(cd "$work" && "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
    "$OLDPWD/crates/thicket-py/tests")

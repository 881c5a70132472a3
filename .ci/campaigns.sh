#!/usr/bin/env bash
# The reliability campaigns' quick forms (issue 37; docs/reliability.md,
# "Campaigns"): each script runs a short bounded round, so none of them
# rots. The long runs are by hand, in slices. About 3 minutes on 2 cores.
#
#   THICKET=path/to/thicket .ci/campaigns.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${THICKET:-}" ]; then
    cargo build --release -p thicket-cli
    THICKET="${CARGO_TARGET_DIR:-target}/release/thicket"
fi
export THICKET
if ! command -v fiu-run >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends fiu-utils
fi

step() { echo "--- [$((SECONDS / 60))m$((SECONDS % 60))s] campaigns: $*"; }
step soak
scripts/soak --quick
step fault campaign
scripts/fault-campaign --quick
step corruption campaign
scripts/corruption-campaign --quick
step server abuse
scripts/server-abuse --quick
# The fuzz targets are built by .ci/fuzz.sh before: this only checks the
# campaign script runs them all (a second each).
step fuzz campaign
scripts/fuzz-campaign --quick --out "$(mktemp -d)"
step done

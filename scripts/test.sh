#!/usr/bin/env bash
# Installs what chopper needs, builds it with warnings as errors, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHOPPER_WERROR=ON >/dev/null
cmake --build build
# CHOPPER_CTEST_JUNIT=FILE: also write ctest's JUnit report there (.ci/run checks its skips).
ctest --test-dir build --output-on-failure -j"$(nproc)" ${CHOPPER_CTEST_JUNIT:+--output-junit "$CHOPPER_CTEST_JUNIT"}

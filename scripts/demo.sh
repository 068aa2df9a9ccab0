#!/usr/bin/env bash
# Installs what chopper needs, builds it, and runs its main job on the built-in example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target chopper >/dev/null
./build/src/chopper demo -o "${1:-chopper-demo}"

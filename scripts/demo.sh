#!/usr/bin/env bash
# Installs what chopper needs, builds it, and runs its main job on the built-in example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# The Python module too, when CMake found pybind11 (install-deps.sh installs it): docs/python.md
targets=(chopper)
if cmake --build build --target help | grep -q '^chopper_python'; then targets+=(chopper_python); fi
cmake --build build --target "${targets[@]}" >/dev/null
./build/src/chopper demo -o "${1:-chopper-demo}"

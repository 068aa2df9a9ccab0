#!/usr/bin/env bash
# Installs the Debian packages chopper builds and tests with. Safe to run again.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
PKGS=(
  build-essential cmake ninja-build pkg-config
  libsimdjson-dev libisal-dev libzstd-dev libfmt-dev libcli11-dev
  libsqlite3-dev libtomlplusplus-dev libre2-dev
  # Chakra execution traces (chopper chakra, chopper info x.et): libprotobuf and protoc; Python's
  # protobuf for the test that decodes the written files independently (chakra_python_decode)
  libprotobuf-dev protobuf-compiler python3-protobuf
  libgtest-dev libgmock-dev libbenchmark-dev
  # Open MPI: one command on several processes under mpirun (built in when found, CHOPPER_MPI)
  libopenmpi-dev openmpi-bin
  # What the tests run besides chopper (a test whose tool is missing is skipped, and CI fails on
  # a skip): zstd and pzstd (hostile_cli_pzstd), sqlite3 (hostile_cli_corrupt_first_byte),
  # python3 (the schema, report and comparison checks, mpi_tables_identical)
  zstd sqlite3 python3
  # The Python module (src/python/, docs/python.md) and its tests: pybind11, Python's headers,
  # numpy, pandas, pytest, matplotlib (the docs' figure), all Debian's
  pybind11-dev python3-pybind11 python3-dev python3-numpy python3-pandas python3-pytest
  python3-matplotlib
)
if [ "${1:-}" = "--ci" ]; then
  PKGS+=(clang libclang-rt-14-dev clang-format)
  # The HTML report is rendered in headless Chromium by the test report_browser (about 290 MB
  # installed; the test skips, saying so, without it; .ci/run allows that skip only when no
  # chromium is installed).
  PKGS+=(chromium)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

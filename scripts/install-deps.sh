#!/usr/bin/env bash
# Installs the Debian 12 packages statewatch builds and tests with, only when one is missing:
# the compiler and libraries (RocksDB 7.8, FlatBuffers 2.0.8, Boost 1.81, spdlog, GoogleTest,
# Google Benchmark, OpenSSL's libcrypto, SQLite for the baseline) plus the tools the test
# suite and benchmarks use (ccache, curl, wrk, a Python WebSocket client, gnuplot) and
# Node.js 18+ with npm for the TypeScript client (clients/typescript) and the operator
# console's build (console/), and Chromium for the console's browser test.
set -euo pipefail

PACKAGES=(
  cmake g++ make pkg-config ccache
  librocksdb-dev rocksdb-tools libflatbuffers-dev flatbuffers-compiler
  libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev
  libboost1.81-dev libboost-json1.81-dev libssl-dev
  libsqlite3-dev sqlite3 curl python3 python3-websocket wrk
  # the TypeScript client's TLS test makes its CA with the openssl command
  openssl
  # the session -> partition hash (engine/agent_partition.cc)
  libxxhash-dev
  # cluster mode: JetStreamLog's C client and the servers its tests start (2.9.10, 3.4.1)
  nats-server libnats-dev
  # cluster stage 2a: the control plane (leases, the controller, assignments) and etcdctl
  etcd-server etcd-client
  # the fuzz target of make test: clang with libFuzzer and the sanitizer runtimes
  clang-14 libclang-rt-14-dev
  # make package / test-package: dpkg-shlibdeps for the package's Depends (CPack), and
  # systemd-analyze, systemd-sysusers, systemd-tmpfiles and man for checking the unit
  # (no running systemd is needed)
  dpkg-dev systemd man-db
  # make bench's plot. Not python3-matplotlib: it pulls libboost1.74-dev, which conflicts
  # with libboost1.81-dev.
  gnuplot-nox
  # promtool (scripts/test-metrics.sh lints GET /metrics); the package's server is not used
  prometheus
  # the operator console's browser test (scripts/test-console.sh): playwright-core drives
  # Debian's Chromium, not a browser of its own download
  chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js and npm: Debian's nodejs + npm packages, unless a node and an npm are already on
# the PATH (an image may bring its own build of Node.js, whose package already contains npm
# and would conflict with Debian's npm).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"

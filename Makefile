# statewatch — the two commands of the README, plus benchmarks.
#   make run    install what is missing, build the binary only, start statewatch on ./data
#   make test   install what is missing, build, run the whole suite (the unit suite under
#               ASan/UBSan; the cluster smoke, the TypeScript client and the other end-to-end
#               checks against the plain binary), then 200,000 seeded fuzz runs (clang,
#               build-fuzz); never builds the benchmarks nor the plain unit suite (make test-plain)
#   make package  the Debian package of build/'s binary (build-package/*.deb; also checked
#               by make test)
#   make fuzz   explore with the fuzz target for 10 min from a random seed
#   make bench  Release build, run the benchmarks, write bench/results/
#   make cluster-bench  JetStreamLog on a loopback R3 cluster, plain and sync-mounted (root),
#               then make cluster-failover-bench
#   make cluster-smoke  two partitions: owners, standbys, takeovers, zombie, NATS leader
#               kill, checker against the reference model (~1 min; also run by make test)
#   make cluster-drain-faults  drains under a refusal, SIGSTOP, kill -9: none lost (~45 s;
#               also run by make test)
#   make bench-node  better-sqlite3 (the reference design) against the daemon through the
#               TypeScript client, in one Node process (~5 min)
#   make soak   the kill -9 soak of the daemon, 1000 rounds (not part of make test)
#   make cluster-up DIR=...       a local stage-2a cluster (3 etcd, 3 nats, 3 nodes) that
#               keeps running; make cluster-down DIR=... stops it
#   make cluster-chaos  seeded faults against a local cluster for 10 min (SEED=, CHAOS_SECONDS=);
#               make test runs the same for 60 s with seed 1
#   make cluster-failover-bench  kill -9 failover and planned-move stalls at TTL 5 and 2 s,
#               20 trials each, and the control plane's cost per event (~15 min)
JOBS ?= 2
BUILD ?= build
ASAN_BUILD ?= build-asan
BENCH_BUILD ?= build-release
FUZZ_BUILD ?= build-fuzz
PACKAGE_BUILD ?= build-package
# Evaluated by the shell when a recipe runs, i.e. after `deps` has installed ccache: a
# make-time $(shell command -v ccache) on a fresh machine would find nothing.
CMAKE_COMMON = -DCMAKE_CXX_COMPILER_LAUNCHER="$$(command -v ccache || true)"

.PHONY: deps configure build build-bin build-asan build-release test test-plain test-asan \
        test-client test-client-install test-package package test-cluster test-fuzz fuzz run \
        bench cluster-bench cluster-smoke cluster-drain-faults soak test-openapi test-no-sanitizer \
        clean format openapi cluster-up cluster-down cluster-chaos cluster-failover-bench \
        cluster-one-api cluster-forward-bench cluster-scaling-bench test-metrics test-console test-webhooks test-guards \
        test-doc-examples \
        bench-webhooks

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTATEWATCH_BUILD_BENCH=OFF \
	  $(CMAKE_COMMON) >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

build-bin: configure
	@cmake --build $(BUILD) -j$(JOBS) --target statewatch_bin

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSTATEWATCH_SANITIZE=ON \
	  -DSTATEWATCH_BUILD_BENCH=OFF $(CMAKE_COMMON) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)

build-release: deps
	@cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DSTATEWATCH_BUILD_TESTS=ON \
	  $(CMAKE_COMMON) >/dev/null
	@cmake --build $(BENCH_BUILD) -j$(JOBS) --target statewatch_bench statewatch_bin \
	  cluster_engine_measure

# The unit suite of the optimised build. make test runs the suite once, under ASan + UBSan
# (test-asan: a Debug build, assertions on), and every end-to-end check against this build's
# binary; running the whole suite twice had CI at 88 of its 90 minutes. This target is for a
# failure that shows only optimised.
test-plain: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# What make test runs of the plain suite: the tests labelled no-sanitizer, which need no test
# binary built.
test-no-sanitizer: configure
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -L no-sanitizer

# STATEWATCH_UNSANITIZED_BIN: the plain build's daemon, for the one test whose daemon runs out
# of file descriptors, which the sanitizer runtime itself cannot (connection_limits_test.cc).
test-asan: build-asan build-bin
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  STATEWATCH_UNSANITIZED_BIN=$(abspath $(BUILD))/statewatch \
	  ctest --output-on-failure -j$(JOBS) -LE no-sanitizer

# The TypeScript client against the real daemon of the plain build.
test-client: build-bin
	@bash scripts/test-client.sh $(BUILD)/statewatch

# The client installed as users do: from a checkout's path into scratch projects, used from
# .mjs and .cjs files against a daemon of the plain build.
test-client-install: build-bin
	@bash scripts/test-client-install.sh $(BUILD)/statewatch

# The Debian package of the plain build's binary (CPack, packaging/CMakeLists.txt: packs,
# never compiles): $(PACKAGE_BUILD)/statewatch_<version>_<arch>.deb.
package: build-bin
	@cmake --build $(BUILD) -j$(JOBS) --target statewatch_man
	@cmake -S packaging -B $(PACKAGE_BUILD) -DSTATEWATCH_BUILD_DIR="$(abspath $(BUILD))" >/dev/null
	@cmake --build $(PACKAGE_BUILD) --target package

# The package unpacked into a scratch root: the installed binary runs, the unit verifies and
# rates at most 3.0 with systemd-analyze, the maintainer scripts call adduser / deluser.
test-package: package
	@bash scripts/test-package.sh $(PACKAGE_BUILD)

# GET /metrics of the real daemon after a few writes and a refused one, linted by
# `promtool check metrics` (any problem fails).
test-metrics: build-bin
	@bash scripts/test-metrics.sh $(BUILD)/statewatch

# The loop guards and trace context against the real daemon: two sessions ping-ponging
# sessions_send as fast as they can are stopped within the configured budget (429
# loop_guard, guard_refused events, statewatch_guard_refusals_total); traceparent reaches the
# delivery feed (scripts/test-guards.py).
test-guards: build-bin
	@bash scripts/test-guards.sh $(BUILD)/statewatch

# The shell examples README.md and docs/ mark with <!-- example -->, run in order against a
# fresh daemon of the plain build, as a reader pastes them (scripts/test-doc-examples.py).
test-doc-examples: build-bin
	@python3 scripts/test-doc-examples.py $(BUILD)/statewatch

# MCP conformance (tests/mcp, scripts/test-mcp.sh): the official TypeScript SDK client,
# pinned by tests/mcp/package-lock.json, against the plain build's daemon over /mcp and
# through `statewatch mcp` over stdio.
.PHONY: test-mcp
test-mcp: build-bin
	@bash scripts/test-mcp.sh $(BUILD)/statewatch

# Notice webhooks end to end (docs/webhooks.md): the plain build's daemon against a receiver
# process that fails, times out and answers 500 on a seeded schedule, with a kill -9 of the
# daemon mid-delivery and a restart.
test-webhooks: build-bin
	@bash scripts/test-webhooks.sh $(BUILD)/statewatch

# Webhook deliveries per second to a local receiver (the plain build's daemon).
bench-webhooks: build-bin
	@bash scripts/bench-webhooks.sh $(BUILD)/statewatch

# The operator console (GET /console) in Debian's Chromium driven by playwright-core, against
# the plain build's daemon with seeded data (docs/console.md). console-screenshot runs the same
# test and saves the page as docs/console.png, the README's picture.
test-console: build-bin
	@bash scripts/test-console.sh $(BUILD)/statewatch

console-screenshot: build-bin
	@SCREENSHOT=$(CURDIR)/docs/console.png bash scripts/test-console.sh $(BUILD)/statewatch

# Three nats-servers, an owner and a standby daemon per partition of the plain build, and the
# reference model's notices for the checker (scripts/cluster-smoke.sh); then a short seeded
# chaos run against three nodes under etcd (stage 2a), half its writers going through the
# nodes' own ports (stage 2b), and the one-API comparison.
test-cluster: configure
	@cmake --build $(BUILD) -j$(JOBS) --target statewatch_bin cluster_smoke_model
	@bash scripts/cluster-smoke.sh $(BUILD)
	@STATEWATCH_BIN=$(BUILD)/statewatch STATEWATCH_MODEL=$(BUILD)/tests/cluster_smoke_model \
	  bash scripts/cluster-chaos.sh --seed 1 --seconds 60 --via-nodes
	@python3 scripts/cluster-one-api.py --statewatch $(BUILD)/statewatch --seed 1 --steps 400
	@STATEWATCH_BIN=$(BUILD)/statewatch bash scripts/cluster-drain-faults.sh

DIR ?= ./cluster
cluster-up: build-bin
	@STATEWATCH_BIN=$(BUILD)/statewatch bash scripts/cluster-up.sh $(DIR)

cluster-down:
	@bash scripts/cluster-up.sh $(DIR) --down

SEED ?= $$(date +%s)
CHAOS_SECONDS ?= 600
cluster-chaos: configure
	@cmake --build $(BUILD) -j$(JOBS) --target statewatch_bin cluster_smoke_model
	@STATEWATCH_BIN=$(BUILD)/statewatch STATEWATCH_MODEL=$(BUILD)/tests/cluster_smoke_model \
	  bash scripts/cluster-chaos.sh --seed $(SEED) --seconds $(CHAOS_SECONDS) --via-nodes

cluster-failover-bench: build-bin
	@mkdir -p bench/results
	@python3 scripts/cluster-failover-bench.py --statewatch $(BUILD)/statewatch --ttl 5 --ttl 2 \
	  --trials 20 --out bench/results/cluster-failover.json

# The one-API check with a random seed and more steps (make test runs seed 1, 400 steps).
ONE_API_STEPS ?= 3000
cluster-one-api: build-bin
	@python3 scripts/cluster-one-api.py --statewatch $(BUILD)/statewatch --seed $(SEED) \
	  --steps $(ONE_API_STEPS)

cluster-forward-bench: build-bin
	@mkdir -p bench/results
	@python3 scripts/cluster-forward-bench.py --statewatch $(BUILD)/statewatch --seconds 10 \
	  --rounds 3 --out bench/results/cluster-forward.json

cluster-scaling-bench: build-bin
	@mkdir -p bench/results
	@python3 scripts/cluster-scaling-bench.py --statewatch $(BUILD)/statewatch --partitions 12 \
	  --seconds 15 --out bench/results/cluster-scaling.json

cluster-smoke: test-cluster

# Issue 37 on a local cluster (3 nodes, 6 partitions): a drain of one watcher through a node
# while one target partition refuses its part (422 request_id_reused), while its owner is
# stopped (SIGSTOP) and while it is killed (kill -9) after applying the drain; each retried
# with the same X-Request-Id: every notice reaches the client exactly once
# (scripts/cluster-drain-faults.py).
cluster-drain-faults: build-bin
	@STATEWATCH_BIN=$(BUILD)/statewatch bash scripts/cluster-drain-faults.sh

test-fuzz: deps
	@FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) bash scripts/fuzz.sh check

fuzz: deps
	@FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) bash scripts/fuzz.sh explore

soak: deps
	@JOBS=$(JOBS) bash scripts/soak.sh $(BUILD)

test: test-openapi test-doc-examples test-no-sanitizer test-cluster test-client test-console test-metrics test-mcp test-webhooks test-guards test-client-install test-package test-asan test-fuzz

run: build-bin
	@bash scripts/run.sh $(BUILD)

bench: build-release
	@bash scripts/bench.sh $(BENCH_BUILD)

# Where the time of each cost goal goes: perf samples of the record, changesSince and
# concurrent benchmarks split by system (bench/perf_profile.sh, bench/fold_profile.py) ->
# bench/results/profiles/ (docs/benchmarks.md "Where the time goes").
.PHONY: bench-profile
bench-profile: build-release
	@for lane in 1 100000; do \
	  BENCH_RECORD_LANE=$$lane bash bench/perf_profile.sh batch100-buffered-$$lane '^record/batch100/buffered/' $(BENCH_BUILD) && \
	  BENCH_RECORD_LANE=$$lane bash bench/perf_profile.sh single-buffered-$$lane '^record/single/buffered/' $(BENCH_BUILD) && \
	  BENCH_RECORD_LANE=$$lane bash bench/perf_profile.sh batch100-sync-$$lane '^record/batch100/sync/' $(BENCH_BUILD) || exit 1; \
	done
	@FREQ=1999 bash bench/perf_profile.sh changes-page200 '^changes/page200' $(BENCH_BUILD)
	@FREQ=1999 bash bench/perf_profile.sh changes-lean-page200 '^changes_lean/page200' $(BENCH_BUILD)
	@BENCH_SCALE=1 bash bench/perf_profile.sh concurrent-8 '^concurrent/sync/writers:8/' $(BENCH_BUILD)

# What X-Request-Id costs a lone sequential client (bench/request_id_bench.sh; the plain
# build's binary): events/s with and without an id, alternating.
.PHONY: bench-request-id
bench-request-id: build-bin
	@bash bench/request_id_bench.sh $(BUILD)/statewatch

# A Node gateway's choice: the reference design on better-sqlite3 (built from source) beside
# the daemon through the TypeScript client, lanes taking turns in one Node process
# (bench/node/run.sh; the plain build's binary): prints the table, writes bench/results/node.json.
.PHONY: bench-node
bench-node: build-bin
	@bash bench/node/run.sh $(BUILD)/statewatch

# MCP tools/call req/s against the same call over plain HTTP, same daemon, same run
# (bench/mcp_bench.sh, wrk; the Release tree's binary): writes bench/results/mcp.json.
.PHONY: bench-mcp
bench-mcp: deps
	@cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_COMMON) >/dev/null
	@cmake --build $(BENCH_BUILD) -j$(JOBS) --target statewatch_bin
	@bash bench/mcp_bench.sh $(BENCH_BUILD)/statewatch

# A status as of a past sequence against a live one (bench/asof_bench.cc; Release tree):
# prints the table, writes bench/results/asof.json.
.PHONY: bench-asof
bench-asof: deps
	@cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DSTATEWATCH_BUILD_TESTS=ON \
	  $(CMAKE_COMMON) >/dev/null
	@cmake --build $(BENCH_BUILD) -j$(JOBS) --target statewatch_asof_bench
	@mkdir -p bench/results
	@$(BENCH_BUILD)/bench/statewatch_asof_bench --benchmark_repetitions=3 \
	  --benchmark_display_aggregates_only=true --benchmark_out=bench/results/asof.json \
	  --benchmark_out_format=json

cluster-bench: deps
	@bash scripts/cluster-bench.sh
	@$(MAKE) --no-print-directory cluster-failover-bench
	@$(MAKE) --no-print-directory cluster-forward-bench
	@$(MAKE) --no-print-directory cluster-scaling-bench

# Rewrites docs/openapi.json from the route table (a test fails while they differ), then the
# TypeScript client's types from it (clients/typescript/src/generated; its npm test fails
# while they differ).
openapi: configure
	@cmake --build $(BUILD) -j$(JOBS) --target statewatch_bin
	@$(BUILD)/statewatch openapi > docs/openapi.json
	@node clients/typescript/scripts/generate-types.mjs

# docs/openapi.json through Redocly CLI and Spectral, each on its recommended rules
# (redocly.yaml, .spectral.yaml): any error fails.
test-openapi: deps
	@bash scripts/openapi-lint.sh docs/openapi.json

format:
	@clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(BENCH_BUILD) $(FUZZ_BUILD) $(PACKAGE_BUILD)

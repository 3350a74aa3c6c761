# statewatch — the two commands of the README, plus benchmarks.
#   make run    install what is missing, build the binary only, start statewatch on ./data
#   make test   install what is missing, build, run the whole suite (plain + the cluster
#               smoke + ASan/UBSan + the TypeScript client), then 200,000 seeded fuzz runs
#               (clang, build-fuzz); never builds the benchmarks
#   make fuzz   explore with the fuzz target for 10 min from a random seed
#   make bench  Release build, run the benchmarks, write bench/results/
#   make cluster-bench  JetStreamLog on a loopback R3 cluster, plain and sync-mounted (root)
#   make cluster-smoke  two partitions: owners, standbys, takeovers, zombie, NATS leader
#               kill, checker against the reference model (~1 min; also run by make test)
#   make soak   the kill -9 soak of the daemon, 1000 rounds (not part of make test)
JOBS ?= 2
BUILD ?= build
ASAN_BUILD ?= build-asan
BENCH_BUILD ?= build-release
FUZZ_BUILD ?= build-fuzz
# Evaluated by the shell when a recipe runs, i.e. after `deps` has installed ccache: a
# make-time $(shell command -v ccache) on a fresh machine would find nothing.
CMAKE_COMMON = -DCMAKE_CXX_COMPILER_LAUNCHER="$$(command -v ccache || true)"

.PHONY: deps configure build build-bin build-asan build-release test test-plain test-asan \
        test-client test-cluster test-fuzz fuzz run bench cluster-bench cluster-smoke soak \
        clean format openapi

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

test-plain: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

test-asan: build-asan
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --output-on-failure -j$(JOBS) -LE no-sanitizer

# The TypeScript client against the real daemon of the plain build.
test-client: build-bin
	@bash scripts/test-client.sh $(BUILD)/statewatch

# Three nats-servers, an owner and a standby daemon per partition of the plain build, and the
# reference model's notices for the checker (scripts/cluster-smoke.sh).
test-cluster: configure
	@cmake --build $(BUILD) -j$(JOBS) --target statewatch_bin cluster_smoke_model
	@bash scripts/cluster-smoke.sh $(BUILD)

cluster-smoke: test-cluster

test-fuzz: deps
	@FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) bash scripts/fuzz.sh check

fuzz: deps
	@FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) bash scripts/fuzz.sh explore

soak: deps
	@JOBS=$(JOBS) bash scripts/soak.sh $(BUILD)

test: test-plain test-cluster test-client test-asan test-fuzz

run: build-bin
	@bash scripts/run.sh $(BUILD)

bench: build-release
	@bash scripts/bench.sh $(BENCH_BUILD)

cluster-bench: deps
	@bash scripts/cluster-bench.sh

# Rewrites docs/openapi.json from the route table (a test fails while they differ).
openapi: configure
	@cmake --build $(BUILD) -j$(JOBS) --target statewatch_bin
	@$(BUILD)/statewatch openapi > docs/openapi.json

format:
	@clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(BENCH_BUILD) $(FUZZ_BUILD)

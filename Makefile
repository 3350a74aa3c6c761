# statewatch — the two commands of the README, plus benchmarks.
#   make run    install what is missing, build, start statewatch on ./data
#   make test   install what is missing, build, run the whole suite (plain + ASan/UBSan)
#   make bench  Release build, run the benchmarks, write bench/results/
#   make cluster-bench  JetStreamLog on a loopback R3 cluster, plain and sync-mounted (root)
JOBS ?= 2
BUILD ?= build
ASAN_BUILD ?= build-asan
BENCH_BUILD ?= build-release
CMAKE_COMMON = -DCMAKE_CXX_COMPILER_LAUNCHER=$(shell command -v ccache 2>/dev/null)

.PHONY: deps build build-asan build-release test test-plain test-asan run bench cluster-bench clean format

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_COMMON) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSTATEWATCH_SANITIZE=ON \
	  -DSTATEWATCH_BUILD_BENCH=OFF $(CMAKE_COMMON) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)

build-release: deps
	@cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DSTATEWATCH_BUILD_TESTS=OFF \
	  $(CMAKE_COMMON) >/dev/null
	@cmake --build $(BENCH_BUILD) -j$(JOBS) --target statewatch_bench statewatch_bin

test-plain: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

test-asan: build-asan
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --output-on-failure -j$(JOBS) -LE no-sanitizer

test: test-plain test-asan

run: build
	@bash scripts/run.sh $(BUILD)

bench: build-release
	@bash scripts/bench.sh $(BENCH_BUILD)

cluster-bench: deps
	@bash scripts/cluster-bench.sh

format:
	@clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(BENCH_BUILD)

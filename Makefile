# ciscfs front door. `make test` and `make run` are the two commands the
# README leads with; everything else is a convenience.
BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_OPTS ?=
export CC  := clang
export CXX := clang++

CISC := $(BUILD)/cmd/cisc

.PHONY: all deps build build-asan test test-release test-asan run bench bench-bpf bench-fs bench-qp clean

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_OPTS)

$(BUILD_ASAN)/build.ninja: | deps
	cmake -S . -B $(BUILD_ASAN) -G Ninja -DCMAKE_BUILD_TYPE=Asan $(CMAKE_OPTS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps $(BUILD_ASAN)/build.ninja
	cmake --build $(BUILD_ASAN) -j $(JOBS)

# Every test, in the optimised build and again under ASan+UBSan.
test: test-release test-asan

test-release: build
	cd $(BUILD) && ctest --output-on-failure --no-tests=error -j $(JOBS)

test-asan: build-asan
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    ctest --output-on-failure --no-tests=error -j $(JOBS)

# The main job: make the default image if there is none, check it, show it.
run: build
	@./scripts/run.sh $(CISC)

# eBPF runtime speed: interpreter ns/instruction vs native C, verification
# time of every corpus program (optimised build).
bench-bpf: build
	$(BUILD)/bench/bpf/cisc-bench-bpf

# File-system benchmark: fio jobs and a metadata storm on a ciscfs mount
# and on tmpfs; prints both and their ratio, saves CSV in bench/out/.
bench-fs: build
	@python3 bench/fs/bench_fs.py --cisc $(CISC) --mdstorm $(BUILD)/bench/fs/cisc-mdstorm

# libcisc transport: round trip of a NOP and a 4 KiB read through a queue
# pair at link latency 0 and 900 ns, beside a FUSE O_DIRECT read.
bench-qp: build
	@./bench/qp/rtt.sh $(CISC) $(BUILD)/bench/qp/cisc-bench-rtt

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)

# ciscfs front door. `make test` and `make run` are the two commands the
# README leads with; everything else is a convenience.
BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_OPTS ?=
export CC  := clang
export CXX := clang++

CISC := $(BUILD)/cmd/cisc
# The distribution's python3 (python3-matplotlib) for benchmarks that plot.
PYTHON_PLOT ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)

.PHONY: all deps build build-asan test test-release test-asan run bench bench-bpf bench-fs bench-qp bench-cisc bench-offload bench-sched clean

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
# Fused ops: the FusionFS microbenchmarks over POSIX (tmpfs, the mount),
# libcisc RISC ops, fused ops and fused ops batched ten per doorbell;
# 1, 2, 4 threads; link latency 900 ns and 0. CSV and PNG in bench/out/.
bench-cisc: build
	@$(PYTHON_PLOT) bench/cisc/bench_cisc.py --cisc $(CISC) --bench $(BUILD)/bench/cisc/cisc-bench-cisc $(BENCH_CISC_ARGS)

# Offload: grep a 1 GiB log (1% of lines match) through the FUSE mount and
# with examples/bpf/grep.c inside the device; time and bytes moved for both.
bench-offload: build
	@python3 bench/offload/bench_offload.py --cisc $(CISC) --grep-obj $(BUILD)/examples/bpf/grep.o

# Scheduling (FusionFS Figure 9): tenants sharing a device made the
# bottleneck, under rr, cfs, cfs-cpu, drf and fifo. CSV and PNG in bench/out/.
bench-sched: build
	@$(PYTHON_PLOT) bench/sched/bench_sched.py --cisc $(CISC) --bench $(BUILD)/bench/sched/cisc-bench-sched \
		--choice $(BUILD)/bench/sched/cisc-bench-sched-choice $(BENCH_SCHED_ARGS)

bench-qp: build
	@./bench/qp/rtt.sh $(CISC) $(BUILD)/bench/qp/cisc-bench-rtt

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)

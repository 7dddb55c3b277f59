# ciscfs front door. `make test` and `make run` are the two commands the
# README leads with; everything else is a convenience.
BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_OPTS ?=
# Two builds, two compilers, warnings as errors in both (a plain `cmake`
# leaves CISC_WERROR off): the release build with GCC, Debian's default
# compiler and so what packagers use; the ASan+UBSan build with clang,
# which also builds the libFuzzer targets and runs their smoke tests.
CC_RELEASE  ?= gcc
CXX_RELEASE ?= g++
CC_ASAN     ?= clang
CXX_ASAN    ?= clang++

CISC := $(BUILD)/cmd/cisc
# The distribution's python3 (python3-matplotlib) for benchmarks that plot.
PYTHON_PLOT ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)

.PHONY: all deps build build-asan install uninstall test test-release test-asan run bench bench-bpf bench-exec bench-preload bench-apps \
	bench-sfs bench-qp bench-fs bench-cisc bench-offload bench-recovery bench-sched bench-flash clean FORCE

all: build

deps:
	@./scripts/install-deps.sh

# <dir>/compilers names the compilers a build directory is configured with;
# it changes only when they do, and then the directory is configured again
# from scratch (CMake keeps the compiler of its first run).
$(BUILD)/compilers: COMPILERS = $(CC_RELEASE) $(CXX_RELEASE)
$(BUILD_ASAN)/compilers: COMPILERS = $(CC_ASAN) $(CXX_ASAN)
$(BUILD)/compilers $(BUILD_ASAN)/compilers: FORCE
	@mkdir -p $(@D)
	@echo "$(COMPILERS)" | cmp -s - $@ || echo "$(COMPILERS)" > $@

# $(call configure,DIR,BUILD_TYPE,CC,CXX)
configure = rm -rf $(1)/CMakeCache.txt $(1)/CMakeFiles && CC=$(3) CXX=$(4) cmake -S . -B $(1) -G Ninja \
	-DCMAKE_BUILD_TYPE=$(2) -DCISC_WERROR=ON $(CMAKE_OPTS)

$(BUILD)/build.ninja: $(BUILD)/compilers | deps
	$(call configure,$(BUILD),RelWithDebInfo,$(CC_RELEASE),$(CXX_RELEASE))

$(BUILD_ASAN)/build.ninja: $(BUILD_ASAN)/compilers | deps
	$(call configure,$(BUILD_ASAN),Asan,$(CC_ASAN),$(CXX_ASAN))

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps $(BUILD_ASAN)/build.ninja
	cmake --build $(BUILD_ASAN) -j $(JOBS)

# Installs the optimised build (PREFIX, default /usr/local; DESTDIR for a
# staging tree): binaries, library, headers, man pages, bash completion,
# the mount(8) helpers in /sbin, the systemd unit; runs ldconfig.
# `make uninstall` removes every file the last install wrote.
PREFIX ?=
install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX))

uninstall:
	cmake --build $(BUILD) --target uninstall

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

# Every benchmark, one after another (never in parallel, whatever -j says:
# they would time each other), on the optimised build.
BENCHES := bench-bpf bench-exec bench-preload bench-sfs bench-qp bench-fs bench-cisc bench-offload bench-recovery bench-sched bench-flash
bench: build
	@for b in $(BENCHES); do echo "== make $$b"; $(MAKE) --no-print-directory $$b || exit 1; done

# eBPF runtime speed: interpreter ns/instruction vs native C, verification
# time of every corpus program (`cisc bpf verify OBJ` times any other).
bench-bpf: build
	$(BUILD)/bench/bpf/cisc-bench-bpf

# The fused-op executor alone, in process on a RAM medium, beside the same
# sequences as engine RISC commands: ns per op without the transport.
bench-exec: build
	$(BUILD)/bench/cisc/cisc-bench-exec

# cisc exec: an unmodified POSIX program (append-CRC-write, 4 KiB synced
# writes) on the FUSE mount, under cisc exec, and with AutoMerge; 1-8
# threads. CSV and PNG in bench/out/.
bench-preload: build
	@$(PYTHON_PLOT) bench/preload/bench_preload.py --cisc $(CISC) --bench $(BUILD)/bench/preload/cisc-bench-preload $(BENCH_PRELOAD_ARGS)

# LevelDB (cisc-ldb-bench) on tmpfs, the FUSE mount, under `cisc exec` and
# with the libcisc Env: CSV and PNG in bench/out (apps.*). Needs LevelDB.
bench-apps: build
	@test -x $(BUILD)/bench/apps/cisc-ldb-bench || { echo "bench-apps: LevelDB not installed (make deps)"; exit 1; }
	@$(PYTHON_PLOT) bench/apps/bench_apps.py --cisc $(CISC) --bench $(BUILD)/bench/apps/cisc-ldb-bench $(BENCH_APPS_ARGS)

# StorageFS through its C API on a sparse image file: a create+stat+unlink
# storm, then 1 MiB sequential writes and reads.
bench-sfs: build
	$(BUILD)/bench/sfs_bench $(BUILD)/bench/sfs_bench.img

# libcisc transport: round trip of a NOP and a 4 KiB read through a queue
# pair at link latency 0 and 900 ns, beside a FUSE O_DIRECT read; then a
# small pwrite and a write+fsync against the mount's, interleaved, with
# the CPU each costs the client and the device (cisc-bench-pairs).
bench-qp: build
	@./bench/qp/rtt.sh $(CISC) $(BUILD)/bench/qp/cisc-bench-rtt

# File-system benchmark: fio jobs and a metadata storm on a ciscfs mount
# and on tmpfs; prints both and their ratio, saves CSV in bench/out/.
bench-fs: build
	@python3 bench/fs/bench_fs.py --cisc $(CISC) --mdstorm $(BUILD)/bench/fs/cisc-mdstorm \
	    --passthrough $(BUILD)/bench/fs/cisc-passthrough-ll $(BENCH_FS_ARGS)

# Fused ops: the FusionFS microbenchmarks over POSIX (tmpfs, the mount),
# libcisc RISC ops, fused ops and fused ops batched ten per doorbell;
# 1, 2, 4 threads; link latency 900 ns and 0. CSV and PNG in bench/out/.
bench-cisc: build
	@$(PYTHON_PLOT) bench/cisc/bench_cisc.py --cisc $(CISC) --bench $(BUILD)/bench/cisc/cisc-bench-cisc $(BENCH_CISC_ARGS)

# Offload: grep a 1 GiB log (1% of lines match) through the FUSE mount and
# with examples/bpf/grep.c inside the device; time and bytes moved for both.
bench-offload: build
	@python3 bench/offload/bench_offload.py --cisc $(CISC) --grep-obj $(BUILD)/examples/bpf/grep.o

# Crash recovery: FusionFS Table 10c/10d (restart-to-effect time of POSIX
# re-execution, MacroTx re-submission and AutoRec; latency per mode).
bench-recovery: build
	@$(PYTHON_PLOT) bench/recovery/bench_recovery.py --cisc $(CISC) --bench $(BUILD)/bench/recovery/cisc-bench-recovery $(BENCH_RECOVERY_ARGS)

# Scheduling (FusionFS Figure 9): tenants sharing a device made the
# bottleneck, under rr, cfs, cfs-cpu, drf and fifo. CSV and PNG in bench/out/.
bench-sched: build
	@$(PYTHON_PLOT) bench/sched/bench_sched.py --cisc $(CISC) --bench $(BUILD)/bench/sched/cisc-bench-sched \
		--choice $(BUILD)/bench/sched/cisc-bench-sched-choice $(BENCH_SCHED_ARGS)

# The NAND flash model alone, in simulated time: read IOPS vs queue depth,
# WAF vs over-provisioning beside the analytic curve, the GC cliff, arrays,
# the simulator's CPU per page, FTL cores 1-4 single-lock vs partitioned
# (threads fed through lock-free rings, wall clock); then real devices end
# to end (bench_flash.py). Prints the model; CSV and PNG in bench/out/.
bench-flash: build
	@mkdir -p bench/out
	$(BUILD)/bench/flash/cisc-bench-flash bench/out
	@$(PYTHON_PLOT) bench/flash/plot_flash.py bench/out
	@$(PYTHON_PLOT) bench/flash/bench_flash.py --cisc $(CISC) \
	    --lib $(BUILD)/bench/flash/cisc-bench-flash-lib --out bench/out $(BENCH_FLASH_ARGS)

FORCE:

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)

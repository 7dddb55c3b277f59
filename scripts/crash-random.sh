#!/bin/sh
# scripts/crash-random.sh - the long variants of the randomized crash tests
# (not part of `make test`):
#   - tests/unit/fused/crash_random_test.cc: ROUNDS rounds per mode of
#     random fused ops with a power cut at a random media write (in
#     process), recovery, and the oracle's check;
#   - tests/e2e/cisc/crash_random_test.cc: twice ROUNDS/40 rounds of the real
#     device (`cisc up --tx autorec`) stopped dead at random crash points
#     during random ops (bpf, zstd, encryption, several files), restarted,
#     checked against what the client saw acknowledged (needs root and
#     /dev/fuse, like the other e2e suites), the second time with a 64-byte
#     log entry (outputs in log blocks). SEED varies its rounds.
#   scripts/crash-random.sh [BUILD_DIR] [ROUNDS] [SEED]
set -eu
build=${1:-build}
rounds=${2:-20000}
seed=${3:-$(date +%s)}
env CISC_CRASH_ROUNDS="$rounds" "$build/tests/unit/fused/fused_unit_test" \
    --gtest_filter='CrashRandom.*'
echo "e2e seed $seed"
env CISC_E2E_CRASH_ROUNDS=$((rounds / 40)) CISC_E2E_CRASH_SEED="$seed" \
    "$build/tests/e2e/cisc/e2e_microtx_test" --gtest_filter='CrashRandomE2E.*'
# Again with a tiny log entry: most logged outputs go to log blocks.
exec env CISC_E2E_CRASH_ROUNDS=$((rounds / 40)) CISC_E2E_CRASH_SEED="$((seed + 1))" \
    CISC_E2E_UP_ARGS="--tx-log-entry 64" \
    "$build/tests/e2e/cisc/e2e_microtx_test" --gtest_filter='CrashRandomE2E.*'

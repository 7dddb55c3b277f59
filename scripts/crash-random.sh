#!/bin/sh
# scripts/crash-random.sh - the long variant of the randomized crash test
# (tests/unit/fused/crash_random_test.cc): ROUNDS rounds per mode (default
# 20000) of random fused ops with a power cut at a random media write,
# recovery, and the oracle's check. Not part of `make test`.
#   scripts/crash-random.sh [BUILD_DIR] [ROUNDS]
set -eu
build=${1:-build}
rounds=${2:-20000}
exec env CISC_CRASH_ROUNDS="$rounds" "$build/tests/unit/fused/fused_unit_test" \
    --gtest_filter='CrashRandom.*'

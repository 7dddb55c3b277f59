#!/usr/bin/env bash
# bench/qp/rtt.sh CISC RTT_BIN [ITERATIONS]: starts a device per link
# latency (0 and 900 ns) on an image in /dev/shm, runs the round-trip
# benchmark against it, prints the device model and one CSV table; then,
# on a device with the default model, cisc-bench-pairs (beside RTT_BIN:
# libcisc pwrite and write+fsync against the mount's, interleaved, with
# the CPU per call of the client and the device) as a second table.
set -euo pipefail
cisc=$1 rtt=$2 iters=${3:-100000}
dir=$(mktemp -d /dev/shm/ciscfs-bench-qp-XXXXXX)
cleanup() {
    "$cisc" down "$dir/m" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$dir/m"
echo "link_latency_ns,case,iterations,mean_ns,p50_ns,p99_ns"
for lat in 0 900; do
    "$cisc" up --size 1G --link-latency-ns "$lat" "$dir/img" "$dir/m" >/dev/null
    "$cisc" status --raw "$dir/m" | grep -E '^(model|qp) ' | sed 's/^/# /' >&2
    "$rtt" "$dir/m" "$iters" | sed "s/^/$lat,/"
    "$cisc" down "$dir/m" >/dev/null
    rm -f "$dir/img"
done
pairs=$(dirname "$rtt")/cisc-bench-pairs
if [ -x "$pairs" ]; then
    echo
    "$cisc" up --size 1G "$dir/img" "$dir/m" >/dev/null
    pid=$("$cisc" status --raw "$dir/m" | awk '/^device pid/ {print $3}')
    "$pairs" "$dir/m" 2000 128 "$pid"
    "$cisc" down "$dir/m" >/dev/null
    rm -f "$dir/img"
fi

#!/usr/bin/env bash
# Installs exactly the Debian packages that building, testing and
# benchmarking ciscfs need. Does nothing when they are all present.
set -euo pipefail

PKGS=(
    build-essential cmake ninja-build pkg-config      # build
    clang llvm lld libclang-rt-14-dev                 # BPF objects, libFuzzer, sanitizers
    fuse3 libfuse3-dev                                # FUSE front end
    libbpf-dev bpftool libelf-dev zlib1g-dev          # eBPF object parsing
    libxxhash-dev libzstd-dev libsodium-dev           # compute steps
    libgtest-dev                                      # unit tests
    libleveldb-dev libsnappy-dev                      # LevelDB on the device (integrations/leveldb)
    librocksdb-dev rocksdb-tools                      # RocksDB on the device (integrations/rocksdb), db_bench
    attr git acl rsync                                # end-to-end tests (xattr tools, git inside the mount, ACL copies)
    fio python3 python3-matplotlib                    # benchmarks and plots
)

missing=()
for p in "${PKGS[@]}"; do
    # dpkg-query prints "install ok installed" only for fully installed packages.
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

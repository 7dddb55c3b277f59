#!/usr/bin/env bash
# scripts/pjdfstest.sh - runs pjdfstest (the POSIX file-system test suite,
# Rust rewrite, crate `pjdfstest`) on a fresh ciscfs mount and on tmpfs,
# with the default features and with utimensat, utime_now and
# rename_ctime, and prints the four counts side by side. For a person to
# run (root needed: pjdfstest switches users, mounts tmpfs); not part of
# `make test`.
#
# Usage: scripts/pjdfstest.sh [--bin PJDFSTEST] [--build DIR] [--keep] [-- PATTERNS]
#   --bin PATH   a prebuilt pjdfstest binary (also $PJDFSTEST); without it
#                the crate is built with cargo into ~/.cache/ciscfs-pjdfstest
#                (needs cargo, crates.io and libacl1-dev)
#   --build DIR  the ciscfs build directory holding cmd/cisc (default: build)
#   --keep       keep the work directory (logs of every run) and say where
#   PATTERNS     passed to pjdfstest to run only matching tests (e.g. chmod)
#
# pjdfstest needs two dummy users; this script uses nobody/nogroup and
# `tests` (created with newusers when missing, and said so).
# Exit status: 0 when ciscfs fails no test that tmpfs passes, 1 otherwise,
# 2 for usage or environment errors.
set -euo pipefail

PJD_VERSION=0.2.2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
BIN=${PJDFSTEST:-}
KEEP=0
PATTERNS=()

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

while [ $# -gt 0 ]; do
    case $1 in
    --bin) BIN=${2:?--bin needs a path}; shift 2 ;;
    --build) BUILD=${2:?--build needs a directory}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage ;;
    --) shift; PATTERNS=("$@"); break ;;
    *) echo "pjdfstest.sh: unknown option $1" >&2; usage ;;
    esac
done

die() { echo "pjdfstest.sh: $*" >&2; exit 2; }

[ "$(id -u)" = 0 ] || die "run as root (pjdfstest switches users; tmpfs is mounted)"
CISC=$BUILD/cmd/cisc
[ -x "$CISC" ] || die "$CISC not found: build first (make build) or pass --build DIR"

build_pjdfstest() {
    local cache=${XDG_CACHE_HOME:-$HOME/.cache}/ciscfs-pjdfstest
    if [ -x "$cache/bin/pjdfstest" ]; then
        BIN=$cache/bin/pjdfstest
        return
    fi
    command -v cargo >/dev/null || die "cargo not found: install Rust, or pass --bin PATH"
    [ -e /usr/include/sys/acl.h ] || die "libacl1-dev is needed to build pjdfstest (apt-get install libacl1-dev)"
    echo "pjdfstest.sh: building pjdfstest $PJD_VERSION with cargo (once; cached in $cache)"
    cargo install pjdfstest --version "$PJD_VERSION" --locked --root "$cache" ||
        die "cargo could not build pjdfstest (crates.io unreachable?): pass --bin PATH"
    BIN=$cache/bin/pjdfstest
}

[ -n "$BIN" ] || build_pjdfstest
[ -x "$BIN" ] || die "$BIN is not an executable"

if ! id tests >/dev/null 2>&1; then
    echo "pjdfstest.sh: creating the dummy user 'tests' that pjdfstest needs"
    echo "tests:x:::Dummy user for pjdfstest:/:/usr/sbin/nologin" | newusers
fi
NOBODY_GROUP=$(id -gn nobody)

WORK=$(mktemp -d /tmp/ciscfs-pjdfstest-XXXXXX)
TMPFS=$WORK/tmpfs
MNT=$WORK/m
IMG=$WORK/img
mkdir -p "$TMPFS" "$MNT"
chmod 755 "$WORK"

cleanup() {
    "$CISC" down --force "$MNT" >/dev/null 2>&1 || true
    mountpoint -q "$TMPFS" && umount "$TMPFS"
    if [ $KEEP = 1 ]; then echo "pjdfstest.sh: logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# One configuration per feature set (pjdfstest.toml's format).
write_config() {   # FILE FEATURES...
    local f=$1; shift
    {
        echo "[features]"
        for feat in "$@"; do echo "$feat = {}"; done
        echo "[settings]"
        echo "naptime = 0.01"
        echo "allow_remount = false"
        echo "[dummy_auth]"
        echo "entries = [[\"nobody\", \"$NOBODY_GROUP\"], [\"tests\", \"tests\"]]"
    } > "$f"
}
write_config "$WORK/default.toml"
write_config "$WORK/features.toml" utimensat utime_now rename_ctime

# Runs pjdfstest in DIR with CONFIG; prints "passed failed skipped".
run() {   # NAME DIR CONFIG
    local name=$1 dir=$2 cfg=$3 log=$WORK/$1.log
    local d
    d=$(mktemp -d "$dir/pjd.XXXXXX")
    chmod 755 "$d"
    (cd "$d" && NO_COLOR=1 CLICOLOR=0 "$BIN" -c "$cfg" -p "$d" "${PATTERNS[@]}" > "$log" 2>&1) || true
    local sum
    sum=$(grep -a "^Summary" "$log" | tail -1 | sed 's/\x1b\[[0-9;]*m//g')
    [ -n "$sum" ] || { echo "pjdfstest.sh: no summary from $name (see $log)" >&2; echo "0 0 0"; return; }
    local failed skipped passed
    failed=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$sum")
    skipped=$(sed -E 's/.* ([0-9]+) skipped.*/\1/' <<<"$sum")
    passed=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$sum")
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -a -E "^[a-z_:0-9]+ +(FAILED|PASSED UNEXPECTEDLY)$" |
        awk '{print $1}' > "$WORK/$name.failed" || true
    echo "$passed $failed $skipped"
}

mount -t tmpfs -o size=512m tmpfs "$TMPFS"
"$CISC" up --size 512M "$IMG" "$MNT" >/dev/null || die "cisc up failed"

status=0
printf '%-10s %-9s %8s %8s %8s\n' features fs passed failed skipped
for set in default features; do
    read -r tp tf ts < <(run "tmpfs-$set" "$TMPFS" "$WORK/$set.toml")
    read -r cp cf cs < <(run "ciscfs-$set" "$MNT" "$WORK/$set.toml")
    printf '%-10s %-9s %8s %8s %8s\n' "$set" tmpfs "$tp" "$tf" "$ts" "$set" ciscfs "$cp" "$cf" "$cs"
    extra=$(comm -13 <(sort "$WORK/tmpfs-$set.failed") <(sort "$WORK/ciscfs-$set.failed") || true)
    if [ -n "$extra" ]; then
        echo "  failing on ciscfs only ($set):"; sed 's/^/    /' <<<"$extra"
        status=1
    fi
    echo "  ciscfs $set: $cp of $((cp + cf)) counted tests passed; tmpfs: $tp of $((tp + tf))"
done
"$CISC" down "$MNT" >/dev/null || "$CISC" down --force "$MNT" >/dev/null || true
if ! "$CISC" fsck "$IMG" > "$WORK/fsck.log" 2>&1; then
    echo "pjdfstest.sh: fsck found problems on the image after the runs:"; cat "$WORK/fsck.log"
    status=1
else
    echo "  fsck after the runs: clean"
fi
exit $status

#!/usr/bin/env bash
# `make run`: the main job. Makes the default image if there is none,
# checks it and shows what it holds.
set -euo pipefail
CISC=${1:-build/cmd/cisc}
data=${XDG_DATA_HOME:-$HOME/.local/share}/ciscfs
img=$data/default.img
mkdir -p "$data"
if [ ! -e "$img" ]; then
    "$CISC" mkfs "$img"
fi
"$CISC" fsck "$img"
"$CISC" info "$img"

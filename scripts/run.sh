#!/usr/bin/env bash
# `make run`: the main job. Starts a device on the default image (1 GiB,
# made on first use) and mounts its file system on the default mount
# point, then prints how to use it. Running it again while the device is
# up only prints the instructions.
set -euo pipefail
CISC=${1:-build/cmd/cisc}
data=${XDG_DATA_HOME:-$HOME/.local/share}/ciscfs
mnt=$data/mnt
if "$CISC" status "$mnt" >/dev/null 2>&1; then
    echo "ciscfs: the default device is already running on $mnt"
else
    "$CISC" up
fi
cat <<EOF

Use it like any directory:
    cd $mnt && echo hello > hello.txt && ls -l
    cp -a ~/some/project $mnt/ && git -C $mnt/project status
Watch the device:    $CISC status $mnt
Stop it:             $CISC down $mnt   (the data stays in $data/default.img)
Mount another image: $CISC up --size 1G IMAGE DIR   (or: mount -t ciscfs IMAGE DIR)
EOF

#!/usr/bin/env python3
"""bench/preload/bench_preload.py - `make bench-preload`: one unmodified
POSIX program (cisc-bench-preload) run three ways on one device:

  fuse      directly on the FUSE mount (the kernel, then the device)
  unmerged  under `cisc exec --no-merge` (libcisc, one command per call)
  merged    under `cisc exec` (libcisc with AutoMerge)

Workloads: acw (append-CRC-write to one shared log, FusionFS Table 6) and
sync (4 KiB pwrite + fdatasync per op, "small synced writes"), at 1, 2, 4
and 8 threads. The machine is shared and noisy: each point is run
--rounds times, the three ways alternating, and the median is reported.
The image lives in /dev/shm, so the comparison is of the software paths.

Writes CSV to bench/out/preload.csv and a plot to bench/out/preload.png;
prints the device model, a table with the FUSE baseline and the ratios
(cisc exec / FUSE, merged / unmerged). Not a test: nothing is asserted.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile

WAYS = ["fuse", "unmerged", "merged"]


def sh(cmd, check=True):
    return subprocess.run(cmd, check=check, text=True, capture_output=True)


def run_one(cisc, bench, mnt, way, workload, threads, secs):
    d = os.path.join(mnt, "bench")
    os.makedirs(d, exist_ok=True)
    cmd = [bench, d, workload, str(threads), str(secs)]
    if way != "fuse":
        cmd = [cisc, "exec"] + (["--no-merge"] if way == "unmerged" else []) + [mnt, "--"] + cmd
    out = sh(cmd).stdout.split()
    return float(out[4].rstrip("/s"))   # "acw 4 ops N OPS/s MiB/s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cisc", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--threads", default="1,2,4,8")
    ap.add_argument("--workloads", default="acw,sync")
    ap.add_argument("--secs", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="bench/out")
    ap.add_argument("--up-args", default="",
                    help="extra `cisc up` options (e.g. \"--poll-us 5\" on a busy host)")
    ap.add_argument("--tag", default="", help="suffix of the CSV and PNG names")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="cisc-preload-", dir="/dev/shm")
    img, mnt = os.path.join(tmp, "img"), os.path.join(tmp, "m")
    os.mkdir(mnt)
    rows = []
    try:
        sh([a.cisc, "up", "--size", "2G", "--cores", "2"] + a.up_args.split() + [img, mnt])
        model = [l for l in sh([a.cisc, "status", "--raw", mnt]).stdout.splitlines()
                 if l.startswith(("model", "qp"))]
        print("device:", *model, sep="\n  ")
        for w in a.workloads.split(","):
            for t in [int(x) for x in a.threads.split(",")]:
                got = {way: [] for way in WAYS}
                for _ in range(a.rounds):
                    for way in WAYS:
                        got[way].append(run_one(a.cisc, a.bench, mnt, way, w, t, a.secs))
                med = {way: statistics.median(v) for way, v in got.items()}
                rows.append({"workload": w, "threads": t, **med})
                print(f"{w:4} {t} threads  fuse {med['fuse']:9.0f}/s  unmerged "
                      f"{med['unmerged']:9.0f}/s  merged {med['merged']:9.0f}/s  "
                      f"exec/fuse {med['merged'] / med['fuse']:5.2f}x  "
                      f"merged/unmerged {med['merged'] / med['unmerged']:5.2f}x", flush=True)
    finally:
        sh([a.cisc, "down", mnt], check=False)
        sh(["rm", "-rf", tmp], check=False)
    tag = ("-" + a.tag) if a.tag else ""
    with open(os.path.join(a.out, f"preload{tag}.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=["workload", "threads"] + WAYS)
        wr.writeheader()
        wr.writerows(rows)
    plot(rows, os.path.join(a.out, f"preload{tag}.png"))


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plot)")
        return
    wls = sorted({r["workload"] for r in rows})
    fig, axes = plt.subplots(1, len(wls), figsize=(5 * len(wls), 4), squeeze=False)
    for ax, w in zip(axes[0], wls):
        rs = [r for r in rows if r["workload"] == w]
        for way in WAYS:
            ax.plot([r["threads"] for r in rs], [r[way] for r in rs], marker="o", label=way)
        ax.set_title(w)
        ax.set_xlabel("threads")
        ax.set_ylabel("ops/s (median)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print("plot:", path)


if __name__ == "__main__":
    sys.exit(main())

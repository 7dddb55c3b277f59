#!/usr/bin/env python3
"""bench/apps/bench_apps.py - `make bench-apps`: LevelDB (cisc-ldb-bench:
fillseq, fillrandom, overwrite, readrandom, then YCSB's load and workloads
A-F, with sync=0 and sync=1) run four ways on one device:

  tmpfs   LevelDB's default Env on /dev/shm (no device: the ceiling)
  fuse    the default Env on the FUSE mount (the kernel, then the device)
  exec    the default Env under `cisc exec` (libcisc-preload.so serves it)
  native  the libcisc Env (integrations/leveldb) on the same mount

The machine is shared and noisy: each way is run --rounds times, the ways
alternating, and the median is reported. The image lives in /dev/shm, so
the comparison is of the software paths, with the device model's latency.

Writes CSV to bench/out/apps.csv and a plot to bench/out/apps.png; prints
the device model and a table with the FUSE baseline and the ratios
(native / fuse, exec / fuse). Not a test: nothing is asserted.
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import tempfile

WAYS = ["tmpfs", "fuse", "exec", "native"]
BENCHES = ["fillseq", "fillrandom", "overwrite", "readrandom", "ycsbload",
           "ycsba", "ycsbb", "ycsbc", "ycsbd", "ycsbe", "ycsbf"]


def sh(cmd, check=True):
    return subprocess.run(cmd, check=check, text=True, capture_output=True)


def run_one(a, mnt, shm, way, sync, num):
    """One cisc-ldb-bench run (all four benchmarks); {bench: ops/s}."""
    base = shm if way == "tmpfs" else mnt
    d = os.path.join(base, "ldb-" + way)
    os.makedirs(d, exist_ok=True)
    cmd = [a.bench, "--num", str(num), "--sync", str(sync), "--benchmarks", ",".join(BENCHES), d]
    if way == "native":
        cmd[1:1] = ["--env", "cisc", "--mount", mnt]
    if way == "exec":
        cmd = [a.cisc, "exec", mnt, "--"] + cmd
    got = {}
    for line in sh(cmd).stdout.splitlines():
        f = line.split(",")   # ldb,BENCH,ENV,SYNC,NUM,OPS
        if f[0] == "ldb":
            got[f[1]] = float(f[5])
    return got


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(16, 4.5))
    for ax, sync in zip(axes, (0, 1)):
        sub = [r for r in rows if r["sync"] == sync]
        w = 0.2
        for i, way in enumerate(WAYS):
            ax.bar([j + i * w for j in range(len(sub))], [r[way] for r in sub], w, label=way)
        ax.set_xticks([j + 1.5 * w for j in range(len(sub))])
        ax.set_xticklabels([r["bench"] for r in sub], rotation=45, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("ops/s (median)")
        ax.set_title(f"LevelDB, sync={sync}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    print("plot:", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cisc", required=True)
    ap.add_argument("--bench", required=True, help="cisc-ldb-bench")
    ap.add_argument("--num", type=int, default=20000, help="operations, sync=0")
    ap.add_argument("--num-sync", type=int, default=2000, help="operations, sync=1")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="bench/out")
    ap.add_argument("--up-args", default="", help="extra `cisc up` options")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="cisc-apps-", dir="/dev/shm")
    img, mnt, shm = (os.path.join(tmp, x) for x in ("img", "m", "shm"))
    os.mkdir(mnt)
    os.mkdir(shm)
    rows = []
    try:
        sh([a.cisc, "up", "--size", "2G", "--cores", "2"] + a.up_args.split() + [img, mnt])
        model = [l for l in sh([a.cisc, "status", "--raw", mnt]).stdout.splitlines()
                 if l.startswith(("model", "qp"))]
        print("device:", *model, sep="\n  ")
        for sync, num in ((0, a.num), (1, a.num_sync)):
            got = {way: {b: [] for b in BENCHES} for way in WAYS}
            for _ in range(a.rounds):
                for way in WAYS:
                    for b, v in run_one(a, mnt, shm, way, sync, num).items():
                        got[way][b].append(v)
            for b in BENCHES:
                med = {way: statistics.median(got[way][b]) for way in WAYS}
                rows.append({"bench": b, "sync": sync, "num": num, **med})
                print(f"{b:10} sync={sync} n={num:6}  tmpfs {med['tmpfs']:9.0f}/s  fuse "
                      f"{med['fuse']:8.0f}/s  exec {med['exec']:8.0f}/s  native "
                      f"{med['native']:8.0f}/s  native/fuse {med['native'] / med['fuse']:5.2f}x"
                      f"  exec/fuse {med['exec'] / med['fuse']:5.2f}x", flush=True)
    finally:
        sh([a.cisc, "down", mnt], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    path = os.path.join(a.out, "apps.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["store", "bench", "sync", "num"] + [w_ + "_ops_s" for w_ in WAYS]
                   + ["native_over_fuse", "exec_over_fuse"])
        for r in rows:
            w.writerow(["leveldb", r["bench"], r["sync"], r["num"]]
                       + [f"{r[x]:.0f}" for x in WAYS]
                       + [f"{r['native'] / r['fuse']:.2f}", f"{r['exec'] / r['fuse']:.2f}"])
    print("csv:", path)
    print(open(path).read(), end="")
    plot(rows, os.path.join(a.out, "apps.png"))


if __name__ == "__main__":
    main()

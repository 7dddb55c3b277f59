#!/usr/bin/env python3
"""bench/fs/bench_fs.py - `make bench-fs`: the same fio jobs and metadata
storm on a ciscfs mount and on a tmpfs directory, in one run.

Prints a table with both results and their ratio (mount / tmpfs) and saves
it as CSV under bench/out/. The device's image lives in /dev/shm by
default: the device model's media is "unthrottled", so the run measures
the device's own path (FUSE, engine, StorageFS), not the host's disk;
--image-dir puts it elsewhere (on a disk, sequential writes are then bound
by the host's writeback of the image file). Read jobs lay their files out first and drop
the page cache before the timed run (when root), so reads reach the device
instead of the kernel's cache; tmpfs is unaffected by that. Not a test:
nothing here asserts a number.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

# name, fio options, metric ("bw" MiB/s or "iops")
JOBS = [
    ("seq-write-1M", {"rw": "write", "bs": "1M", "size": "1G", "numjobs": "1"}, "bw"),
    ("seq-read-1M", {"rw": "read", "bs": "1M", "size": "1G", "numjobs": "1"}, "bw"),
    ("seq-write-1M-x2", {"rw": "write", "bs": "1M", "size": "512M", "numjobs": "2"}, "bw"),
    ("rand-read-4K-x2", {"rw": "randread", "bs": "4k", "size": "128M", "numjobs": "2"}, "iops"),
    ("rand-write-4K-x2", {"rw": "randwrite", "bs": "4k", "size": "128M", "numjobs": "2"}, "iops"),
    ("seq-write-1M-direct", {"rw": "write", "bs": "1M", "size": "512M", "numjobs": "1",
                             "direct": "1"}, "bw"),
    ("seq-read-1M-direct", {"rw": "read", "bs": "1M", "size": "512M", "numjobs": "1",
                            "direct": "1"}, "bw"),
]
MD_FILES = 10000
RUN_MDSTORM = True


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def drop_caches():
    if os.geteuid() == 0:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")


def fio(directory, name, opts, runtime):
    base = ["fio", "--name=" + name, "--directory=" + directory, "--ioengine=psync",
            "--group_reporting", "--output-format=json", "--runtime=%d" % runtime]
    base += ["--%s=%s" % kv for kv in opts.items()]
    if opts["rw"] in ("read", "randread"):
        sh(base + ["--create_only=1"])
        drop_caches()
    else:
        base.append("--end_fsync=1")   # count the data reaching the device
    out = json.loads(sh(base).stdout)
    job = out["jobs"][0]
    side = job["read"] if opts["rw"] in ("read", "randread") else job["write"]
    for f in os.listdir(directory):
        if f.startswith(name):
            os.unlink(os.path.join(directory, f))
    return side["bw_bytes"] / 2**20, side["iops"]


def mdstorm(tool, directory):
    out = sh([tool, directory, str(MD_FILES)]).stdout.split()
    kv = dict(zip(out[::2], out[1::2]))
    return float(kv["ops_per_s"]), kv


def best_fio(d, name, opts, metric, runtime, repeat):
    best = float("nan")
    for _ in range(repeat):
        try:
            bw, iops = fio(d, name, opts, runtime)
        except subprocess.CalledProcessError as e:
            print("  %s on %s failed: %s" % (name, d, e.stderr.strip()[-200:]), file=sys.stderr)
            continue
        v = bw if metric == "bw" else iops
        best = v if best != best or v > best else best
    return best


def run_all(mnt, tmp, tool, runtime, repeat):
    """Best of `repeat` runs per job and place: the host is shared."""
    rows = []
    for name, opts, metric in JOBS:
        res = [best_fio(d, name, opts, metric, runtime, repeat) for d in (mnt, tmp)]
        rows.append((name, "MiB/s" if metric == "bw" else "IOPS", res[0], res[1]))
        print_row(rows[-1])
    if RUN_MDSTORM:
        res = [max(mdstorm(tool, d)[0] for _ in range(repeat)) for d in (mnt, tmp)]
        rows.append(("metadata-storm-10k", "ops/s", res[0], res[1]))
        print_row(rows[-1])
    return rows


def print_row(r):
    ratio = r[2] / r[3] if r[3] and r[3] == r[3] else float("nan")
    print("%-22s %-6s %12.1f %12.1f %8.1f%%" % (r[0], r[1], r[2], r[3], 100 * ratio),
          flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cisc", default="build/cmd/cisc")
    ap.add_argument("--mdstorm", default="build/bench/fs/cisc-mdstorm")
    ap.add_argument("--cores", default="4")
    ap.add_argument("--runtime", type=int, default=20)
    ap.add_argument("--out", default="bench/out")
    ap.add_argument("--image-dir", default="/dev/shm")
    ap.add_argument("--dispatch", default="direct", choices=["direct", "queue"])
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs per job")
    ap.add_argument("--only", default="",
                    help="comma-separated job names to run (default: all, metadata-storm-10k included)")
    a = ap.parse_args()
    if a.only:
        want = set(a.only.split(","))
        unknown = want - {j[0] for j in JOBS} - {"metadata-storm-10k"}
        if unknown:
            ap.error("unknown job(s): " + ", ".join(sorted(unknown)))
        JOBS[:] = [j for j in JOBS if j[0] in want]
        global RUN_MDSTORM
        RUN_MDSTORM = "metadata-storm-10k" in want
    work = tempfile.mkdtemp(prefix="ciscfs-bench-", dir="/var/tmp")
    tmp = tempfile.mkdtemp(prefix="ciscfs-bench-", dir="/dev/shm")
    mnt = os.path.join(work, "m")
    os.mkdir(mnt)
    imgdir = tempfile.mkdtemp(prefix="ciscfs-bench-img-", dir=a.image_dir)
    img = os.path.join(imgdir, "img")
    sh([a.cisc, "up", "--size", "6G", "--cores", a.cores, "--dispatch", a.dispatch, img, mnt])
    try:
        print("device model: cores %s, sched fifo, dispatch %s, media unthrottled; image %s (on %s)"
              % (a.cores, a.dispatch, img, sh(["df", "--output=fstype", imgdir]).stdout.split()[-1]))
        print("%-22s %-6s %12s %12s %9s" % ("job", "unit", "ciscfs", "tmpfs", "ratio"))
        rows = run_all(mnt, tmp, a.mdstorm, a.runtime, max(1, a.repeat))
        status = sh([a.cisc, "status", mnt]).stdout
    finally:
        subprocess.run([a.cisc, "down", mnt])
        subprocess.run(["rm", "-rf", work, tmp, imgdir])
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "fs-%s.csv" % time.strftime("%Y%m%d-%H%M%S"))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "unit", "ciscfs", "tmpfs", "ratio"])
        for r in rows:
            w.writerow([r[0], r[1], "%.1f" % r[2], "%.1f" % r[3],
                        "%.3f" % (r[2] / r[3]) if r[3] else ""])
    print("\ndevice statistics after the run:\n" + status)
    print("saved %s" % path)


if __name__ == "__main__":
    main()

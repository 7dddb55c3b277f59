#!/usr/bin/env python3
"""bench/fs/bench_fs.py - `make bench-fs`: the same fio jobs and metadata
storm on a ciscfs mount, on a tmpfs directory and (when --passthrough names
it) on libfuse's own low-level passthrough file system (passthrough_ll,
built from libfuse3-dev's example source) over another tmpfs directory,
mounted twice: as is and with -o writeback (the kernel's writeback cache),
in one run, the places taking turns job by job. --writeback adds the column
ciscfs-wb: a second device mounted with `cisc up --writeback`.

Prints a table with every result and the ratios mount / tmpfs and mount /
passthrough (plain and writeback), and saves it as CSV under bench/out/. The device's image lives in /dev/shm by
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


NAN = float("nan")


def best_md(tool, d, repeat):
    best = NAN
    for _ in range(repeat):
        try:
            v = mdstorm(tool, d)[0]
        except subprocess.CalledProcessError as e:
            print("  metadata storm on %s failed: %s" % (d, e.stderr.strip()[-200:]),
                  file=sys.stderr)
            continue
        best = v if best != best or v > best else best
    return best


def run_all(places, tool, runtime, repeat):
    """Best of `repeat` runs per job and place: the host is shared.
    places: directories, ciscfs mount first, then tmpfs, then the
    passthrough mounts if any."""
    rows = []
    for name, opts, metric in JOBS:
        res = [best_fio(d, name, opts, metric, runtime, repeat) for d in places]
        rows.append((name, "MiB/s" if metric == "bw" else "IOPS") + tuple(res))
        print_row(rows[-1])
    if RUN_MDSTORM:
        res = [best_md(tool, d, repeat) for d in places]
        rows.append(("metadata-storm-10k", "ops/s") + tuple(res))
        print_row(rows[-1])
    return rows


def ratio(a, b):
    return a / b if b and b == b and a == a else NAN


# (a, b): one more ratio column, value a / value b (indices into a row's
# values): ciscfs-wb / pt_ll-wb when both run.
WB_PAIR = None


def ratios(r):
    out = [ratio(r[2], v) for v in r[3:]]
    if WB_PAIR:
        out.append(ratio(r[2 + WB_PAIR[0]], r[2 + WB_PAIR[1]]))
    return out


def print_row(r):
    line = "%-22s %-6s" % (r[0], r[1]) + "".join(" %12.1f" % v for v in r[2:])
    line += "".join(" %8.1f%%" % (100 * x) for x in ratios(r))
    print(line, flush=True)


def pt_mount(binary, source, mnt, writeback):
    """Mounts passthrough_ll of `source` on mnt (foreground process);
    returns the process once the mount is up."""
    opts = "source=%s%s" % (source, ",writeback" if writeback else "")
    p = subprocess.Popen([binary, "-f", "-o", opts, mnt], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if os.path.ismount(mnt):
            return p
        if p.poll() is not None:
            raise RuntimeError("passthrough_ll failed: " + p.stderr.read()[-300:])
        time.sleep(0.05)
    p.kill()
    raise RuntimeError("passthrough_ll did not mount " + mnt)


def pt_umount(p, mnt):
    subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cisc", default="build/cmd/cisc")
    ap.add_argument("--mdstorm", default="build/bench/fs/cisc-mdstorm")
    ap.add_argument("--cores", default="4")
    ap.add_argument("--runtime", type=int, default=20)
    ap.add_argument("--out", default="bench/out")
    ap.add_argument("--image-dir", default="/dev/shm")
    ap.add_argument("--dispatch", default="direct", choices=["direct", "queue"])
    ap.add_argument("--media-io", default="pread", choices=["pread", "mmap"],
                    help="how the device does the image's I/O (cisc up --media-io)")
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs per job")
    ap.add_argument("--passthrough", default="",
                    help="libfuse's passthrough_ll binary: adds its columns (plain, -o writeback)")
    ap.add_argument("--writeback", action="store_true",
                    help="add a column for a mount with `cisc up --writeback`")
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
    names, places, pts = ["ciscfs", "tmpfs"], [mnt, tmp], []
    use_pt = a.passthrough and os.access(a.passthrough, os.X_OK)
    if a.passthrough and not use_pt:
        print("(no %s: no passthrough columns)" % a.passthrough)
    up = [a.cisc, "up", "--size", "6G", "--cores", a.cores, "--dispatch", a.dispatch,
          "--media-io", a.media_io]
    sh(up + [img, mnt])
    mnt_wb = None
    try:
        if a.writeback:
            mnt_wb = os.path.join(work, "m-wb")
            os.mkdir(mnt_wb)
            sh(up + ["--writeback", img + "-wb", mnt_wb])
            names.append("ciscfs-wb")
            places.append(mnt_wb)
        if use_pt:
            for wb in (False, True):
                src = tempfile.mkdtemp(prefix="ciscfs-bench-pt-", dir="/dev/shm")
                ptm = os.path.join(work, "pt-wb" if wb else "pt")
                os.mkdir(ptm)
                pts.append((pt_mount(a.passthrough, src, ptm, wb), ptm, src))
                names.append("pt_ll-wb" if wb else "pt_ll")
                places.append(ptm)
        print("device model: cores %s, sched fifo, dispatch %s, media unthrottled; image %s (on %s)"
              % (a.cores, a.dispatch, img, sh(["df", "--output=fstype", imgdir]).stdout.split()[-1]))
        if use_pt:
            print("pt_ll: libfuse passthrough_ll over tmpfs; pt_ll-wb: the same with -o writeback")
        rnames = ["/" + n for n in names[1:]]
        if "ciscfs-wb" in names and "pt_ll-wb" in names:
            global WB_PAIR
            WB_PAIR = (names.index("ciscfs-wb"), names.index("pt_ll-wb"))
            rnames.append("wb/pt-wb")
        print("%-22s %-6s" % ("job", "unit") + "".join(" %12s" % n for n in names) +
              "".join(" %9s" % n for n in rnames))
        rows = run_all(places, a.mdstorm, a.runtime, max(1, a.repeat))
        status = sh([a.cisc, "status", mnt]).stdout
    finally:
        for p, ptm, src in pts:
            pt_umount(p, ptm)
            subprocess.run(["rm", "-rf", src])
        subprocess.run([a.cisc, "down", mnt])
        if mnt_wb and os.path.ismount(mnt_wb):
            subprocess.run([a.cisc, "down", mnt_wb])
        subprocess.run(["rm", "-rf", work, tmp, imgdir])
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "fs-%s.csv" % time.strftime("%Y%m%d-%H%M%S"))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "unit"] + names + ["ratio_" + n for n in names[1:]] +
                   (["ratio_wb_pt_ll-wb"] if WB_PAIR else []))
        for r in rows:
            w.writerow([r[0], r[1]] + ["%.1f" % v for v in r[2:]] +
                       ["%.3f" % x for x in ratios(r)])
    print("\ndevice statistics after the run:\n" + status)
    print("saved %s" % path)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench/offload/bench_offload.py - `make bench-offload`: filter a large log
for a rare pattern (a) with grep reading the file through the FUSE mount
and (b) with `cisc run` and examples/bpf/grep.c inside the device, in one
run; prints the time and the bytes moved from the device to the host for
both, and checks that both found the same lines.

Bytes moved device -> host: (a) the bytes the device served to FUSE reads
(the `op read` counter of `cisc status`) plus a 16-byte reply header per
read; (b) the result bytes `cisc run` received (its -v report) plus, per
fused op, its completion entry and step results (64 bytes).
Caches: the image lives in /dev/shm (RAM, unthrottled media: the run
measures the device's path, not the host's disk), the same for (a) and
(b). Before each timed run the kernel's page cache is dropped (when root)
so that grep's reads reach the device instead of the kernel's cache of the
mount; the device itself keeps no cache of file data, so (b) reads the
image exactly as the device does when it serves (a). The report says
which of these held. Each method runs --repeat times, alternating, and
the best time of each is shown. (b) runs under each --variant (a media
I/O backend, optionally another cisc binary: before/after), alternating
within each round on the same image; the first variant is the baseline
of the printed ratios. After a device (re)starts, one untimed run of (b)
warms it (the mapped backend maps the image's pages on first touch).
Not a test: nothing here asserts a number. --perf records a profile of
the device during (b) with perf(1).
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time

WORDS = ("the quick brown fox jumps over lazy dog request served user session timeout "
         "disk cache hit miss read write open close kernel net eth0 sda1 ok done retry "
         "GET POST 200 404 500 latency upstream worker queue").split()


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def drop_caches():
    if os.geteuid() == 0:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")


def make_log(path, size, rate, pattern, seed=1):
    """Writes about `size` bytes of log lines; a fraction `rate` of them
    contains the pattern. Returns (bytes, lines, matching lines)."""
    rnd = random.Random(seed)
    pool = []
    for i in range(50000):
        words = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(6, 16)))
        pool.append("2024-05-01T%02d:%02d:%02d.%06d host%03d svc[%d]: %s" %
                    (i // 3600 % 24, i // 60 % 60, i % 60, i, i % 200, i % 30000, words))
    written = lines = hits = 0
    with open(path, "w") as f:
        while written < size:
            batch = []
            for _ in range(10000):
                line = rnd.choice(pool)
                if rnd.random() < rate:   # same length as the others: bytes match lines
                    tail = " " + pattern + " code=28"
                    line = line[:max(len(line) - len(tail), 40)] + tail
                    hits += 1
                batch.append(line + "\n")
            data = "".join(batch)
            f.write(data)
            written += len(data)
            lines += len(batch)
    return written, lines, hits


FUSE_OUT_HEADER = 16     # struct fuse_out_header before each read reply's data
CQE_AND_RESULTS = 32 + 2 * 16   # a CQE and the two step results of each fused op


def status_reads(cisc, mnt):
    """(count, bytes) of the device's read ops so far (FUSE reads)."""
    out = sh([cisc, "status", "--raw", mnt]).stdout
    m = re.search(r"^op read count (\d+) errors \d+ bytes (\d+)", out, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def grep_via_fuse(cisc, mnt, pattern, out):
    c0, b0 = status_reads(cisc, mnt)
    drop_caches()
    t0 = time.monotonic()
    with open(out, "w") as f:
        subprocess.run(["grep", "-F", pattern, os.path.join(mnt, "bench.log")], stdout=f,
                       check=True)
    t = time.monotonic() - t0
    c1, b1 = status_reads(cisc, mnt)
    return t, (b1 - b0) + (c1 - c0) * FUSE_OUT_HEADER


def grep_in_device(cisc, mnt, pattern, out, block, chunk, perf_out):
    drop_caches()
    cmd = [cisc, "run", mnt, "--prog", "grep", "--input", "/bench.log", "--arg",
           "0=str:" + pattern, "--block-size", str(block), "--block-out", str(block + 4096),
           "--chunk", chunk, "-v"]
    perf = None
    if perf_out:
        pid = re.search(r"device pid (\d+)", sh([cisc, "status", "--raw", mnt]).stdout).group(1)
        perf = subprocess.Popen(["perf", "record", "-g", "-o", perf_out, "-p", pid],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    t0 = time.monotonic()
    with open(out, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, text=True, check=True)
    t = time.monotonic() - t0
    if perf:
        perf.send_signal(2)
        perf.wait()
    m = re.search(r"(\d+) bytes of result .* (\d+) fused ops", r.stderr)
    return t, int(m.group(1)) + int(m.group(2)) * CQE_AND_RESULTS if m else -1


def parse_variants(specs, cisc):
    """--variant LABEL:MEDIA_IO[:CISC] -> [(label, media_io, cisc)]."""
    out = []
    for v in specs:
        parts = v.split(":", 2)
        if len(parts) < 2 or parts[1] not in ("", "auto", "pread", "mmap"):
            raise SystemExit("bench-offload: bad --variant %r (LABEL:auto|pread|mmap[:CISC])"
                             % v)
        out.append((parts[0], parts[1], parts[2] if len(parts) == 3 else cisc))
    return out


def device_up(cisc, img, mnt, work, size_img, cores, media_io, fresh):
    cmd = [cisc, "up", "--cores", str(cores), "--log", os.path.join(work, "log")]
    if fresh:
        cmd += ["--size", size_img]
    if media_io:
        cmd += ["--media-io", media_io]
    for tries in range(100):   # `cisc down` may return before the old device let go
        try:
            sh(cmd + [img, mnt])
            return
        except subprocess.CalledProcessError as e:
            if "in use" not in (e.stderr or "") or tries == 99:
                raise
            time.sleep(0.1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cisc", required=True)
    ap.add_argument("--grep-obj", required=True, help="examples/bpf/grep.o")
    ap.add_argument("--size", type=int, default=1 << 30, help="log bytes (default 1 GiB)")
    ap.add_argument("--rate", type=float, default=0.01, help="fraction of matching lines")
    ap.add_argument("--pattern", default="ERR_DISK_FULL")
    ap.add_argument("--block", type=int, default=65536, help="bytes per program invocation")
    ap.add_argument("--chunk", default="8M", help="input bytes per fused op")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs of each")
    ap.add_argument("--image-dir", default="/dev/shm")
    ap.add_argument("--variant", action="append",
                    help="LABEL:auto|pread|mmap[:CISC]: a device configuration to run (b) "
                         "on (repeatable; the same image; the first is the baseline of the "
                         "ratios); default: pread, and the default media I/O (auto: mmap "
                         "for an image in RAM) with --cisc")
    ap.add_argument("--perf", help="record a perf profile of the device during (b) here")
    a = ap.parse_args()
    # the default (auto: mmap, the image being in RAM) against pread
    variants = parse_variants(a.variant or ["pread:pread", "default:auto"], a.cisc)

    load0 = " ".join("%.2f" % x for x in os.getloadavg())
    work = tempfile.mkdtemp(prefix="cisc-offload-", dir="/tmp")
    img = tempfile.mktemp(prefix="cisc-offload-", suffix=".img", dir=a.image_dir)
    mnt = os.path.join(work, "m")
    os.mkdir(mnt)
    size_img = "%dM" % ((a.size * 2 + (512 << 20)) >> 20)
    up = None   # the variant whose device is up
    try:
        device_up(variants[0][2], img, mnt, work, size_img, a.cores, variants[0][1], True)
        up = variants[0]
        cisc = up[2]
        t0 = time.monotonic()
        nbytes, nlines, hits = make_log(os.path.join(mnt, "bench.log"), a.size, a.rate,
                                        a.pattern)
        print("log: %d bytes, %d lines, %d (%.2f%%) contain %r; written in %.1f s" %
              (nbytes, nlines, hits, 100.0 * hits / nlines, a.pattern, time.monotonic() - t0))
        sh([cisc, "prog", "load", mnt, a.grep_obj, "--name", "grep"])
        res_a = None
        res_b = {v[0]: [] for v in variants}
        bytes_b = {}
        for _ in range(a.repeat):
            for v in variants:   # alternating: one run of each variant per round
                if up != v:
                    sh([up[2], "down", mnt])
                    up = None
                    device_up(v[2], img, mnt, work, size_img, a.cores, v[1], False)
                    up = v   # the registry is on the image: grep stays loaded
                    # Untimed: a device that just started has not mapped the
                    # image's pages yet (mmap); a running one has.
                    grep_in_device(v[2], mnt, a.pattern, os.path.join(work, "b.out"),
                                   a.block, a.chunk, None)
                cisc = v[2]
                ta, ba = grep_via_fuse(cisc, mnt, a.pattern, os.path.join(work, "a.out"))
                tb, bb = grep_in_device(cisc, mnt, a.pattern, os.path.join(work, "b.out"),
                                        a.block, a.chunk, a.perf)
                sh(["cmp", os.path.join(work, "a.out"), os.path.join(work, "b.out")])
                res_a = (ta, ba) if not res_a or ta < res_a[0] else res_a
                res_b[v[0]].append(tb)
                bytes_b[v[0]] = bb
        st = sh([cisc, "status", "--raw", mnt]).stdout
        model = re.search(r"^model .*$", st, re.M).group(0)
        print("device: %s" % model)
        print("host: %d cpus, load average %s at the start (the device, the client and "
              "grep share them)" % (os.cpu_count(), load0))
        print("caches: image in %s (RAM) for both; kernel page cache of the mount %s "
              "before each run; no data cache in the device" %
              (a.image_dir, "dropped" if os.geteuid() == 0 else
               "NOT dropped (not root: grep may be served by the kernel)"))
        print("(b) block %d bytes (out %d), chunk %s per fused op, examples/bpf/grep.c, "
              "search helpers native" % (a.block, a.block + 4096, a.chunk))
        print("%d rounds, each variant once per round (alternating); (a) best over all "
              "rounds; (b) best and median per variant" % a.repeat)
        print()
        print("%-40s %8s %8s %9s %16s %10s" % ("method", "best s", "median", "(a)/best",
                                               "device->host B", "reduction"))
        print("%-40s %8.3f %8s %9s %16d %10s" % ("(a) grep through the FUSE mount", res_a[0],
                                                  "", "1.00", res_a[1], "1x"))
        base = None
        for v in variants:
            ts = sorted(res_b[v[0]])
            best, med = ts[0], ts[len(ts) // 2]
            base = base or (best, med)
            print("%-40s %8.3f %8.3f %9.2f %16d %9.1fx" %
                  ("(b) in the device, %s (media-io %s)" % (v[0], v[1] or "default"), best,
                   med, res_a[0] / best, bytes_b[v[0]], res_a[1] / max(bytes_b[v[0]], 1)))
        print()
        print("outputs identical: yes (%d bytes) in every run" %
              os.path.getsize(os.path.join(work, "b.out")))
        for v in variants[1:]:
            ts = sorted(res_b[v[0]])
            print("%s vs %s: %.2fx faster (best), %.2fx (median)" %
                  (v[0], variants[0][0], base[0] / ts[0], base[1] / ts[len(ts) // 2]))
    except subprocess.CalledProcessError as e:
        print("bench-offload: %s failed:\n%s%s" % (" ".join(e.cmd), e.stdout or "",
                                                  e.stderr or ""), file=sys.stderr)
        return 1
    finally:
        if up:
            subprocess.run([up[2], "down", mnt], capture_output=True)
        if os.path.exists(img):
            os.unlink(img)
        subprocess.run(["rm", "-rf", work])
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""bench/recovery/bench_recovery.py - `make bench-recovery`: FusionFS
(FAST'22) Table 10c/10d on this machine. Not a test: nothing here asserts
a number.

Recovery (10c): THREADS client threads each submit one append-CRC-write
(an append of MIB MiB, its CRC-32C appended after it, FSYNC) to a device
started with a crash point: F1 (before the append commits) or F2 (after
the checksum), with "@THREADS" (crash.h): the device stops dead when the
last thread's op reaches the point, every op cut there. Then, from the device's restart until every
op's effect is present:
  posix    `cisc up`, then the application redoes every op it did not
           see acknowledged through the mount (write, CRC on the host,
           write, fsync);
  macro    `cisc up --tx macro`, then the application re-submits the
           fused ops;
  autorec  `cisc up --tx autorec`: the device finishes the ops it had
           given a receipt for before it serves; the application
           re-submits only the ops whose effect is missing (cut before
           their log committed).
Latency (10d): mean of append-CRC-write (4 KiB) and of a ten-write vector
(10 x 4 KiB), each with an FSYNC step, under macro, micro and autorec.

The image lives in /dev/shm: the media is memory, so the figures compare
software paths (and the log's extra bytes), not a disk. CSV in
bench/out/recovery.csv, plot in bench/out/recovery.png.
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time


def sh(cmd, check=True, env=None):
    return subprocess.run(cmd, check=check, text=True, capture_output=True, env=env)


class Device:
    def __init__(self, cisc, root):
        self.cisc = cisc
        self.img = os.path.join(root, "img")
        self.mnt = os.path.join(root, "m")
        os.makedirs(self.mnt, exist_ok=True)

    def up(self, tx, crash=None):
        env = dict(os.environ)
        if crash:
            env["CISC_CRASH_POINT"] = crash
        t0 = time.monotonic()
        sh([self.cisc, "up", "--size", "2G", "--cores", "4", "--tx", tx, self.img, self.mnt],
           env=env)
        return time.monotonic() - t0

    def status(self):
        return sh([self.cisc, "status", "--raw", self.mnt]).stdout

    def pid(self):
        for l in self.status().splitlines():
            if l.startswith("device pid "):
                return int(l.split()[2])
        return -1

    def down(self):
        sh([self.cisc, "down", self.mnt], check=False)
        self.settle()

    def settle(self):
        """Waits until no device or reaper of this image runs and the mount is gone."""
        for _ in range(300):
            r = sh(["pgrep", "-f", "cisc u[p] .*" + self.img], check=False)
            mounted = self.mnt in open("/proc/mounts").read()
            if r.returncode != 0 and not mounted:
                return
            if mounted and r.returncode != 0:
                sh(["umount", "-l", self.mnt], check=False)
            time.sleep(0.1)
        sys.exit("device on %s does not go away" % self.img)

    def fresh(self):
        if os.path.exists(self.img):
            os.unlink(self.img)


def crash_run(dev, bench, tx, point, threads, mib):
    """Starts the device with the crash point, runs the fused workload until
    the device dies."""
    dev.fresh()
    dev.up(tx, point)
    pid = dev.pid()
    client = subprocess.Popen([bench, "fused", dev.mnt, tx, str(threads), str(mib)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if not os.path.exists("/proc/%d" % pid) or \
                open("/proc/%d/stat" % pid).read().split(")")[1].split()[0] == "Z":
            break
        time.sleep(0.05)
    client.kill()
    client.wait()
    dev.settle()


def recovery(dev, bench, system, point, threads, mib):
    crash_run(dev, bench, "autorec" if system == "autorec" else "macro", point, threads, mib)
    t0 = time.monotonic()
    dev.up("autorec" if system == "autorec" else "macro")
    if system == "posix":
        sh([bench, "posix", dev.mnt, str(threads), str(mib)])
    elif system == "macro":
        sh([bench, "fused", dev.mnt, "macro", str(threads), str(mib)])
    else:   # ops without a receipt (their log never committed) are the application's
        sh([bench, "missing", dev.mnt, str(threads), str(mib)])
    elapsed = time.monotonic() - t0
    recovered = [l for l in dev.status().splitlines() if l.startswith("recovery op ")]
    dev.down()
    return elapsed, len(recovered)


def latency(dev, bench, tx, n):
    dev.fresh()
    dev.up(tx)
    out = sh([bench, "lat", dev.mnt, tx, str(n)]).stdout.split()
    model = [l for l in dev.status().splitlines() if l.startswith(("model", "tx mode"))]
    dev.down()
    return float(out[0]), float(out[1]), model


def plot(rec, lat, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib missing: no plot)")
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
    systems = ["posix", "macro", "autorec"]
    for k, s in enumerate(systems):
        ys = [next(r["ms"] for r in rec if r["system"] == s and r["point"] == p)
              for p in ("F1", "F2")]
        a1.bar([x + k * 0.27 for x in range(2)], ys, 0.27, label=s)
    a1.set_xticks([x + 0.27 for x in range(2)], ["F1", "F2"])
    a1.set_ylabel("restart until all effects present (ms)")
    a1.set_title("recovery (Table 10c)")
    a1.legend()
    modes = [r["mode"] for r in lat]
    a2.bar([x - 0.2 for x in range(len(modes))], [r["acw_us"] for r in lat], 0.4,
           label="append-CRC-write")
    a2.bar([x + 0.2 for x in range(len(modes))], [r["vw_us"] for r in lat], 0.4,
           label="ten-write vector")
    a2.set_xticks(range(len(modes)), modes)
    a2.set_ylabel("mean latency (us)")
    a2.set_title("latency (Table 10d)")
    a2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("plot:", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cisc", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--mib", type=int, default=16)
    ap.add_argument("--lat-ops", type=int, default=300)
    ap.add_argument("--runs", type=int, default=5,
                    help="alternating runs per cell (median)")
    a = ap.parse_args()
    os.makedirs("bench/out", exist_ok=True)
    root = tempfile.mkdtemp(prefix="cisc-bench-recovery-", dir="/dev/shm")
    dev = Device(os.path.abspath(a.cisc), root)
    rec, lat, model = [], [], []
    try:
        # Alternating runs (the machine is shared and noisy): every system
        # once per round, the median of the rounds per cell.
        points = (("F1", "before-commit:1@%d" % a.threads), ("F2", "after-commit:2@%d" % a.threads))
        systems = ("posix", "macro", "autorec")
        runs = {(p, s): [] for p, _ in points for s in systems}
        for _ in range(a.runs):
            for point, spec in points:
                for system in systems:
                    runs[(point, system)].append(
                        recovery(dev, a.bench, system, spec, a.threads, a.mib))
        for point, _ in points:
            for system in systems:
                r = sorted(runs[(point, system)])
                ms, nrec = r[len(r) // 2][0] * 1000, r[len(r) // 2][1]
                rec.append({"point": point, "system": system, "ms": round(ms, 1),
                            "recovered_ops": nrec})
        modes = ("macro", "micro", "autorec")
        lats = {m: [] for m in modes}
        for _ in range(a.runs):
            for tx in modes:
                acw, vw, model = latency(dev, a.bench, tx, a.lat_ops)
                lats[tx].append((acw, vw))
        for tx in modes:
            acws = sorted(x[0] for x in lats[tx])
            vws = sorted(x[1] for x in lats[tx])
            lat.append({"mode": tx, "acw_us": acws[len(acws) // 2],
                        "vw_us": vws[len(vws) // 2]})
    finally:
        dev.settle()
        sh(["rm", "-rf", root], check=False)
    print("device model:", "; ".join(model))
    print("threads %d, append %d MiB each, image in /dev/shm" % (a.threads, a.mib))
    print("\nrecovery: restart until every op's effect is present (median of %d "
          "alternating runs)" % a.runs)
    print("%-4s %10s %10s %10s %12s %12s" % ("", "posix ms", "macro ms", "autorec ms",
                                             "macro/auto", "posix/auto"))
    for p in ("F1", "F2"):
        g = {r["system"]: r["ms"] for r in rec if r["point"] == p}
        n = next(r["recovered_ops"] for r in rec if r["point"] == p and r["system"] == "autorec")
        rm, rp = g["macro"] / g["autorec"], g["posix"] / g["autorec"]
        print("%-4s %10.1f %10.1f %10.1f %12.2f %12.2f   (autorec recovered %d ops; target "
              ">= 2.00 %s, >= 2.50 %s)" % (p, g["posix"], g["macro"], g["autorec"], rm, rp, n,
                                          "met" if rm >= 2 else "missed",
                                          "met" if rp >= 2.5 else "missed"))
    print("\nlatency (mean us per op, median of %d alternating runs)" % a.runs)
    base = lat[0]
    bound = {"macro": None, "micro": 0.10, "autorec": 0.30}   # the targets vs macro
    for r in lat:
        da, dv = r["acw_us"] / base["acw_us"] - 1, r["vw_us"] / base["vw_us"] - 1
        b = bound[r["mode"]]
        verdict = "" if b is None else "   (target within %d%%: acw %s, ten-write %s)" % (
            round(100 * b), "met" if da <= b else "missed", "met" if dv <= b else "missed")
        print("%-8s acw %8.1f (%+.0f%%)   ten-write %8.1f (%+.0f%%)%s" % (
            r["mode"], r["acw_us"], 100 * da, r["vw_us"], 100 * dv, verdict))
    with open("bench/out/recovery.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["table", "key", "system_or_mode", "value", "unit"])
        for r in rec:
            w.writerow(["10c", r["point"], r["system"], r["ms"], "ms"])
        for r in lat:
            w.writerow(["10d", "append-CRC-write", r["mode"], r["acw_us"], "us"])
            w.writerow(["10d", "ten-write", r["mode"], r["vw_us"], "us"])
    print("csv: bench/out/recovery.csv")
    plot(rec, lat, "bench/out/recovery.png")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench/flash/bench_flash.py - the flash model end to end (`make bench-flash`,
after the model-only cisc-bench-flash): a real device (`cisc up --media
flash`) driven by fio on its FUSE mount and by libcisc (cisc-bench-flash-lib).

  scale    random 4 KiB read IOPS at queue depths 2, 4 and 8 x the dies (4
           and 16 dies in one member), on the mount (fio, direct, that many
           threads) and through libcisc (one thread, that many reads in
           flight, one per queue; the client sleeps, never spins), beside
           the ideal dies / t_read and the closed-network expectation
           N/(N+M-1) x dies / (t_read + t_xfer) (N requests placed at random
           over M dies leave (M-1)/(N+M-1) of them idle); and array members
           (1, 2, 4 member images of one die each, 32 fio threads); with a
           slow configured read (4 ms, --scale-read-ns) so that the model,
           not the host, sets the pace (at 1 ms, 16 dies ask 16k IOPS of the
           mount, more than this shared 2-CPU host serves)
  latency  4 KiB random-read latency at queue depth 1 against the configured
           read latency (StorStack-style sweep: file media, 18 us, 100 us,
           1 ms, 5 ms) on the mount and through libcisc; beside it the model's
           t_read + t_xfer, and the device process's CPU per second of the run
           (replies wait in a timer queue, not in a spinning core)
  gc       4 KiB random writes each followed by fsync on a nearly full device,
           with little spare (foreground GC) and with much (none): p50/p99 of
           the fsync'd write, and the GC runs the device counted
  cores    the FTL's core scaling through the device: 1..4 device cores
           (`--cores N`), the FTL as a single lock (one partition), as N
           partitions behind locks, or as N FTL cores fed through rings
           (`--flash-ftl cores`); every host page operation takes a modelled
           FTL time on its partition's core (`--flash-ftl-ns`, 1 ms by default
           so that the FTL, not the NAND or this host, sets the pace); one
           libcisc thread keeps 64 random 4 KiB reads in flight; IOPS and the
           ratio to one core, beside the closed-network expectation
           N/(N+P-1) x P / t_ftl, and the device's CPU per read
  forms    what the FTL cores cost the host: the same device (8 x 4 dies,
           4 partitions, 18 us reads, no FTL time) with the FTL behind locks
           and as cores, alternating: random 4 KiB read IOPS and the device's
           CPU per read, through the mount (fio, 16 threads) and libcisc (qd 64)

Every configuration prints the device model (its `flash member` line).
Writes bench/out/flash_e2e_{scale,latency,gc}.csv and flash_e2e.png. The
host is shared and noisy: each point is the best of --repeat runs. Not a
test: nothing here asserts a number.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

QD = 32
XFER_NS = 4000


def sh(cmd, check=True):
    return subprocess.run(cmd, check=check, text=True, capture_output=True)


class Device:
    """A device on a fresh image (or member images) with the given options."""

    def __init__(self, a, opts, members=0, size="256M", cores=2):
        self.a = a
        self.dir = tempfile.mkdtemp(prefix="cisc-bench-flash-", dir=a.image_dir)
        self.mnt = os.path.join(self.dir, "m")
        os.mkdir(self.mnt)
        img = os.path.join(self.dir, "img")
        if members:
            sh([a.cisc, "mkfs", "--members", str(members), "--size", size, img])
            opts = ["--members", str(members)] + opts
        else:
            sh([a.cisc, "mkfs", "--size", size, img])
        sh([a.cisc, "up", "--cores", str(cores)] + opts + [img, self.mnt])
        self.pid = int(self.status_key("device pid"))

    def status(self):
        return sh([self.a.cisc, "status", "--raw", self.mnt]).stdout

    def status_key(self, prefix):
        for line in self.status().splitlines():
            if line.startswith(prefix + " "):
                return line[len(prefix) + 1:].split()[0]
        return None

    def model_line(self):
        lines = [l for l in self.status().splitlines() if l.startswith("flash member ")]
        return lines[0] + (" (x%d members)" % len(lines) if len(lines) > 1 else "") \
            if lines else "file media (no model)"

    def field(self, line_prefix, key):
        total = 0
        for line in self.status().splitlines():
            if line.startswith(line_prefix + " "):
                f = line.split()
                total += int(f[f.index(key) + 1])
        return total

    def cpu_s(self):
        f = open("/proc/%d/stat" % self.pid).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def down(self):
        sh([self.a.cisc, "down", self.mnt], check=False)
        sh(["rm", "-rf", self.dir], check=False)


def fio(d, name, opts, runtime):
    base = ["fio", "--name=" + name, "--filename=" + os.path.join(d.mnt, name),
            "--group_reporting",
            "--output-format=json", "--runtime=%g" % runtime, "--time_based"]
    base += ["--%s=%s" % kv for kv in opts.items()]
    return json.loads(sh(base).stdout)["jobs"][0]


def layout(d, name, size):
    """Writes the file (name) fio will use, synced, so reads reach the media."""
    sh(["fio", "--name=lay", "--filename=" + os.path.join(d.mnt, name), "--rw=write",
        "--bs=1M", "--size=" + size, "--end_fsync=1", "--output-format=json"])


def cold(d):
    """Reads must reach the device: drop the kernel's cache of the mount."""
    os.sync()
    if os.geteuid() == 0:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")


def best(values, key, high=True):
    vals = [v for v in values if v is not None]
    return (max if high else min)(vals, key=key) if vals else None


# ---- scale ---------------------------------------------------------------------

def expected(qd, dies, t_read):
    """Closed network: qd requests over `dies` dies, each placed at random,
    leave (dies-1)/(qd+dies-1) of the dies idle; a die serves a read in
    t_read + t_xfer (it holds the page until the channel sent it)."""
    return qd / (qd + dies - 1) * dies / ((t_read + XFER_NS) / 1e9)


def read_iops(a, d, via, qd):
    """Best IOPS of a.repeat runs at queue depth qd: fio threads on the mount,
    or one libcisc thread with qd reads in flight (cisc-bench-flash-lib qd)."""
    runs = []
    for _ in range(a.repeat):
        cold(d)
        if via == "mount":
            j = fio(d, "r", {"rw": "randread", "bs": "4k", "size": "64M", "direct": "1",
                             "ioengine": "psync", "numjobs": str(qd), "thread": "1"},
                    a.runtime)
            runs.append(j["read"]["iops"])
        else:
            out = sh([a.lib, d.mnt, "r", str(a.runtime), "qd", str(qd)]).stdout.split()
            runs.append(float(dict(zip(out[::2], out[1::2]))["iops"]))
    return max(runs)


def qd_sweep(a, label, opts, dies, t_read):
    """One device; random reads at queue depths 2, 4 and 8 x its dies."""
    d = Device(a, ["--media", "flash", "--flash-read-ns", str(t_read)] + opts)
    rows = []
    try:
        print("  model:", d.model_line())
        layout(d, "r", "64M")
        ideal = dies / (t_read / 1e9)
        for via in ("mount", "libcisc"):
            for mult in (2, 4, 8):
                qd = mult * dies
                iops, exp = read_iops(a, d, via, qd), expected(qd, dies, t_read)
                print("  %-10s %-8s qd %4d  IOPS %8.0f  %.2f of ideal %8.0f   expected %8.0f "
                      "(%.2f)" % (label, via, qd, iops, iops / ideal, ideal, exp, exp / ideal))
                rows.append([label, dies, 1, via, qd, round(iops), round(ideal),
                             round(iops / ideal, 3), round(exp), round(exp / ideal, 3)])
    finally:
        d.down()
    return rows


def member_point(a, members, t_read):
    d = Device(a, ["--media", "flash", "--flash-read-ns", str(t_read), "--flash-channels", "1",
                   "--flash-dies", "1"], members)
    try:
        print("  model:", d.model_line())
        layout(d, "r", "64M")
        iops = read_iops(a, d, "mount", QD)
    finally:
        d.down()
    ideal = members / (t_read / 1e9)
    exp = expected(QD, members, t_read)
    print("  %d member(s) x 1 die  mount qd %d  IOPS %8.0f  %.2f of ideal %8.0f   expected "
          "%8.0f (%.2f)" % (members, QD, iops, iops / ideal, ideal, exp, exp / ideal))
    return ["%d member(s) x 1 die" % members, members, members, "mount", QD, round(iops),
            round(ideal), round(iops / ideal, 3), round(exp), round(exp / ideal, 3)]


def scale(a):
    t = a.scale_read_ns
    print("== scale: random 4 KiB reads, t_read %g ms; ideal = dies / t_read; expected = "
          "N/(N+M-1) x dies/(t_read+t_xfer) (best of %d)" % (t / 1e6, a.repeat))
    rows = []
    for ch, dies in ((2, 2), (4, 4)):
        rows += qd_sweep(a, "%dx%d dies" % (ch, dies),
                         ["--flash-channels", str(ch), "--flash-dies", str(dies)], ch * dies, t)
    for m in (1, 2, 4):
        rows.append(member_point(a, m, t))
    one = [r for r in rows if r[0].startswith("1 member")]
    four = [r for r in rows if r[0].startswith("4 member")]
    if one and four:
        print("  4 members / 1 member: x%.2f" % (four[0][5] / one[0][5]))
    return rows


# ---- latency --------------------------------------------------------------------

def lat_point(a, t_read):
    opts = ["--media", "flash", "--flash-read-ns", str(t_read)] if t_read else []
    d = Device(a, opts)
    try:
        print("  model:", d.model_line())
        layout(d, "r", "64M")
        mount, lib = [], []
        for _ in range(a.repeat):
            cold(d)
            c0, w0 = d.cpu_s(), time.time()
            j = fio(d, "r", {"rw": "randread", "bs": "4k", "size": "64M", "direct": "1",
                             "ioengine": "psync", "numjobs": "1"}, a.runtime)
            cpu = (d.cpu_s() - c0) / (time.time() - w0)
            cl = j["read"]["clat_ns"]
            mount.append((cl["mean"] / 1000, cl["percentile"]["99.000000"] / 1000, cpu))
            out = sh([a.lib, d.mnt, "r", str(a.runtime), "1"]).stdout.split()
            kv = dict(zip(out[::2], out[1::2]))
            lib.append((float(kv["mean_us"]), float(kv["p99_us"]),
                        float(kv["client_cpu_s"]) / float(kv["wall_s"])))
        m = best(mount, key=lambda x: x[0], high=False)
        l = best(lib, key=lambda x: x[0], high=False)
    finally:
        d.down()
    model_us = (t_read + XFER_NS) / 1000 if t_read else 0
    label = "%g us" % (t_read / 1000) if t_read else "file"
    print("  %-8s model %7.1f us | mount mean %7.1f p99 %7.1f us, device CPU %4.0f%% | "
          "libcisc mean %7.1f p99 %7.1f us, client CPU %4.0f%%" %
          (label, model_us, m[0], m[1], 100 * m[2], l[0], l[1], 100 * l[2]))
    return [label, t_read, model_us, round(m[0], 1), round(m[1], 1), round(100 * m[2], 1),
            round(l[0], 1), round(l[1], 1), round(100 * l[2], 1)]


def latency(a):
    print("== latency: 4 KiB random reads at QD 1 against the configured read latency "
          "(best mean of %d)" % a.repeat)
    return [lat_point(a, t) for t in (0, 18000, 100000, 1000000, 5000000)]


# ---- gc ------------------------------------------------------------------------

def gc_point(a, label, op):
    geom = ["--media", "flash", "--flash-channels", "1", "--flash-dies", "2",
            "--flash-pages", "64", "--flash-op", str(op)]
    d = Device(a, geom, size="128M")
    try:
        print("  model:", d.model_line())
        layout(d, "w", "80M")   # most of the file system: GC must move data
        layout(d, "w", "80M")
        fg0 = d.field("flash_ftl", "gc_fg")
        j = fio(d, "w", {"rw": "randwrite", "bs": "4k", "size": "80M", "fsync": "1",
                         "ioengine": "psync", "numjobs": "1"}, 2 * a.runtime)
        w, s = j["write"]["clat_ns"], j.get("sync", {}).get("lat_ns", {})
        p50 = (w["percentile"]["50.000000"] + s.get("percentile", {}).get("50.000000", 0)) / 1000
        p99 = (w["percentile"]["99.000000"] + s.get("percentile", {}).get("99.000000", 0)) / 1000
        fg, waf = d.field("flash_ftl", "gc_fg") - fg0, d.status_key("flash_ftl member 0 waf")
    finally:
        d.down()
    print("  %-12s op %4d permille  write+fsync p50 %8.1f us  p99 %8.1f us  fg GC runs %d  "
          "WAF %s" % (label, op, p50, p99, fg, waf))
    return [label, op, round(p50, 1), round(p99, 1), fg, waf]


def gc(a):
    print("== gc: 4 KiB random writes, each fsync'd, on a nearly full device (one run each)")
    return [gc_point(a, "much spare", 1000), gc_point(a, "little spare", 30)]


# ---- cores and forms -----------------------------------------------------------

CORES_QD = 64
FORMS = (("single lock", "locks", lambda n: 1), ("partition locks", "locks", lambda n: n),
         ("cores", "cores", lambda n: n))


def read_point(a, d, via, qd):
    """Best of a.repeat runs: (IOPS, device CPU us per read)."""
    best = (0.0, 0.0)
    for _ in range(a.repeat):
        cold(d)
        c0 = d.cpu_s()
        if via == "mount":
            j = fio(d, "r", {"rw": "randread", "bs": "4k", "size": "64M", "direct": "1",
                             "ioengine": "psync", "numjobs": str(qd), "thread": "1"},
                    a.runtime)
            iops = j["read"]["iops"]
        else:
            out = sh([a.lib, d.mnt, "r", str(a.runtime), "qd", str(qd)]).stdout.split()
            iops = float(dict(zip(out[::2], out[1::2]))["iops"])
        cpu_us = (d.cpu_s() - c0) * 1e6 / max(iops * a.runtime, 1)
        if iops > best[0]:
            best = (iops, cpu_us)
    return best


def cores_point(a, label, ftl, parts, n, t_ftl):
    d = Device(a, ["--media", "flash", "--flash-channels", "12", "--flash-dies", "1",
                   "--flash-partitions", str(parts), "--flash-ftl", ftl,
                   "--flash-ftl-ns", str(t_ftl)], cores=n)
    try:
        layout(d, "r", "64M")
        model = d.model_line()
        iops, cpu = read_point(a, d, "libcisc", CORES_QD)
        locked = d.field("flash_ftl", "ops_locked")
        owned = d.field("flash_ftl", "ops_owned")
    finally:
        d.down()
    return iops, cpu, model, locked, owned


def cores(a):
    t = a.cores_ftl_ns
    print("== cores: random 4 KiB reads through libcisc (qd %d), 12 channels x 1 die, t_ftl %g ms "
          "a page on its partition's core; best of %d" % (CORES_QD, t / 1e6, a.repeat))
    rows, one = [], {}
    for n in range(1, 5):
        for label, ftl, parts in FORMS:
            p = parts(n)
            iops, cpu, model, locked, owned = cores_point(a, label, ftl, p, n, t)
            if n == 1:
                print("  model (%s):" % label, model)
            one.setdefault(label, iops)
            exp = CORES_QD / (CORES_QD + p - 1) * p / (t / 1e9)
            print("  %d cores  %-16s IOPS %7.0f (x%.2f)  expected %7.0f (x%.2f)  device CPU "
                  "%6.1f us/read  FTL ops owned %d locked %d" %
                  (n, label, iops, iops / one[label], exp, exp * t / 1e9, cpu, owned, locked))
            rows.append([n, label, p, round(iops), round(iops / one[label], 3), round(exp),
                         round(cpu, 1), owned, locked])
    return rows


def forms(a):
    print("== forms: the same device with the FTL behind locks and as FTL cores (8 x 4 dies, "
          "4 partitions, 18 us reads, no FTL time), alternating; best of %d" % a.repeat)
    rows = []
    for via, qd in (("mount", 16), ("libcisc", CORES_QD)):
        got = {}
        for rnd in range(a.rounds):
            for ftl in ("locks", "cores"):
                d = Device(a, ["--media", "flash", "--flash-partitions", "4", "--flash-ftl", ftl])
                try:
                    if rnd == 0 and via == "mount":
                        print("  model:", d.model_line())
                    layout(d, "r", "64M")
                    x = read_point(a, d, via, qd)
                finally:
                    d.down()
                if x[0] > got.get(ftl, (0, 0))[0]:
                    got[ftl] = x
        for ftl in ("locks", "cores"):
            print("  %-8s qd %3d  %-6s IOPS %8.0f  device CPU %6.1f us/read" %
                  (via, qd, ftl, got[ftl][0], got[ftl][1]))
            rows.append([via, qd, ftl, round(got[ftl][0]), round(got[ftl][1], 1)])
        print("  %-8s cores / locks: IOPS x%.2f, CPU per read x%.2f" %
              (via, got["cores"][0] / got["locks"][0], got["cores"][1] / got["locks"][1]))
    return rows


# ---- output --------------------------------------------------------------------

def save(out, name, header, rows):
    with open(os.path.join(out, name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def plot(out, sc, lat):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no PNG)")
        return
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for label in sorted({r[0] for r in sc if "dies" in r[0]}):
        for via, mk in (("mount", "o-"), ("libcisc", "s--")):
            rows = [r for r in sc if r[0] == label and r[3] == via]
            ax[0].plot([r[4] / r[1] for r in rows], [r[7] for r in rows], mk,
                       label="%s, %s" % (label, via))
        rows = [r for r in sc if r[0] == label and r[3] == "mount"]
        ax[0].plot([r[4] / r[1] for r in rows], [r[9] for r in rows], "k:",
                   label="%s, expected" % label)
    ax[0].axhline(0.8, color="r", lw=0.5)
    ax[0].set_xlabel("queue depth / dies")
    ax[0].set_ylabel("IOPS / (dies / t_read)")
    ax[0].set_title("random 4 KiB reads vs queue depth")
    ax[0].legend(fontsize=7)
    pts = [r for r in lat if r[1]]
    ax[1].loglog([r[2] for r in pts], [r[3] for r in pts], "o-", label="mount mean")
    ax[1].loglog([r[2] for r in pts], [r[6] for r in pts], "s-", label="libcisc mean")
    ax[1].loglog([r[2] for r in pts], [r[2] for r in pts], "k:", label="model")
    ax[1].set_xlabel("model read latency (us)")
    ax[1].set_ylabel("measured QD1 latency (us)")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "flash_e2e.png"), dpi=100)
    print("wrote", os.path.join(out, "flash_e2e.png"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cisc", required=True)
    p.add_argument("--lib", required=True, help="cisc-bench-flash-lib")
    p.add_argument("--out", default="bench/out")
    p.add_argument("--image-dir", default="/dev/shm")
    p.add_argument("--runtime", type=float, default=3)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--only", default="scale,latency,gc,cores,forms")
    p.add_argument("--rounds", type=int, default=2,
                   help="forms: alternating rounds of the two forms")
    p.add_argument("--cores-ftl-ns", type=int, default=1000000,
                   help="t_ftl of the cores section (slow, so that the FTL sets the pace)")
    p.add_argument("--scale-read-ns", type=int, default=4000000,
                   help="t_read of the scale section (slow, so that the model sets the pace)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    only = a.only.split(",")
    sc = scale(a) if "scale" in only else []
    lat = latency(a) if "latency" in only else []
    g = gc(a) if "gc" in only else []
    co = cores(a) if "cores" in only else []
    fo = forms(a) if "forms" in only else []
    save(a.out, "flash_e2e_scale.csv", ["config", "dies", "members", "via", "qd", "iops", "ideal",
                                        "ratio", "expected", "expected_ratio"], sc)
    save(a.out, "flash_e2e_latency.csv", ["t_read", "t_read_ns", "model_us", "mount_mean_us",
                                          "mount_p99_us", "device_cpu_pct", "lib_mean_us",
                                          "lib_p99_us", "client_cpu_pct"], lat)
    save(a.out, "flash_e2e_gc.csv", ["config", "op_permille", "p50_us", "p99_us", "gc_fg",
                                     "waf"], g)
    save(a.out, "flash_e2e_cores.csv", ["cores", "ftl", "partitions", "iops", "x_one",
                                        "expected", "device_cpu_us", "ops_owned", "ops_locked"],
         co)
    save(a.out, "flash_e2e_forms.csv", ["via", "qd", "ftl", "iops", "device_cpu_us"], fo)
    if sc and lat:
        plot(a.out, sc, lat)


if __name__ == "__main__":
    sys.exit(main())

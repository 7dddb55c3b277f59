#!/usr/bin/env python3
"""bench/sched/bench_sched.py - `make bench-sched`: FusionFS Figure 9 on this
machine, with the device made the bottleneck (few device cores, slow cores,
a small device memory budget; the model is printed with the results).

  9a  write-only (wo: 4 KiB random writes) beside append-CRC-write (acw),
      THREADS each, under rr and cfs
  9b  read-compress-write (rcw: 1 MiB, memory-hungry) beside acw under a
      small device memory budget: cfs-cpu (no memory key), cfs, drf
  cost one scheduling choice with 10 and 1,000 queues (in process)
  mix a tenant on the FUSE mount (fio: 4 KiB random pwrite) beside one
      flooding fused compress ops (rcw): fifo, cfs, drf

Each tenant is one process (the device runs with --tenant pid). Throughput
is normalised to the same workload running alone on the same device;
Jain's fairness index is over the tenants' normalised throughputs; the
light tenant's p99 latency is reported with its p99 alone. Beside them, the
device's own accounting: each tenant's share of device-core time in the
co-run (from `cisc status`), which host noise does not skew the way it
skews a throughput measured at another moment. With --repeat N every
point is measured N times, alone and co-run alternating, and the median of
each figure is reported. Writes CSV to
bench/out/sched.csv and a plot to bench/out/sched.png (with matplotlib).
Not a test: nothing here asserts a number.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile


def sh(cmd, check=True):
    return subprocess.run(cmd, check=check, text=True, capture_output=True)


class Device:
    def __init__(self, a, sched, ram):
        self.a = a
        self.dir = tempfile.mkdtemp(prefix="cisc-bench-sched-", dir=a.dir)
        self.mnt = os.path.join(self.dir, "m")
        os.mkdir(self.mnt)
        sh([a.cisc, "up", "--size", "2G", "--cores", str(a.cores), "--core-speed",
            str(a.core_speed), "--tenant", "pid", "--sched", sched, "--device-ram", ram,
            os.path.join(self.dir, "img"), self.mnt])

    def model(self):
        st = sh([self.a.cisc, "status", "--raw", self.mnt]).stdout
        return [l for l in st.splitlines() if l.startswith("model")]

    def run(self, jobs):
        """Runs [(workload, threads)] at once; returns [(ops/s, p99_us,
        share of device-core time)]."""
        ps = [subprocess.Popen([self.a.bench, wl, str(t), self.mnt, str(self.a.secs)],
                               stdout=subprocess.PIPE, text=True) for wl, t in jobs]
        out = []
        for p in ps:
            f = p.communicate()[0].split()
            d = dict(zip(f[::2], f[1::2]))
            out.append((int(d["ops"]) / float(d["secs"]), float(d["p99_us"])))
        core = self.core_ns([p.pid for p in ps])
        total = sum(core) or 1
        return [o + (c / total,) for o, c in zip(out, core)]

    def core_ns(self, pids):
        """Device-core time charged to each pid (its tenant), from cisc status."""
        st = sh([self.a.cisc, "status", "--raw", self.mnt]).stdout
        ns = {}
        for l in st.splitlines():
            f = l.split()
            if len(f) > 10 and f[0] == "tenant":
                ns[int(f[1])] = int(f[f.index("core_ns") + 1])
        return [ns.get(p, 0) for p in pids]

    def down(self):
        sh([self.a.cisc, "down", self.mnt], check=False)
        sh(["rm", "-rf", self.dir], check=False)


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if any(xs) else 0.0


def measure(a, pair, pol, ram, t):
    """One repetition: both alone, then together under pol. Returns the
    figures of this point."""
    alone = {}
    dev = Device(a, "fifo", ram)
    try:
        model = dev.model()
        for wl in pair:
            alone[wl] = dev.run([(wl, t)])[0]
    finally:
        dev.down()
    dev = Device(a, pol, ram)
    try:
        got = dev.run([(wl, t) for wl in pair])
    finally:
        dev.down()
    norm = [g[0] / alone[wl][0] if alone[wl][0] else 0.0 for g, wl in zip(got, pair)]
    return model, {"light_norm": norm[0], "heavy_norm": norm[1], "jain": jain(norm),
                   "light_p99_us": got[0][1], "light_p99_alone_us": alone[pair[0]][1],
                   "light_core_share": got[0][2], "heavy_core_share": got[1][2],
                   "jain_core": jain([got[0][2], got[1][2]])}


def experiment(a, name, pair, policies, ram, rows, models):
    """pair: (light, heavy) workloads; both alone, then together per policy,
    each point a.repeat times (alternating), medians reported."""
    for t in a.threads:
        reps = {pol: [] for pol in policies}
        for _ in range(a.repeat):
            for pol in policies:
                model, fig = measure(a, pair, pol, ram, t)
                models.update({m: 1 for m in model})
                reps[pol].append(fig)
        for pol in policies:
            med = {k: statistics.median(f[k] for f in reps[pol]) for k in reps[pol][0]}
            rows.append({"exp": name, "policy": pol, "threads": t, "light": pair[0],
                         "heavy": pair[1], "repeats": a.repeat,
                         **{k: round(v, 3 if "us" not in k else 1) for k, v in med.items()}})
            print("%-4s %-7s t=%d  %s %.2f  %s %.2f  jain %.2f  %s p99 %.0f us (alone %.0f)"
                  "  core share %.2f/%.2f (jain %.2f)" %
                  (name, pol, t, pair[0], med["light_norm"], pair[1], med["heavy_norm"],
                   med["jain"], pair[0], med["light_p99_us"], med["light_p99_alone_us"],
                   med["light_core_share"], med["heavy_core_share"], med["jain_core"]),
                  flush=True)


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib missing: no plot)")
        return
    exps = sorted({r["exp"] for r in rows})
    fig, axs = plt.subplots(2, len(exps), figsize=(6 * len(exps), 7), squeeze=False)
    for k, e in enumerate(exps):
        rs = [r for r in rows if r["exp"] == e]
        labels = ["%s t%d" % (r["policy"], r["threads"]) for r in rs]
        x = range(len(rs))
        ax = axs[0][k]
        ax.bar([i - 0.2 for i in x], [r["light_norm"] for r in rs], 0.4, label=rs[0]["light"])
        ax.bar([i + 0.2 for i in x], [r["heavy_norm"] for r in rs], 0.4, label=rs[0]["heavy"])
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, rotation=60, fontsize=7)
        ax.set_title(e + ": throughput / alone (Jain over these)")
        ax.legend()
        ax = axs[1][k]
        light = [r["light_core_share"] for r in rs]
        ax.bar(list(x), light, 0.6, label=rs[0]["light"])
        ax.bar(list(x), [r["heavy_core_share"] for r in rs], 0.6, bottom=light,
               label=rs[0]["heavy"])
        ax.axhline(0.5, color="k", lw=0.5, ls="--")
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, rotation=60, fontsize=7)
        ax.set_title(e + ": share of device-core time (device's accounting)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print("plot:", path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cisc", required=True)
    p.add_argument("--bench", required=True)
    p.add_argument("--out", default="bench/out")
    p.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    p.add_argument("--threads", default="1,2,4,8")
    p.add_argument("--secs", type=float, default=3.0)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--core-speed", type=float, default=4.0)
    p.add_argument("--ram", default="32M", help="device memory for 9b and mix")
    p.add_argument("--choice", help="the choice-cost program (cisc-bench-sched-choice)")
    p.add_argument("--only", default="9a,9b,mix")
    p.add_argument("--repeat", type=int, default=1,
                   help="measure each point N times (alone and co-run alternating), report medians")
    a = p.parse_args()
    a.threads = [int(t) for t in a.threads.split(",")]
    os.makedirs(a.out, exist_ok=True)
    rows, models = [], {}
    only = a.only.split(",")
    if a.choice:
        print("cost of one choice (push + pop + start + charge, in process):")
        print(sh([a.choice]).stdout, end="", flush=True)
    if "9a" in only:
        experiment(a, "9a", ("wo", "acw"), ["rr", "cfs"], "2G", rows, models)
    if "9b" in only:
        experiment(a, "9b", ("acw", "rcw"), ["cfs-cpu", "cfs", "drf"], a.ram, rows, models)
    if "mix" in only:
        experiment(a, "mix", ("fio", "rcw"), ["fifo", "cfs", "drf"], a.ram, rows, models)
    print("device model:", "; ".join(models), "| device-ram 2G (9a),", a.ram,
          "(9b, mix) | %.1f s per run, one process per tenant (--tenant pid),"
          " medians of %d repetitions" % (a.secs, a.repeat))
    path = os.path.join(a.out, "sched.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print("csv:", path)
    plot(rows, os.path.join(a.out, "sched.png"))


if __name__ == "__main__":
    sys.exit(main())

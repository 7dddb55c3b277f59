#!/usr/bin/env python3
"""bench/sched/bench_sched.py - `make bench-sched`: FusionFS Figure 9 on this
machine, with the device made the bottleneck (few device cores, slow cores,
a small device memory budget; the model is printed with the results).

  9a  write-only (wo: 4 KiB random writes) beside append-CRC-write (acw),
      THREADS each, under rr and cfs, at core speed 16 (--core-speed-9a)
  9b  read-compress-write (rcw: 1 MiB, memory-hungry) beside acw under a
      device memory budget that holds one rcw op at a time (--ram 3M: an
      rcw op reserves 2 MiB, an acw op 8 bytes, the record being read from
      the client's arena in place): cfs-cpu (blind to memory), cfs, drf
  cost one scheduling choice with 10 and 1,000 queues (in process)
  mix a tenant on the FUSE mount (fio: 4 KiB random pwrite) beside one
      flooding fused compress ops (rcw): fifo, cfs, drf

Each tenant is one process (the device runs with --tenant pid). Throughput
is normalised to the same workload running alone on the same device;
Jain's fairness index is over the tenants' normalised throughputs; the
light tenant's p99 latency is reported with its p99 alone. Beside them, the
device's own accounting: each tenant's share of device-core time in the
co-run (from `cisc status`), which host noise does not skew the way it
skews a throughput measured at another moment, and the device's core
utilisation (busy time of its cores over the run). Every tenant's set-up
(opening and filling its files, long on a slow device) ends before any
timed run starts, and is not counted in the shares or the utilisation.
Each repetition runs
both workloads alone, then the co-run under every policy of the
experiment, back to back, and normalises each co-run by that repetition's
alone runs: baselines and shared runs alternate, so host load moves them
together. With --repeat N the median of each figure over the N
repetitions is reported. --slow-9a SPEED adds 9a again with device cores
that much slower ("9a-s"), where the cores, not the host, are the
bottleneck. Writes CSV to
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
    def __init__(self, a, sched, ram, speed=None, cores=None):
        self.a = a
        self.dir = tempfile.mkdtemp(prefix="cisc-bench-sched-", dir=a.dir)
        self.mnt = os.path.join(self.dir, "m")
        os.mkdir(self.mnt)
        self.cores = cores or a.cores
        sh([a.cisc, "up", "--size", "2G", "--cores", str(self.cores), "--core-speed",
            str(speed or a.core_speed), "--tenant", "pid", "--sched", sched, "--device-ram", ram]
           + a.up.split() + [os.path.join(self.dir, "img"), self.mnt])

    def model(self):
        st = sh([self.a.cisc, "status", "--raw", self.mnt]).stdout
        return [l for l in st.splitlines() if l.startswith("model")]

    def run(self, jobs):
        """Runs [(workload, threads)] at once; returns [(ops/s, p99_us,
        share of device-core time)]."""
        ps = [subprocess.Popen([self.a.bench, wl, str(t), self.mnt, str(self.a.secs)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
              for wl, t in jobs]
        for p in ps:   # every tenant set up (files filled): not part of the run
            p.stdout.readline()
        core0, self.busy0, parks0 = self.core_ns([p.pid for p in ps])
        cpu0 = self.host_cpu()
        for p in ps:   # go, all at once
            p.stdin.write("go\n")
            p.stdin.flush()
        out = []
        for p in ps:
            f = p.communicate()[0].split()
            d = dict(zip(f[::2], f[1::2]))
            out.append((int(d["ops"]) / float(d["secs"]), float(d["p99_us"])))
        core, busy, parks = self.core_ns([p.pid for p in ps])
        hcpu = (self.host_cpu() - cpu0) / self.a.secs
        core = [c - c0 for c, c0 in zip(core, core0)]
        total = sum(core) or 1
        util = (busy - self.busy0) / (self.a.secs * 1000.0 * self.cores)
        self.busy0 = busy
        # device-core us per op: what the device charged each tenant's op
        return [o + (c / total, util, c / 1000.0 / max(1.0, o[0] * self.a.secs), parks - parks0,
                     hcpu) for o, c in zip(out, core)]

    def host_cpu(self):
        """Host CPU seconds the device process has used (all its threads):
        a slow device model must not burn the host it shares with the
        clients."""
        st = sh([self.a.cisc, "status", "--raw", self.mnt]).stdout
        pid = next(l.split()[2] for l in st.splitlines() if l.startswith("device pid"))
        with open("/proc/%s/stat" % pid) as f:
            f = f.read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def core_ns(self, pids):
        """Device-core time charged to each pid (its tenant), the cores'
        busy milliseconds and the items parked so far, from cisc status."""
        st = sh([self.a.cisc, "status", "--raw", self.mnt]).stdout
        ns, busy, parks = {}, 0, 0
        for l in st.splitlines():
            f = l.split()
            if len(f) > 10 and f[0] == "tenant":
                ns[int(f[1])] = int(f[f.index("core_ns") + 1])
            if len(f) >= 6 and f[0] == "core" and f[4] == "busy_ms":
                busy += int(f[5])
            if len(f) >= 3 and f[0] == "preempt" and f[1] == "parked":
                parks = int(f[2])
        return [ns.get(p, 0) for p in pids], busy, parks

    def down(self):
        sh([self.a.cisc, "down", self.mnt], check=False)
        sh(["rm", "-rf", self.dir], check=False)


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if any(xs) else 0.0


def alone_runs(a, pair, ram, t, speed, cores):
    """Each workload alone on a fresh device: {workload: (ops/s, p99, share,
    util)}, and the device's model line."""
    alone = {}
    dev = Device(a, "fifo", ram, speed, cores)
    try:
        model = dev.model()
        for wl in pair:
            alone[wl] = dev.run([(wl, t)])[0]
    finally:
        dev.down()
    return model, alone


def corun(a, pair, pol, ram, t, speed, cores, alone):
    """Both together under pol, normalised by this repetition's alone runs."""
    dev = Device(a, pol, ram, speed, cores)
    try:
        got = dev.run([(wl, t) for wl in pair])
    finally:
        dev.down()
    norm = [g[0] / alone[wl][0] if alone[wl][0] else 0.0 for g, wl in zip(got, pair)]
    return {"light_norm": norm[0], "heavy_norm": norm[1], "jain": jain(norm),
            "light_p99_us": got[0][1], "light_p99_alone_us": alone[pair[0]][1],
            "light_core_share": got[0][2], "heavy_core_share": got[1][2],
            "jain_core": jain([got[0][2], got[1][2]]),
            "util_alone_light": alone[pair[0]][3], "util_alone_heavy": alone[pair[1]][3],
            "util": got[0][3], "light_ops": got[0][0], "heavy_ops": got[1][0],
            "light_op_us": got[0][4], "heavy_op_us": got[1][4],
            "light_op_us_alone": alone[pair[0]][4], "heavy_op_us_alone": alone[pair[1]][4],
            "parks": got[0][5], "device_host_cpu": got[0][6],
            "load": os.getloadavg()[0]}


def spread(xs):
    """max / min of positive values (1.0: no swing)."""
    xs = [x for x in xs if x > 0]
    return max(xs) / min(xs) if xs else 0.0


def experiment(a, name, pair, policies, ram, rows, models, speed=None, cores=None):
    """pair: (light, heavy) workloads. Each repetition: both alone, then the
    co-run under each policy, back to back; medians over a.repeat."""
    for t in a.threads:
        reps = {pol: [] for pol in policies}
        alones = []
        for k in range(a.repeat):
            model, alone = alone_runs(a, pair, ram, t, speed, cores)
            alones.append(alone)
            models.update({m: 1 for m in model})
            for pol in policies:
                reps[pol].append(corun(a, pair, pol, ram, t, speed, cores, alone))
            # each repetition's raw figures: where a swing comes from
            print("  rep %d t=%d alone %s %.0f %s %.0f ops/s |%s | load %.1f" %
                  (k, t, pair[0], alone[pair[0]][0], pair[1], alone[pair[1]][0],
                   "".join(" %s %.0f/%.0f (jain %.2f)" %
                           (pol, reps[pol][-1]["light_ops"], reps[pol][-1]["heavy_ops"],
                            reps[pol][-1]["jain"]) for pol in policies),
                   os.getloadavg()[0]), flush=True)
        if a.repeat > 1:   # swing over repetitions (max/min): alone runs vs co-runs
            print("  swing t=%d: alone %s %.2fx %s %.2fx |%s" %
                  (t, pair[0], spread([x[pair[0]][0] for x in alones]),
                   pair[1], spread([x[pair[1]][0] for x in alones]),
                   "".join(" %s %.2fx/%.2fx" %
                           (pol, spread([f["light_ops"] for f in reps[pol]]),
                            spread([f["heavy_ops"] for f in reps[pol]])) for pol in policies)),
                  flush=True)
        for pol in policies:
            med = {k: statistics.median(f[k] for f in reps[pol]) for k in reps[pol][0]}
            rows.append({"exp": name, "policy": pol, "threads": t, "light": pair[0],
                         "heavy": pair[1], "repeats": a.repeat,
                         **{k: round(v, 3 if "us" not in k else 1) for k, v in med.items()}})
            print("%-4s %-7s t=%d  %s %.2f  %s %.2f  jain %.2f  %s p99 %.0f us (alone %.0f)"
                  "  core share %.2f/%.2f (jain %.2f)  core util %.2f (alone %.2f/%.2f)"
                  "  device us/op %.0f/%.0f (alone %.0f/%.0f)  parks %d  device host CPUs %.2f"
                  "  load %.1f" %
                  (name, pol, t, pair[0], med["light_norm"], pair[1], med["heavy_norm"],
                   med["jain"], pair[0], med["light_p99_us"], med["light_p99_alone_us"],
                   med["light_core_share"], med["heavy_core_share"], med["jain_core"],
                   med["util"], med["util_alone_light"], med["util_alone_heavy"],
                   med["light_op_us"], med["heavy_op_us"], med["light_op_us_alone"],
                   med["heavy_op_us_alone"], med["parks"], med["device_host_cpu"], med["load"]),
                  flush=True)


def targets(rows):
    """The issue's targets, each with its ratio (medians of the rows)."""
    def get(exp, pol, t):
        return next((r for r in rows if r["exp"] == exp and r["policy"] == pol
                     and r["threads"] == t), None)
    out = []
    for exp in ("9a", "9a-s"):
        for t in sorted({r["threads"] for r in rows if r["exp"] == exp}):
            rr, cfs = get(exp, "rr", t), get(exp, "cfs", t)
            if rr and cfs and rr["light_norm"] and rr["heavy_norm"]:
                out.append("%s t=%d: wo cfs/rr %.2fx (target >= 1.3), acw cfs/rr %.2fx "
                           "(target >= 0.9)" % (exp, t, cfs["light_norm"] / rr["light_norm"],
                                                cfs["heavy_norm"] / rr["heavy_norm"]))
    for t in sorted({r["threads"] for r in rows if r["exp"] == "9b"}):
        cpu, cfs = get("9b", "cfs-cpu", t), get("9b", "cfs", t)
        if cpu and cfs and cpu["light_norm"]:
            out.append("9b t=%d: acw cfs/cfs-cpu %.2fx (target >= 1.5); core share %.2fx"
                       % (t, cfs["light_norm"] / cpu["light_norm"],
                          cfs["light_core_share"] / (cpu["light_core_share"] or 1)))
    for r in rows:
        if r["policy"] == "drf":
            out.append("%s t=%d drf: light p99 %.0f us / alone %.0f = %.2fx (target <= 3)"
                       % (r["exp"], r["threads"], r["light_p99_us"], r["light_p99_alone_us"],
                          r["light_p99_us"] / (r["light_p99_alone_us"] or 1)))
    for r in rows:
        out.append("%s t=%d %s: Jain %.2f (target: >= 0.9 cfs/drf, < 0.8 rr/fifo)"
                   % (r["exp"], r["threads"], r["policy"], r["jain"]))
    return out


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
    p.add_argument("--cores-9b", type=int, default=4,
                   help="9b: FusionFS's 4 device cores; memory (--ram) holds one rcw op, so "
                        "under cfs rcw can use at most a quarter of them")
    p.add_argument("--core-speed", type=float, default=4.0, help="9b and mix")
    p.add_argument("--core-speed-9a", type=float, default=16.0,
                   help="9a: at 4 its cores were busy 14-55%% alone, the host the bottleneck")
    p.add_argument("--ram", default="3M",
                   help="device memory for 9b: one rcw op (a 2 MiB reservation) fits, two do "
                        "not, so memory, not the cores, is the bottleneck")
    p.add_argument("--mix-ram", default="32M", help="device memory for mix")
    p.add_argument("--up", default="", help="more `cisc up` options for every device")
    p.add_argument("--choice", help="the choice-cost program (cisc-bench-sched-choice)")
    p.add_argument("--only", default="9a,9b,mix")
    p.add_argument("--repeat", type=int, default=1,
                   help="measure each point N times (alone and co-run alternating), report medians")
    p.add_argument("--slow-9a", type=float,
                   help="also run 9a (as 9a-s) with this core speed: cores the bottleneck")
    a = p.parse_args()
    a.threads = [int(t) for t in a.threads.split(",")]
    os.makedirs(a.out, exist_ok=True)
    rows, models = [], {}
    only = a.only.split(",")
    if a.choice:
        print("cost of one choice (push + pop + start + charge, in process):")
        print(sh([a.choice]).stdout, end="", flush=True)
    if "9a" in only:
        experiment(a, "9a", ("wo", "acw"), ["rr", "cfs"], "2G", rows, models, a.core_speed_9a)
    if a.slow_9a:
        experiment(a, "9a-s", ("wo", "acw"), ["rr", "cfs"], "2G", rows, models, a.slow_9a)
    if "9b" in only:
        experiment(a, "9b", ("acw", "rcw"), ["cfs-cpu", "cfs", "drf"], a.ram, rows, models,
                   cores=a.cores_9b)
    if "mix" in only:
        experiment(a, "mix", ("fio", "rcw"), ["fifo", "cfs", "drf"], a.mix_ram, rows, models)
    print("device model:", "; ".join(models), "| device-ram 2G (9a),", a.ram, "(9b),",
          a.mix_ram, "(mix) | %.1f s per run, one process per tenant (--tenant pid),"
          " medians of %d repetitions" % (a.secs, a.repeat))
    path = os.path.join(a.out, "sched.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print("csv:", path)
    print("targets:")
    for l in targets(rows):
        print("  " + l)
    plot(rows, os.path.join(a.out, "sched.png"))


if __name__ == "__main__":
    sys.exit(main())

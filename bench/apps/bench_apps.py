#!/usr/bin/env python3
"""bench/apps/bench_apps.py - `make bench-apps`: LevelDB (cisc-ldb-bench:
fillseq, fillrandom, overwrite, readrandom, then YCSB's load and workloads
A-F, with sync=0 and sync=1) run four ways on one device:

  tmpfs   LevelDB's default Env on /dev/shm (no device: the ceiling)
  fuse    the default Env on the FUSE mount (the kernel, then the device)
  exec    the default Env under `cisc exec` (libcisc-preload.so serves it)
  native  the libcisc Env (integrations/leveldb) on the same mount

RocksDB (when libcisc-rocksdb.so and Debian's /usr/bin/db_bench exist):
RocksDB's own db_bench, unmodified (fillseq, fillrandom, overwrite,
readrandom, sync=0 and sync=1), then YCSB's load and A-F on RocksDB
(cisc-rdb-ycsb: db_bench has no YCSB), the same four ways; "native" is db_bench
with LD_PRELOAD=libcisc-rocksdb.so --fs_uri=ciscfs://MNT; and a fifth,
"held", is native with CISC_ROCKSDB_HOLD_FLUSH=1 (unsynced flushes wait
for the next sync or 64 KiB: RocksDB's manual_wal_flush guarantee, see
cisc_rocksdb.h). All use one
options file (no compression; RocksDB's defaults otherwise, so its default
file system preallocates and punches the unused tail of each file it
closes).

Recovery (FusionFS Figure 11): a writer fills a --rec-mb MiB WAL and dies;
then DB::Open replays it (cisc-rdb-recovery), timed, and the WALs are read
alone (the I/O part): tmpfs (default FS on a copy in /dev/shm), fuse
(default FS on the mount), plain (libcisc FS, 1 MiB reads) and checked
(libcisc FS, each 1 MiB read checked by the device's WAL-check program).

AutoMerge (FusionFS Table 6): append-CRC-write to one log from 1-8 threads
(cisc-bench-preload acw) under `cisc exec --no-merge` and `cisc exec`, with
the FUSE mount as the baseline.

The machine is shared and noisy: each way is run --rounds times, the ways
alternating, and the median is reported. The image lives in /dev/shm, so
the comparison is of the software paths, with the device model's latency.

Writes CSV to bench/out/apps.csv (LevelDB and RocksDB rows, ops/s),
apps-recovery.csv (ms) and apps-automerge.csv (ops/s), and a plot to
bench/out/apps.png; prints the device model and tables with the baselines
and the ratios. Not a test: nothing is asserted.
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import tempfile

WAYS = ["tmpfs", "fuse", "exec", "native"]
RDB_WAYS = WAYS + ["held"]   # held: native with CISC_ROCKSDB_HOLD_FLUSH=1
BENCHES = ["fillseq", "fillrandom", "overwrite", "readrandom", "ycsbload",
           "ycsba", "ycsbb", "ycsbc", "ycsbd", "ycsbe", "ycsbf"]
RDB_BENCHES = ["fillseq", "fillrandom", "overwrite", "readrandom"]
RDB_YCSB = ["ycsbload", "ycsba", "ycsbb", "ycsbc", "ycsbd", "ycsbe", "ycsbf"]
REC_WAYS = ["tmpfs", "fuse", "plain", "checked"]
MERGE_WAYS = ["fuse", "unmerged", "merged"]
DB_BENCH = "/usr/bin/db_bench"
RDB_OPTIONS = """[Version]
  rocksdb_version=7.8.3
  options_file_version=1.1
[DBOptions]
  create_if_missing=true
[CFOptions "default"]
  compression=kNoCompression
[TableOptions/BlockBasedTable "default"]
"""


def sh(cmd, check=True):
    return subprocess.run(cmd, check=check, text=True, capture_output=True)


def run_csv(a, mnt, shm, way, tool, tag, args, native):
    """One run of a CSV-printing driver (cisc-ldb-bench, cisc-rdb-ycsb) in
    way's directory; native: its options for the libcisc store. Returns
    {bench: ops/s} from its "TAG,BENCH,STORE,SYNC,NUM,OPS" lines."""
    d = os.path.join(shm if way == "tmpfs" else mnt, os.path.basename(tool) + "-" + way)
    os.makedirs(d, exist_ok=True)
    cmd = [tool] + (native if way in ("native", "held") else []) + args + [d]
    if way == "held":
        cmd = ["env", "CISC_ROCKSDB_HOLD_FLUSH=1"] + cmd
    if way == "exec":
        cmd = [a.cisc, "exec", mnt, "--"] + cmd
    rows = (line.split(",") for line in sh(cmd).stdout.splitlines())
    return {f[1]: float(f[5]) for f in rows if f[0] == tag}


def run_one(a, mnt, shm, way, sync, num):
    """One cisc-ldb-bench run (all its benchmarks); {bench: ops/s}."""
    args = ["--num", str(num), "--sync", str(sync), "--benchmarks", ",".join(BENCHES)]
    return run_csv(a, mnt, shm, way, a.bench, "ldb", args, ["--env", "cisc", "--mount", mnt])


def run_rdb(a, mnt, shm, way, sync, num, opts):
    """One db_bench run (RDB_BENCHES); {bench: ops/s}."""
    base = shm if way == "tmpfs" else mnt
    cmd = [DB_BENCH, "--options_file=" + opts, "--db=" + os.path.join(base, "rdb-" + way),
           "--num=%d" % num, "--sync=%d" % sync, "--benchmarks=" + ",".join(RDB_BENCHES)]
    if way in ("native", "held"):
        hold = ["CISC_ROCKSDB_HOLD_FLUSH=1"] if way == "held" else []
        cmd = ["env", "LD_PRELOAD=" + a.rocks_lib] + hold + cmd + ["--fs_uri=ciscfs://" + mnt]
    if way == "exec":
        cmd = [a.cisc, "exec", mnt, "--"] + cmd
    got = {}
    for line in sh(cmd).stdout.splitlines():
        f = line.split()   # "fillseq : 3.4 micros/op 289351 ops/sec ..."
        if len(f) > 5 and f[0] in RDB_BENCHES and f[5] == "ops/sec":
            got[f[0]] = float(f[4])
    return got


def run_rdb_ycsb(a, mnt, shm, way, sync, num):
    """One cisc-rdb-ycsb run (YCSB load, A-F on RocksDB); {bench: ops/s}."""
    args = ["--num", str(num), "--sync", str(sync)]
    return run_csv(a, mnt, shm, way, a.rdb_ycsb, "rdb", args, ["--fs", "cisc", "--mount", mnt])


def median_table(rounds, ways, run):
    """Runs run(way) for each way, rounds times alternating; the medians
    per key: {key: {way: median}}."""
    got = {}
    for _ in range(rounds):
        for way in ways:
            for k, v in run(way).items():
                got.setdefault(k, {w: [] for w in ways})[way].append(v)
    return {k: {w: statistics.median(v) for w, v in per.items() if v} for k, per in got.items()}


def store_rows(store, benches, per_sync, nums, ways=WAYS):
    rows = []
    for sync, med in per_sync.items():
        for b in benches:
            if b not in med or len(med[b]) < len(ways):
                continue
            m = med[b]
            rows.append({"store": store, "bench": b, "sync": sync, "num": nums[sync], **m})
            held = (f"  held {m['held']:8.0f}/s  held/fuse {m['held'] / m['fuse']:5.2f}x"
                    if "held" in m else "")
            print(f"{store:7} {b:10} sync={sync} n={nums[sync]:6}  tmpfs {m['tmpfs']:9.0f}/s  "
                  f"fuse {m['fuse']:8.0f}/s  exec {m['exec']:8.0f}/s  native {m['native']:8.0f}/s"
                  f"  native/fuse {m['native'] / m['fuse']:5.2f}x  exec/fuse "
                  f"{m['exec'] / m['fuse']:5.2f}x{held}", flush=True)
    return rows


def leveldb(a, mnt, shm):
    nums = {0: a.num, 1: a.num_sync}
    per_sync = {sync: median_table(a.rounds, WAYS, lambda w: run_one(a, mnt, shm, w, sync, num))
                for sync, num in nums.items()}
    return store_rows("leveldb", BENCHES, per_sync, nums)


def rocksdb(a, mnt, shm, tmp):
    opts = os.path.join(tmp, "rdb-options.ini")
    with open(opts, "w") as f:
        f.write(RDB_OPTIONS)
    nums = {0: a.num, 1: a.num_sync}
    ycsb = os.path.exists(a.rdb_ycsb)

    def run(w, sync, num):
        got = run_rdb(a, mnt, shm, w, sync, num, opts)
        return {**got, **(run_rdb_ycsb(a, mnt, shm, w, sync, num) if ycsb else {})}

    per_sync = {sync: median_table(a.rounds, RDB_WAYS, lambda w: run(w, sync, num))
                for sync, num in nums.items()}
    return store_rows("rocksdb", RDB_BENCHES + RDB_YCSB, per_sync, nums, RDB_WAYS)


def recovery(a, mnt, shm):
    """Replay (DB::Open) and WAL-read times, ms; [{phase, tmpfs, fuse, plain, checked}]."""
    db, copy = os.path.join(mnt, "rdb-recovery"), os.path.join(shm, "rdb-recovery")
    mb = ["--mb", str(a.rec_mb)]
    sh([a.rdb_recovery, "write"] + mb + ["--fs", "cisc", "--mount", mnt, db])
    shutil.copytree(db, copy)
    cisc = ["--fs", "cisc", "--mount", mnt]
    args = {"tmpfs": [copy], "fuse": [db], "plain": cisc + ["--walcheck", "0", db],
            "checked": cisc + ["--walcheck", "1", db]}
    rows = []
    for phase in ("recover", "read"):
        med = median_table(a.rounds, REC_WAYS, lambda w: {
            phase: float(sh([a.rdb_recovery, phase] + mb + args[w]).stdout.split(",")[-1])})
        m = med[phase]
        rows.append({"phase": phase, "wal_mb": a.rec_mb, **m})
        print(f"recovery {phase:7} {a.rec_mb} MiB WAL  tmpfs {m['tmpfs']:7.0f} ms  fuse "
              f"{m['fuse']:7.0f} ms  plain {m['plain']:7.0f} ms  checked {m['checked']:7.0f} ms"
              f"  fuse/checked {m['fuse'] / m['checked']:5.2f}x  plain/checked "
              f"{m['plain'] / m['checked']:5.2f}x", flush=True)
    shutil.rmtree(copy, ignore_errors=True)
    return rows


def automerge(a, mnt):
    """Table 6: append-CRC-write at 1-8 threads; [{threads, fuse, unmerged, merged}]."""
    d = os.path.join(mnt, "acw")
    os.makedirs(d, exist_ok=True)

    def run(way, t):
        cmd = [a.preload_bench, d, "acw", str(t), str(a.secs)]
        if way != "fuse":
            cmd = [a.cisc, "exec"] + (["--no-merge"] if way == "unmerged" else []) + [mnt, "--"] + cmd
        return float(sh(cmd).stdout.split()[4].rstrip("/s"))   # "acw T ops N OPS/s MiB/s"

    rows = []
    for t in (1, 2, 4, 8):
        m = median_table(a.rounds, MERGE_WAYS, lambda w: {"ops": run(w, t)})["ops"]
        rows.append({"threads": t, **m})
        print(f"automerge acw {t} threads  fuse {m['fuse']:8.0f}/s  unmerged {m['unmerged']:8.0f}/s"
              f"  merged {m['merged']:8.0f}/s  merged/unmerged {m['merged'] / m['unmerged']:5.2f}x"
              f"  merged/fuse {m['merged'] / m['fuse']:5.2f}x", flush=True)
    return rows


def plot(rows, rec, merge, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: no plot")
        return
    panels = [(st, sync) for st in ("leveldb", "rocksdb") for sync in (0, 1)
              if any(r["store"] == st and r["sync"] == sync for r in rows)]
    n = len(panels) + (1 if rec else 0) + (1 if merge else 0)
    fig, axes = plt.subplots(1, max(n, 1), figsize=(6 * max(n, 1), 4.5), squeeze=False)
    axes = list(axes[0])
    for ax, (st, sync) in zip(axes, panels):
        sub = [r for r in rows if r["store"] == st and r["sync"] == sync]
        ways = RDB_WAYS if st == "rocksdb" else WAYS
        w = 0.8 / len(ways)
        for i, way in enumerate(ways):
            ax.bar([j + i * w for j in range(len(sub))], [r[way] for r in sub], w, label=way)
        ax.set_xticks([j + 0.4 - w / 2 for j in range(len(sub))])
        ax.set_xticklabels([r["bench"] for r in sub], rotation=45, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("ops/s (median)")
        ax.set_title(f"{st}, sync={sync}")
        ax.legend(fontsize=8)
    k = len(panels)
    if rec:
        ax = axes[k]
        w = 0.2
        for i, way in enumerate(REC_WAYS):
            ax.bar([j + i * w for j in range(len(rec))], [r[way] for r in rec], w, label=way)
        ax.set_xticks([j + 1.5 * w for j in range(len(rec))])
        ax.set_xticklabels([f"{r['phase']} ({r['wal_mb']} MiB WAL)" for r in rec], fontsize=8)
        ax.set_ylabel("ms (median, lower is better)")
        ax.set_title("RocksDB recovery")
        ax.legend(fontsize=8)
        k += 1
    if merge:
        ax = axes[k]
        for way in MERGE_WAYS:
            ax.plot([r["threads"] for r in merge], [r[way] for r in merge], marker="o", label=way)
        ax.set_xlabel("threads")
        ax.set_ylabel("ops/s (median)")
        ax.set_title("AutoMerge: append-CRC-write (Table 6)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    print("plot:", path)


def write_csv(path, header, lines):
    """Writes one CSV (header, then lines) and prints it."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(lines)
    print("csv:", path)
    print(open(path).read(), end="")


def app_line(r):
    held = [f"{r['held']:.0f}"] if "held" in r else [""]   # LevelDB rows have none
    return ([r["store"], r["bench"], r["sync"], r["num"]]
            + [f"{r[x]:.0f}" for x in WAYS] + held
            + [f"{r['native'] / r['fuse']:.2f}", f"{r['exec'] / r['fuse']:.2f}"]
            + [f"{r['held'] / r['fuse']:.2f}" if "held" in r else ""])


def write_csvs(a, rows, rec, merge):
    write_csv(os.path.join(a.out, "apps.csv"),
              ["store", "bench", "sync", "num"] + [w_ + "_ops_s" for w_ in RDB_WAYS]
              + ["native_over_fuse", "exec_over_fuse", "held_over_fuse"],
              [app_line(r) for r in rows])
    if rec:
        write_csv(os.path.join(a.out, "apps-recovery.csv"),
                  ["phase", "wal_mb"] + [x + "_ms" for x in REC_WAYS]
                  + ["fuse_over_checked", "plain_over_checked"],
                  [[r["phase"], r["wal_mb"]] + [f"{r[x]:.1f}" for x in REC_WAYS]
                   + [f"{r['fuse'] / r['checked']:.2f}", f"{r['plain'] / r['checked']:.2f}"]
                   for r in rec])
    if merge:
        write_csv(os.path.join(a.out, "apps-automerge.csv"),
                  ["workload", "threads"] + [x + "_ops_s" for x in MERGE_WAYS]
                  + ["merged_over_unmerged", "merged_over_fuse"],
                  [["acw", r["threads"]] + [f"{r[x]:.0f}" for x in MERGE_WAYS]
                   + [f"{r['merged'] / r['unmerged']:.2f}", f"{r['merged'] / r['fuse']:.2f}"]
                   for r in merge])


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cisc", required=True)
    ap.add_argument("--bench", required=True, help="cisc-ldb-bench (its build tree has the rest)")
    ap.add_argument("--num", type=int, default=20000, help="operations, sync=0")
    ap.add_argument("--num-sync", type=int, default=2000, help="operations, sync=1")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rec-mb", type=int, default=256, help="recovery: WAL size, MiB")
    ap.add_argument("--secs", type=float, default=1.0, help="AutoMerge: seconds per run")
    ap.add_argument("--only", default="leveldb,rocksdb,recovery,automerge",
                    help="parts to run (comma-separated)")
    ap.add_argument("--out", default="bench/out")
    ap.add_argument("--up-args", default="", help="extra `cisc up` options")
    a = ap.parse_args()
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(a.bench))))
    a.rocks_lib = os.path.join(build, "integrations/rocksdb/libcisc-rocksdb.so")
    a.rdb_recovery = os.path.join(build, "bench/apps/cisc-rdb-recovery")
    a.rdb_ycsb = os.path.join(build, "bench/apps/cisc-rdb-ycsb")
    a.preload_bench = os.path.join(build, "bench/preload/cisc-bench-preload")
    a.parts = set(a.only.split(","))
    have_rocks = os.path.exists(a.rocks_lib) and os.access(DB_BENCH, os.X_OK)
    if not have_rocks and a.parts & {"rocksdb", "recovery"}:
        print("RocksDB or db_bench not installed (make deps): no RocksDB rows")
        a.parts -= {"rocksdb", "recovery"}
    if not os.path.exists(a.preload_bench):
        a.parts.discard("automerge")
    return a


def main():
    a = parse()
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="cisc-apps-", dir="/dev/shm")
    img, mnt, shm = (os.path.join(tmp, x) for x in ("img", "m", "shm"))
    os.mkdir(mnt)
    os.mkdir(shm)
    rows, rec, merge = [], [], []
    try:
        sh([a.cisc, "up", "--size", "2G", "--cores", "2"] + a.up_args.split() + [img, mnt])
        model = [l for l in sh([a.cisc, "status", "--raw", mnt]).stdout.splitlines()
                 if l.startswith(("model", "qp"))]
        print("device:", *model, sep="\n  ")
        if "leveldb" in a.parts:
            rows += leveldb(a, mnt, shm)
        if "rocksdb" in a.parts:
            rows += rocksdb(a, mnt, shm, tmp)
        if "recovery" in a.parts:
            rec = recovery(a, mnt, shm)
        if "automerge" in a.parts:
            merge = automerge(a, mnt)
    finally:
        sh([a.cisc, "down", mnt], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    write_csvs(a, rows, rec, merge)
    plot(rows, rec, merge, os.path.join(a.out, "apps.png"))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Plots the CSV files of cisc-bench-flash (bench/flash/flash_bench.c) into
PNGs beside them: WAF vs over-provisioning with the analytic curve, read
IOPS vs queue depth with the ideal and the expectation, the GC cliff, FTL
core scaling (partitioned vs single lock), arrays."""
import csv
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(d, name):
    with open(os.path.join(d, name)) as f:
        return list(csv.DictReader(f))


def col(rs, k):
    return [float(r[k]) for r in rs]


def plot(d, name, xs, series, xlabel, ylabel, logx=False):
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, ys, style in series:
        ax.plot(xs, ys, style, label=label)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(d, name), dpi=100)
    plt.close(fig)


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    w = rows(d, "flash_waf.csv")
    plot(d, "flash_waf.png", [float(r["op_permille"]) / 10 for r in w],
         [("analytic (Desnoyers)", col(w, "model"), "k-"),
          ("greedy", col(w, "greedy"), "bo"), ("cost-benefit", col(w, "cost_benefit"), "rx")],
         "over-provisioning (%)", "write amplification")
    q = rows(d, "flash_qd.csv")
    plot(d, "flash_qd.png", col(q, "qd"),
         [("model", col(q, "iops"), "bo-"), ("ideal dies/t_read", col(q, "ideal"), "k--"),
          ("expected N/(N+M-1)", col(q, "expected"), "g:")],
         "queue depth", "random 4 KiB read IOPS", logx=True)
    c = rows(d, "flash_cliff.csv")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(col(c, "t_ms"), col(c, "mib_s"), "b-", label="MiB/s")
    ax.set_xlabel("simulated time (ms)")
    ax.set_ylabel("random write MiB/s")
    ax2 = ax.twinx()
    ax2.plot(col(c, "t_ms"), col(c, "p99_us"), "r-", label="p99 latency (us)")
    ax2.set_ylabel("p99 latency (us)")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "flash_cliff.png"), dpi=100)
    plt.close(fig)
    t = rows(d, "flash_cores.csv")
    series = []
    for kind, mk in (("modelled", "o-"), ("measured", "s--"), ("simulated", "x:")):
        k = [r for r in t if r["ftl_time"] == kind]
        series += [("single lock, %s" % kind, col(k, "single_x"), "k" + mk),
                   ("partitioned, %s" % kind, col(k, "partitioned_x"), "b" + mk)]
    plot(d, "flash_cores.png", [1, 2, 3, 4], series,
         "FTL device cores", "FTL throughput vs one core")
    a = rows(d, "flash_array.csv")
    plot(d, "flash_array.png", col(a, "members"), [("random read IOPS", col(a, "iops"), "bo-")],
         "array members", "IOPS (qd 32 per member)")
    print("plots in", d)


if __name__ == "__main__":
    main()

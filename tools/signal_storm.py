#!/usr/bin/env python3
"""The signal-storm benchmark (docs/BENCHMARKS.md, "Signal storm").

Runs tests/conformance/syscall_signals (built by `cargo test --release
--test conformance` into target/conformance/VARIANT/) natively and under
`picos run`, interleaved, ROUNDS times per libc variant, and prints the mean
time of each with its 95% confidence interval and the ratio picos/native
(the ratio's interval from the per-round ratios).

Usage: tools/signal_storm.py [ROUNDS] [--picos PATH]
"""
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = ["glibc-dynamic", "glibc-static", "musl-static"]
# Student's t, two-sided 95%, by degrees of freedom.
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
       10: 2.23, 14: 2.14, 19: 2.09, 29: 2.05}


def ci(xs):
    if len(xs) < 2:
        return 0.0
    df = len(xs) - 1
    t = T95.get(df) or T95[max(k for k in T95 if k <= df)]
    return t * statistics.stdev(xs) / len(xs) ** 0.5


def timed(cmd):
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {r.returncode}")
    return dt


def main():
    args = sys.argv[1:]
    picos = os.path.join(ROOT, "target/x86_64-unknown-linux-musl/release/picos")
    if "--picos" in args:
        i = args.index("--picos")
        picos = args[i + 1]
        del args[i:i + 2]
    rounds = int(args[0]) if args else 5
    print(f"| variant | native | picos | ratio |   ({rounds} interleaved rounds, mean ± 95% CI)")
    print("|---|---|---|---|")
    for v in VARIANTS:
        prog = os.path.join(ROOT, "target/conformance", v, "syscall_signals")
        if not os.path.exists(prog):
            print(f"| {v} | (not built: run cargo test --release --test conformance) | | |")
            continue
        nat, pic = [], []
        for _ in range(rounds):
            nat.append(timed([prog]))
            pic.append(timed([picos, "run", prog]))
        ratios = [p / n for p, n in zip(pic, nat)]
        print(f"| {v} | {statistics.mean(nat):.2f} ± {ci(nat):.2f} s "
              f"| {statistics.mean(pic):.2f} ± {ci(pic):.2f} s "
              f"| {statistics.mean(ratios):.2f} ± {ci(ratios):.2f} |", flush=True)


if __name__ == "__main__":
    main()

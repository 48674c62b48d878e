#!/usr/bin/env python3
"""Start-up of one program natively and under two picos builds, interleaved.

    tools/startup_ab.py [--rounds N] [--runs N] BEFORE AFTER -- PROGRAM [ARGS...]

BEFORE and AFTER are picos binaries (e.g. a copy of an older build and
target/x86_64-unknown-linux-musl/release/picos). Each round runs PROGRAM
`--runs` times natively, then under `BEFORE run`, then under `AFTER run`,
and records the mean wall time of a run; the rounds interleave the three so
that a machine whose load changes affects them alike. Prints each mean
± 95% confidence interval (Student's t) and the paired difference
AFTER − BEFORE. A program that fails stops the measurement with its exit
status.
"""
import argparse
import math
import statistics
import subprocess
import sys
import time

# Two-sided 95% Student's t quantiles by degrees of freedom (then 1.96).
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31,
       9: 2.26, 10: 2.23, 12: 2.18, 15: 2.13, 20: 2.09, 25: 2.06, 30: 2.04}


def t95(df):
    for k in sorted(T95):
        if df <= k:
            return T95[k]
    return 1.96


def mean_ci(xs):
    m = statistics.mean(xs)
    if len(xs) < 2:
        return m, float('nan')
    return m, t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rounds', type=int, default=20)
    ap.add_argument('--runs', type=int, default=10, help='runs per round and command')
    ap.add_argument('before')
    ap.add_argument('after')
    ap.add_argument('program', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.program[1:] if a.program[:1] == ['--'] else a.program
    if not prog:
        ap.error('no PROGRAM given (after --)')
    if a.rounds < 2 or a.runs < 1:
        ap.error('--rounds must be at least 2 and --runs at least 1')
    cmds = {'native': prog, 'before': [a.before, 'run'] + prog, 'after': [a.after, 'run'] + prog}
    times = {k: [] for k in cmds}
    for _ in range(a.rounds):
        for name, cmd in cmds.items():
            start = time.perf_counter()
            for _ in range(a.runs):
                r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if r.returncode != 0:
                    sys.exit(f'{name}: {" ".join(cmd)} exited with {r.returncode}')
            times[name].append((time.perf_counter() - start) / a.runs * 1e3)
    print(f'{" ".join(prog)}: {a.rounds} rounds of {a.runs} runs, ms per run')
    for name in cmds:
        m, c = mean_ci(times[name])
        print(f'  {name:7s} {m:9.3f} ± {c:.3f}')
    m, c = mean_ci([x - y for x, y in zip(times['after'], times['before'])])
    print(f'  after − before {m:+.3f} ± {c:.3f}')


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Compares the overheads of two `picos bench` runs (their text outputs): for
each row and each column both runs measured (picos, picos-trap,
picos+mounts, ...), the overhead (ratio to native, with its 95% interval)
before and after, and a verdict: "worse" when the new interval lies wholly
above the old one, "better" when wholly below, else "same".

    tools/bench_ab.py BEFORE.txt AFTER.txt [COLUMN ...]

With COLUMN names, only those columns. Overheads are paired with native in
their own run, so two runs on a noisy machine compare better this way than
by absolute times (`--compare`).
"""
import re, sys

OV = re.compile(r'([+-][\d.]+)% \[([+-]?[\d.]+), ([+-]?[\d.]+)\]')


def parse(path):
    """{(row, column): (estimate, low, high)} from the Markdown tables."""
    rows, cols = {}, None
    for line in open(path):
        cells = [x.strip() for x in line.strip().strip('|').split('|')]
        if len(cells) < 3:
            continue
        if cells[0] == 'test':
            # Each measured column but native is followed by its overhead.
            cols = {}
            for i, name in enumerate(cells):
                if i + 1 < len(cells) and cells[i + 1] == 'overhead':
                    cols[name] = i + 1
            continue
        if cols is None or cells[0].startswith('---'):
            continue
        for name, i in cols.items():
            m = OV.match(cells[i]) if i < len(cells) else None
            if m:
                rows[(cells[0], name)] = tuple(float(x) for x in m.groups())
    return rows


def main():
    a, b = parse(sys.argv[1]), parse(sys.argv[2])
    only = set(sys.argv[3:])
    f = lambda t: f'{t[0]:+.1f}% [{t[1]:+.1f}, {t[2]:+.1f}]'
    print('| row | column | overhead before | after | verdict |')
    print('|---|---|---|---|---|')
    worse = 0
    for key in a:
        if key not in b or (only and key[1] not in only):
            continue
        x, y = a[key], b[key]
        if y[1] > x[2]:
            v = 'worse'
            worse += 1
        elif y[2] < x[1]:
            v = 'better'
        else:
            v = 'same'
        print(f'| {key[0]} | {key[1]} | {f(x)} | {f(y)} | {v} |')
    print('\nrows worse beyond the intervals:', worse)


main()

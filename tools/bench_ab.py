#!/usr/bin/env python3
"""Compares the overheads of two `picos bench` runs (their text outputs): for
each row, the picos and picos-trap overheads (ratio to native, with its 95%
interval) before and after, and a verdict: "worse" when the new interval
lies wholly above the old one, "better" when wholly below, else "same".

    tools/bench_ab.py BEFORE.txt AFTER.txt

Overheads are paired with native in their own run, so two runs on a noisy
machine compare better this way than by absolute times (`--compare`).
"""
import re,sys
def parse(path):
    rows={}
    for l in open(path):
        c=[x.strip() for x in l.strip().strip('|').split('|')]
        if len(c)>=7 and c[0]!='test' and '[' in c[3] and not c[1] in ('native','picos','picos-trap'):
            def ov(s):
                m=re.match(r'([+-][\d.]+)% \[([+-]?[\d.]+), ([+-]?[\d.]+)\]', s)
                return tuple(float(x) for x in m.groups()) if m else None
            rows[c[0]]=(ov(c[3]), ov(c[5]))
    return rows
a=parse(sys.argv[1]); b=parse(sys.argv[2])
print('| row | picos overhead before | after | verdict | picos-trap before | after | verdict |')
print('|---|---|---|---|---|---|---|')
worse=0
for k in a:
    if k not in b: continue
    out=[k]
    for i in (0,1):
        x,y=a[k][i],b[k][i]
        if not x or not y: out+=['n/a','n/a','']; continue
        if y[1]>x[2]: v='worse'; worse+=1
        elif y[2]<x[1]: v='better'
        else: v='same'
        f=lambda t: f'{t[0]:+.1f}% [{t[1]:+.1f}, {t[2]:+.1f}]'
        out+=[f(x),f(y),v]
    print('| '+' | '.join(out)+' |')
print('\nrows worse beyond the intervals:', worse)

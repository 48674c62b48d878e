#!/usr/bin/python3
"""Syscall fuzzing of picos: the same seed natively and under `picos run`.

Builds tests/fuzz/sysfuzz.c, runs it natively (twice: calls whose results
differ between two native runs are nondeterministic by nature) and under
picos, and compares them child by child and call by call. Reports:

  * picos "internal error" / "a bug in picos" lines on stderr;
  * children that crashed (signal, panic exit 70, watchdog timeout) under
    picos but not natively, with the call that was running;
  * calls whose result (value or errno) or delivered signals differ, each
    classified as expected (and why) or unexpected.

Usage (docs/FUZZING.md):

  /usr/bin/python3 tools/fuzz.py --calls 20000            # short run
  /usr/bin/python3 tools/fuzz.py --jobs 1 --keep-going    # the 1,000,000-call run

Exit status: 0 when picos reported no internal error and crashed nowhere
native did not; 1 otherwise; 2 for a usage or set-up error.
Standard library only.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SRC = os.path.join(ROOT, "tests", "fuzz", "sysfuzz.c")
DEFAULT_PICOS = os.path.join(ROOT, "target", "x86_64-unknown-linux-musl", "release", "picos")

VARIANTS = {
    "glibc-dynamic": ("gcc", ["-O2", "-Wall", "-fPIE", "-pie"]),
    "glibc-static": ("gcc", ["-O2", "-Wall", "-static", "-no-pie", "-fno-pie"]),
    "musl-static": ("musl-gcc", ["-O2", "-Wall", "-static"]),
}

ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}

INTERNAL_RE = re.compile(r"internal error|a bug in picos")
MARK_RE = re.compile(r"^sysfuzz: child (\d+) (begin|end)")
CALL_RE = re.compile(r"^(\d+):(\d+) (\S) (-?\d+) (\S+) (\S+)(?: #(\w+))? =(\S+)(?: s=([0-9a-f]+))?$")

# Calls whose results legitimately differ between runs (beyond what the
# fuzzer already turns into symbols): reason by number.
EXPECTED_BY_NR = {
    312: "kcmp orders kernel pointers: 1/2 differ between runs",
    100: "times(): clock ticks",
    201: "time(): seconds",
    42: "non-blocking connect: EINPROGRESS or the final answer depending on timing",
    309: "getcpu: the CPU the call ran on",
}


# Calls that can change state and still fail (EFAULT writing the old value
# back after installing the new one): a divergence there is not harmless.
STATE_ON_FAILURE = {13, 14, 131, 160, 302}


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------------------
# Building and running
# ---------------------------------------------------------------------------

def build(variant):
    cc, flags = VARIANTS[variant]
    if not shutil.which(cc):
        raise SystemExit(f"fuzz.py: {cc} not found (needed for the {variant} build)")
    out_dir = os.path.join(ROOT, "target", "fuzz", variant)
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "sysfuzz")
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(SRC):
        return out
    tmp = f"{out}.{os.getpid()}.tmp"
    r = subprocess.run([cc, *flags, "-o", tmp, SRC], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"fuzz.py: compiling {SRC} failed:\n{r.stderr}")
    os.replace(tmp, out)
    return out


def run(cmd, out_log, err_log, timeout):
    """Runs cmd in its own process group; returns (returncode, timed_out)."""
    with open(err_log, "wb") as err:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                             env=ENV, cwd="/", start_new_session=True)
        try:
            return p.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return p.wait(), True


def fuzz_cmd(args, binary, first, count, out_log, extra=()):
    cmd = [binary, "-s", str(args.seed), "-f", str(first), "-c", str(count), "-n", str(args.per_child),
           "-o", out_log]
    if args.avoid:
        cmd += ["-A", args.avoid]
    cmd += ["-T", str(args.child_timeout)] + list(extra)
    return cmd


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------

class Child:
    __slots__ = ("k", "calls", "status", "ncalls", "pending")

    def __init__(self, k):
        self.k = k
        self.calls = {}      # idx -> (mode, nr, name, args, tags, result, sigs, line)
        self.status = None
        self.ncalls = 0
        self.pending = None  # the line of the call that did not finish


def parse_log(path):
    children = {}
    complete = False
    cur = None
    try:
        f = open(path, "r", errors="replace")
    except FileNotFoundError:
        return children, False
    with f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("C "):
                k = int(line.split()[1])
                cur = children[k] = Child(k)
            elif line.startswith("S "):
                parts = line.split()
                k = int(parts[1])
                ch = children.setdefault(k, Child(k))
                ch.status = parts[2]
                ch.ncalls = int(parts[3].split("=")[1])
                cur = None
            elif line.startswith("E "):
                complete = True
            elif cur is not None:
                m = CALL_RE.match(line)
                if not m:
                    continue
                k, idx, mode, nr, name, cargs, tags, res, sigs = m.groups()
                if res == "?":
                    cur.pending = line
                cur.calls[int(idx)] = (mode, int(nr), name, cargs, tags or "", res, sigs or "", line)
    return children, complete


def parse_stderr(path):
    """Internal-error lines and warnings, attributed to children."""
    per_child = defaultdict(list)
    other = []
    warnings = Counter()
    cur = None
    try:
        text = open(path, "r", errors="replace").read()
    except FileNotFoundError:
        return per_child, other, warnings
    for line in text.splitlines():
        m = MARK_RE.match(line)
        if m:
            cur = int(m.group(1)) if m.group(2) == "begin" else None
            continue
        if INTERNAL_RE.search(line):
            (per_child[cur] if cur is not None else other).append(line)
        elif line.startswith("picos: warning:"):
            warnings[re.sub(r"\(\d+\)", "(N)", line)] += 1
        elif line.startswith("picos:") and cur is None:
            other.append(line)
    return per_child, other, warnings


# ---------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------

def is_crash(status):
    return status is not None and (status.startswith("signal:") or status == "exit:70"
                                   or status in ("timeout", "hardtimeout") or status == "exit:99")


class Report:
    def __init__(self):
        self.calls = 0
        self.children = 0
        self.internal = []        # (chunk, child, lines, pending call)
        self.crashes = []         # (child, native status, picos status, pending call)
        self.hangs = []
        self.incomplete = []      # picos runs that did not finish
        self.expected = Counter()
        self.nondet = Counter()
        self.unexpected = []      # (child, line native, line picos)
        self.unexpected_kinds = Counter()
        self.cascade = 0
        self.warnings = Counter()
        self.other_stderr = []
        self.native_crashes = Counter()

    def hard_hangs(self):
        # the parent had to kill the child: its alarm() watchdog could not fire
        # (picos looping with signals blocked), not a slow machine
        return [h for h in self.hangs if h[2] == "hardtimeout"]

    def findings(self):
        return len(self.internal) + len(self.crashes) + len(self.hard_hangs()) + len(self.incomplete)


def classify(nr, tags, nat, pic, unsupported, cargs=""):
    try:
        a = [int(x, 16) for x in cargs.split(",")]
    except ValueError:
        a = [0] * 6
    if "x" in tags:
        return "/proc/self/exe opens the picos runtime (README)"
    if "p" in tags:
        return "/proc or /dev path or descriptor: contents differ"
    if pic == "E38" and nr in unsupported:
        return f"unsupported in picos: ENOSYS ({unsupported[nr]})"
    if nr in EXPECTED_BY_NR:
        return EXPECTED_BY_NR[nr]
    if nr == 324 and nat == "E1" and pic == "0":
        return "membarrier: picos registers the process for its patcher's expedited barriers"
    if (nr == 140 and a[0] == 1 or nr == 252 and a[0] == 2) and pic == "E3":
        return "process group: natively the fuzzer leads its group, under picos the CLI does"
    if nr in (31, 66, 71) and ((a[2] if nr == 66 else a[1]) & 0xff) in (3, 11, 12, 13, 14, 18, 19, 20, 21, 23, 24):
        return "SysV IPC_INFO/*_STAT: system-wide figures"
    return None


def compare_chunk(rep, nat, nat2, pic, unsupported, first, count):
    for k in range(first, first + count):
        n, p = nat.get(k), pic.get(k)
        n2 = nat2.get(k) if nat2 is not None else None
        if n is None:
            continue
        rep.children += 1
        if is_crash(n.status):
            rep.native_crashes[n.status] += 1
        if p is None:
            continue  # reported as incomplete
        rep.calls += p.ncalls
        if p.status != n.status:
            same_in_native2 = n2 is not None and n2.status != n.status
            if p.status in ("timeout", "hardtimeout"):
                rep.hangs.append((k, n.status, p.status, p.pending))
            elif is_crash(p.status) and not same_in_native2:
                rep.crashes.append((k, n.status, p.status, p.pending))
        first_bad = None
        for idx in sorted(n.calls):
            if idx not in p.calls:
                break
            a, b = n.calls[idx], p.calls[idx]
            if a[1] != b[1] or a[0] != b[0]:
                rep.unexpected.append((k, a[7], b[7] + "   [the two runs desynchronised]"))
                break
            if a[5] == "?" or b[5] == "?":
                break
            if a[5] == b[5] and a[6] == b[6]:
                continue
            if first_bad is not None:
                rep.cascade += 1
                continue
            if n2 is not None and idx in n2.calls and (n2.calls[idx][5] != a[5] or n2.calls[idx][6] != a[6]):
                rep.nondet[a[2]] += 1
                continue
            why = classify(a[1], a[4] + b[4], a[5], b[5], unsupported, a[3])
            if why:
                rep.expected[why] += 1
                continue
            # A call that failed in both runs (different errnos) changed
            # nothing: later calls are still comparable. Anything else may
            # have: later divergences in this child count as consequences.
            if not (a[5].startswith("E") and b[5].startswith("E") and a[6] == b[6]) or a[1] in STATE_ON_FAILURE:
                first_bad = idx
            kind = "signals" if a[5] == b[5] else "result"
            rep.unexpected.append((k, a[7], b[7]))
            rep.unexpected_kinds[f"{a[2]}: native {a[5]}{' s=' + a[6] if a[6] else ''} / "
                                 f"picos {b[5]}{' s=' + b[6] if b[6] else ''}" if kind == "signals" else
                                 f"{a[2]}: native {a[5]} / picos {b[5]}"] += 1


# ---------------------------------------------------------------------------
# Minimising a finding
# ---------------------------------------------------------------------------

def reproduces(args, binary, picos, k, upto, only, sig, workdir):
    """Does running child k's calls `only` (indices) reproduce the finding?"""
    out = os.path.join(workdir, "min.log")
    err = os.path.join(workdir, "min.err")
    extra = ["-O", ",".join(map(str, sorted(only)))]
    cmd = [binary, "-s", str(args.seed), "-f", str(k), "-c", "1", "-n", str(upto + 1), "-o", out]
    if args.avoid:
        cmd += ["-A", args.avoid]
    cmd += extra + ["-T", "5" if sig[1] == "hardtimeout" else str(args.child_timeout)]
    run([picos, "run", "--", *cmd], out, err, 300)
    children, _ = parse_log(out)
    per_child, other, _ = parse_stderr(err)
    ch = children.get(k)
    if sig[0] == "internal":
        return bool(per_child.get(k) or other)
    if ch is None or ch.status != sig[1]:
        return False
    if sig[2] is not None and (ch.pending is None or not ch.pending.startswith(f"{k}:{upto} ")):
        return False
    # natively the same calls must not crash the same way
    run(cmd, out, err, 300)
    children, _ = parse_log(out)
    chn = children.get(k)
    return chn is not None and chn.status != sig[1]


def minimise(args, binary, picos, k, upto, sig, workdir, budget=250):
    """ddmin over the call indices before `upto` (which is always kept)."""
    calls = list(range(upto))
    tests = 0
    n = 2
    while len(calls) >= 2 and tests < budget:
        chunk = max(1, len(calls) // n)
        reduced = False
        for i in range(0, len(calls), chunk):
            complement = calls[:i] + calls[i + chunk:]
            tests += 1
            if reproduces(args, binary, picos, k, upto, complement + [upto], sig, workdir):
                calls = complement
                n = max(n - 1, 2)
                reduced = True
                break
            if tests >= budget:
                break
        if not reduced:
            if n >= len(calls):
                break
            n = min(len(calls), n * 2)
    if len(calls) == 1 and tests < budget:
        tests += 1
        if reproduces(args, binary, picos, k, upto, [upto], sig, workdir):
            calls = []
    return calls + [upto], tests


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description="Fuzz picos with random system calls, against native runs.")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--calls", type=int, default=1_000_000, help="total calls (default 1,000,000)")
    ap.add_argument("--per-child", type=int, default=1000, help="calls per forked child (default 1000)")
    ap.add_argument("--first", type=int, default=0, help="first child number (default 0)")
    ap.add_argument("--chunk", type=int, default=25, help="children per fuzzer process (default 25)")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                    help="chunks run at the same time (default: half the CPUs)")
    ap.add_argument("--picos", default=DEFAULT_PICOS, help="the picos binary")
    ap.add_argument("--variant", default="glibc-dynamic", choices=sorted(VARIANTS) + ["all"])
    ap.add_argument("--avoid", default="", help="known picos bug classes to steer clear of (sysfuzz -A)")
    ap.add_argument("--keep-going", action="store_true", help="do not stop at the first finding")
    ap.add_argument("--minimise", action="store_true", help="shrink each finding to the calls it needs")
    ap.add_argument("--child-timeout", type=int, default=30,
                    help="seconds before the fuzzer kills a child that blocks its watchdog (default 30)")
    ap.add_argument("--single-native", action="store_true",
                    help="run natively once, not twice (no nondeterminism baseline)")
    ap.add_argument("--workdir", help="keep logs here (default: a temporary directory, removed)")
    ap.add_argument("--report", help="also write the report as JSON to this file")
    ap.add_argument("--reuse", action="store_true",
                    help="with --workdir: compare the logs already there instead of running again")
    ap.add_argument("--show", type=int, default=15, help="how many unexpected divergences to show")
    args = ap.parse_args()

    if not os.access(args.picos, os.X_OK):
        print(f"fuzz.py: {args.picos} not found: run `cargo build --release` first, or pass --picos",
              file=sys.stderr)
        return 2
    picos = os.path.abspath(args.picos)
    variants = sorted(VARIANTS) if args.variant == "all" else [args.variant]
    workdir = args.workdir or tempfile.mkdtemp(prefix="picos-fuzz.")
    os.makedirs(workdir, exist_ok=True)
    os.chmod(workdir, 0o755)
    # private copies: rebuilding the fuzzer during a long run must not change it
    binaries = {}
    for v in variants:
        d = os.path.join(workdir, "bin", v)
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o755)
        binaries[v] = os.path.join(d, "sysfuzz")
        if not (args.reuse and os.path.exists(binaries[v])):
            shutil.copy2(build(v), binaries[v])
    try:
        table = json.loads(subprocess.run([picos, "syscalls", "--json"], capture_output=True,
                                          text=True, check=True).stdout)
        unsupported = {row["nr"]: row["note"] or "unsupported" for row in table if row["served"] == "unsupported"}
    except (subprocess.CalledProcessError, ValueError, KeyError):
        unsupported = {}

    nchildren = max(1, (args.calls + args.per_child - 1) // args.per_child)
    chunks = [(args.first + i, min(args.chunk, nchildren - i)) for i in range(0, nchildren, args.chunk)]
    log(f"fuzz: seed {args.seed}, {nchildren} children x {args.per_child} calls, {len(chunks)} chunks, "
        f"jobs {args.jobs}, variant(s) {', '.join(variants)}, avoid '{args.avoid}', picos {picos}")
    log(f"fuzz: logs in {workdir}")

    rep = Report()
    start = time.time()
    # generous: a child's watchdog is 10 s without progress, its hard limit 30 s
    per_run_timeout = 60 + (args.child_timeout + 10) * args.chunk

    def do_chunk(ci, first, count):
        variant = variants[ci % len(variants)]
        binary = binaries[variant]
        d = os.path.join(workdir, f"chunk{first:07d}")
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o755)
        res = {"variant": variant, "first": first, "count": count, "dir": d}
        runs = [("native", [])] + ([] if args.single_native else [("native2", [])]) + [("picos", [picos, "run", "--"])]
        for name, prefix in runs:
            out, err = os.path.join(d, f"{name}.log"), os.path.join(d, f"{name}.err")
            if args.reuse and os.path.exists(out):
                res[name] = (0, False, 0.0)
                continue
            t0 = time.time()
            rc, timed_out = run(prefix + fuzz_cmd(args, binary, first, count, out), out, err, per_run_timeout)
            res[name] = (rc, timed_out, time.time() - t0)
        return res

    stop = False
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        pending = {}
        it = iter(enumerate(chunks))
        for _ in range(args.jobs * 2):
            nxt = next(it, None)
            if nxt:
                pending[pool.submit(do_chunk, nxt[0], *nxt[1])] = nxt
        done_chunks = 0
        while pending:
            fut = next(concurrent.futures.as_completed(pending))
            pending.pop(fut)
            r = fut.result()
            d = r["dir"]
            nat, _ = parse_log(os.path.join(d, "native.log"))
            nat2 = None if args.single_native else parse_log(os.path.join(d, "native2.log"))[0]
            pic, complete = parse_log(os.path.join(d, "picos.log"))
            per_child, other, warnings = parse_stderr(os.path.join(d, "picos.err"))
            rep.warnings.update(warnings)
            before = rep.findings()
            for k, lines in sorted(per_child.items()):
                ch = pic.get(k)
                rep.internal.append((r["first"], k, lines, ch.pending if ch else None, r["variant"]))
            if other:
                rep.other_stderr.extend(other)
                if any(INTERNAL_RE.search(x) for x in other):
                    rep.internal.append((r["first"], None, [x for x in other if INTERNAL_RE.search(x)], None,
                                         r["variant"]))
            rc, timed_out, secs = r["picos"]
            if not complete and parse_log(os.path.join(d, "native.log"))[1]:
                rep.incomplete.append((r["first"], r["count"], rc, timed_out,
                                       sorted(set(range(r["first"], r["first"] + r["count"])) - set(pic))))
            compare_chunk(rep, nat, nat2, pic, unsupported, r["first"], r["count"])
            done_chunks += 1
            nat_secs = r["native"][2]
            log(f"fuzz: chunk {done_chunks}/{len(chunks)} (children {r['first']}..{r['first'] + r['count'] - 1}, "
                f"{r['variant']}): native {nat_secs:.1f}s, picos {secs:.1f}s{' TIMED OUT' if timed_out else ''}; "
                f"total {rep.calls} calls, {len(rep.internal)} internal errors, {len(rep.crashes)} picos-only crashes, "
                f"{len(rep.unexpected)} unexpected divergences")
            if rep.findings() > before and not args.keep_going:
                stop = True
            if stop:
                for f in pending:
                    f.cancel()
                continue
            nxt = next(it, None)
            if nxt:
                pending[pool.submit(do_chunk, nxt[0], *nxt[1])] = nxt

    elapsed = time.time() - start
    binary0 = binaries[variants[0]]
    print_report(args, rep, elapsed, picos, binaries, workdir)

    if args.minimise and rep.findings():
        mdir = os.path.join(workdir, "minimise")
        os.makedirs(mdir, exist_ok=True)
        os.chmod(mdir, 0o755)
        seen = set()
        items = [("internal", c[1], c[3], c[4]) for c in rep.internal if c[1] is not None] + \
                [("crash", c[0], c[3], None, c[2]) for c in rep.crashes] + \
                [("crash", c[0], c[3], None, c[2]) for c in rep.hangs if c[2] == "hardtimeout"]
        for item in items:
            kind, k, pending_line = item[0], item[1], item[2]
            if pending_line is None:
                continue
            upto = int(pending_line.split()[0].split(":")[1])
            key = (kind, pending_line.split()[3])
            if key in seen:
                continue
            seen.add(key)
            sig = ("internal", None, None) if kind == "internal" else ("crash", item[4], upto)
            binary = binaries[item[3]] if kind == "internal" and item[3] else binary0
            keep, tests = minimise(args, binary, picos, k, upto, sig, mdir)
            log(f"\nminimised child {k} ({kind}, {tests} runs): calls {','.join(map(str, keep))}")
            log(f"  picos run -- {binary} -s {args.seed} -f {k} -c 1 -n {upto + 1} -O {','.join(map(str, keep))}"
                + (f" -A {args.avoid}" if args.avoid else ""))
            cmd = [binary, "-s", str(args.seed), "-f", str(k), "-c", "1", "-n", str(upto + 1),
                   "-O", ",".join(map(str, keep)), "-T", "5"] + (["-A", args.avoid] if args.avoid else [])
            for name, prefix in (("native", []), ("picos", [picos, "run", "--"])):
                out = os.path.join(mdir, f"final-{name}.log")
                err = os.path.join(mdir, f"final-{name}.err")
                run(prefix + cmd + ["-o", out], out, err, 300)
                log(f"  {name}:")
                for line in open(out, errors="replace"):
                    if "=skip" not in line and not line.startswith(("C ", "E ")):
                        log("    " + line.rstrip())
                for line in open(err, errors="replace"):
                    if INTERNAL_RE.search(line):
                        log("    " + line.rstrip())

    if args.report:
        with open(args.report, "w") as f:
            json.dump({
                "seed": args.seed, "calls": rep.calls, "children": rep.children, "seconds": round(elapsed, 1),
                "internal_errors": [{"child": c[1], "lines": c[2], "call": c[3], "variant": c[4]} for c in rep.internal],
                "picos_only_crashes": [{"child": c[0], "native": c[1], "picos": c[2], "call": c[3]} for c in rep.crashes],
                "hangs": [{"child": c[0], "native": c[1], "picos": c[2], "call": c[3]} for c in rep.hangs],
                "incomplete_runs": [{"first": c[0], "count": c[1], "rc": c[2], "timed_out": c[3], "missing": c[4]}
                                    for c in rep.incomplete],
                "expected": dict(rep.expected), "nondeterministic": dict(rep.nondet),
                "unexpected": [{"child": c[0], "native": c[1], "picos": c[2]} for c in rep.unexpected],
                "unexpected_kinds": dict(rep.unexpected_kinds), "cascade": rep.cascade,
                "warnings": dict(rep.warnings),
            }, f, indent=1)

    if not args.workdir and not rep.findings():
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if rep.findings() else 0


def print_report(args, rep, elapsed, picos, binaries, workdir):
    def repro(k, variant=None):
        if variant is None:
            # The chunk's variant: chunks take turns (see do_chunk).
            names = list(binaries)
            variant = names[((k - args.first) // args.chunk) % len(names)]
        b = binaries[variant]
        a = f" -A {args.avoid}" if args.avoid else ""
        return f"{picos} run -- {b} -s {args.seed} -f {k} -c 1 -n {args.per_child}{a}"

    log("")
    log("=" * 78)
    log(f"fuzz report: seed {args.seed}, {rep.calls} calls under picos in {rep.children} children, "
        f"{elapsed:.0f} s")
    log("=" * 78)
    log(f"internal errors:          {len(rep.internal)}")
    for first, k, lines, pend, variant in rep.internal:
        log(f"  child {k} ({variant}):")
        for line in lines[:5]:
            log(f"    {line}")
        if pend:
            log(f"    call running: {pend}")
        if k is not None:
            log(f"    reproduce: {repro(k, variant)}")
    log(f"crashes under picos only: {len(rep.crashes)}")
    by_call = defaultdict(list)
    for k, ns, ps, pend in rep.crashes:
        name = pend.split()[3] if pend else "(between calls)"
        by_call[(name, ps)].append((k, ns, pend))
    for (name, ps), items in sorted(by_call.items(), key=lambda x: -len(x[1])):
        k, ns, pend = items[0]
        log(f"  {len(items):4d} x {ps} during {name} (native: {ns}); e.g. child {k}:")
        log(f"         {pend}")
        log(f"         reproduce: {repro(k)}")
    log(f"hangs under picos only:   {len(rep.hangs)}")
    for k, ns, ps, pend in rep.hangs[:10]:
        log(f"  child {k}: native {ns}, picos {ps}; call running: {pend}")
    if rep.incomplete:
        log(f"picos runs that did not finish: {len(rep.incomplete)}")
        for first, count, rc, to, missing in rep.incomplete:
            log(f"  children {first}..{first + count - 1}: exit {rc}{' (timed out)' if to else ''}, "
                f"missing children {missing[:10]}{'...' if len(missing) > 10 else ''}")
    nexp = sum(rep.expected.values())
    log(f"divergent calls:          {len(rep.unexpected)} unexpected, {nexp} expected, "
        f"{sum(rep.nondet.values())} nondeterministic natively, {rep.cascade} after an earlier divergence "
        f"that changed state (not compared)")
    for why, n in rep.expected.most_common():
        log(f"  expected {n:6d}: {why}")
    if rep.nondet:
        log("  nondeterministic natively: " + ", ".join(f"{k} {v}" for k, v in rep.nondet.most_common(12)))
    if rep.unexpected_kinds:
        log("  unexpected, by call:")
        for kind, n in rep.unexpected_kinds.most_common(args.show):
            log(f"    {n:5d}  {kind}")
    shown = set()
    for k, a, b in rep.unexpected:
        kind = a.split()[3] + " " + a.split("=")[-1] + " " + b.split("=")[-1]
        if kind in shown or len(shown) >= args.show:
            continue
        shown.add(kind)
        log(f"  child {k}:\n    native: {a}\n    picos:  {b}")
    if rep.native_crashes:
        log("children ending early natively too (the fuzzer's own doing): " +
            ", ".join(f"{s} {n}" for s, n in rep.native_crashes.most_common()))
    if rep.warnings:
        log(f"picos warnings: {sum(rep.warnings.values())} ({len(rep.warnings)} kinds)")
    if rep.other_stderr:
        log("other picos stderr lines: " + "; ".join(rep.other_stderr[:5]))
    log(f"verdict: {'FAIL' if rep.findings() else 'ok'} ({len(rep.internal)} internal errors, "
        f"{len(rep.crashes)} crashes and {len(rep.hard_hangs())} hard hangs under picos only"
        f"{f', {len(rep.incomplete)} picos runs cut short' if rep.incomplete else ''})")


if __name__ == "__main__":
    sys.exit(main())

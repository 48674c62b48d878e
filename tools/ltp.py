#!/usr/bin/python3
"""The Linux Test Project's syscall tests, natively and under picos.

    tools/ltp.py build [--src GIT] [--tag TAG]
    tools/ltp.py run [--filter REGEX] [--jobs N] [--picos PATH] [--native-from TSV]
    tools/ltp.py compare RESULTS.tsv

`build` clones LTP (a git directory or URL; `--src`), checks out `--tag`,
and builds and installs the library and `testcases/kernel/syscalls` under
the cache directory (`$PICOS_LTP_CACHE`, default ~/.cache/picos/ltp), not in
the repository. It needs autoconf, automake, make, gcc, bison, flex, and
for more tests libaio-dev, libcap-dev, libacl1-dev, libkeyutils-dev,
libnuma-dev, libmnl-dev. Built once; `--rebuild` starts over.

`run` runs every test of `runtest/syscalls` natively, then under
`picos run`, one after the other (each in a fresh temporary directory,
its own process group, killed after `--timeout` seconds), and prints a line
per test: the native result, the picos result and both times. A result is
LTP's exit status read as LTP writes it: PASS (0), CONF (32: not
applicable here), FAIL (bit 1), BROK (bit 2), WARN (bit 4), SIG<n>, TIMEOUT.
Tests that would change the host (its clock, modules, swap, mounts, block
devices, host name, reboot) are not run; `SKIP_RULES` and the tests' own
sources (`.needs_device`, `.mount_device`, `.all_filesystems`,
`.needs_rofs`, `.format_device`, the old library's `tst_acquire_device`) say which, and the line says why. Nor,
unless `--slow`, the tests that loop for minutes whatever LTP_RUNTIME_MUL
says (fuzzy-sync race tests, a `.min_runtime` of 30 s or more).

At the end it prints the tests that pass natively but not under picos, each
with its entry in the known-differences list (`tools/ltp-known.tsv`: test,
issue, reason) or "NEW"; known entries that now pass ("FIXED": remove them
from the list); and the share of natively passing tests that pass under
picos. Exit status 1 if there is a NEW difference. Results go to
`--out` (TSV), and each run's output to the cache's `logs/`.

Not part of CI (a full run takes about an hour here); docs/LTP.md has the
latest figures and the command.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("PICOS_LTP_CACHE", Path.home() / ".cache/picos/ltp"))
DEFAULT_SRC = "https://github.com/linux-test-project/ltp"
DEFAULT_TAG = "20260529"
KNOWN = REPO / "tools/ltp-known.tsv"

# Tests not run, by name (regular expression, matched against the whole
# runtest name) and why. Everything here changes the host or its devices,
# which no test of a sandboxing tool should do on a shared machine.
SKIP_RULES = [
    (r"(settimeofday|stime|clock_settime|adjtimex|clock_adjtime|leapsec)\d+.*", "sets the host's clock"),
    (r"(init_module|finit_module|delete_module)\d+.*", "loads or unloads kernel modules"),
    (r"(swapon|swapoff)\d+.*", "changes the host's swap"),
    (r"(mount|umount|umount2|fsmount|fsopen|fsconfig|fspick|move_mount|open_tree|mount_setattr|pivot_root)\d+.*",
     "mounts file systems on the host"),
    (r"(sethostname|setdomainname)\d+.*", "changes the host's name"),
    (r"reboot\d+.*", "reboots or changes the reboot key"),
    (r"acct\d+.*", "turns on process accounting for the host"),
    (r"quotactl\d+.*", "changes disk quotas (needs a device)"),
    (r"(ioperm|iopl)\d+.*", "I/O port access on the host"),
    (r"vhangup\d+.*", "hangs up the controlling terminal"),
    (r"syslog\d+.*", "changes the kernel log's console level"),
]
SKIP_RULES = [(re.compile(p), why) for p, why in SKIP_RULES]

DEVICE_FIELDS = re.compile(
    r"\.(needs_device|mount_device|all_filesystems|needs_rofs|format_device)\s*=\s*1"
    r"|tst_acquire_device\("  # the old library's way
)


def results_of(rc: int, timed_out: bool) -> str:
    if timed_out:
        return "TIMEOUT"
    if rc < 0:
        return f"SIG{-rc}"
    if rc == 0:
        return "PASS"
    if rc == 127:
        return "NOTFOUND"
    if rc == 32:
        return "CONF"
    if rc & 2:
        return "BROK"
    if rc & 1:
        return "FAIL"
    if rc & 4:
        return "WARN"
    return f"EXIT{rc}"


def sh(cmd, cwd=None, log=None):
    print("+", " ".join(str(c) for c in cmd), file=sys.stderr)
    with open(log, "ab") if log else open(os.devnull, "wb") as out:
        r = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.exit(f"ltp.py: {' '.join(map(str, cmd))} failed ({r.returncode}); see {log}")


def build(args):
    src, install = CACHE / "src", CACHE / "install"
    stamp = install / f".built-{args.tag}"
    if stamp.exists() and not args.rebuild:
        print(f"ltp.py: LTP {args.tag} is built in {install}")
        return
    for tool in ["autoconf", "automake", "make", "gcc", "bison", "flex"]:
        if not shutil.which(tool):
            sys.exit(f"ltp.py: {tool} is not installed (apt-get install {tool})")
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(install, ignore_errors=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    log = CACHE / "build.log"
    log.unlink(missing_ok=True)
    sh(["git", "clone", "-q", args.src, src], log=log)
    sh(["git", "checkout", "-q", args.tag], cwd=src, log=log)
    sh(["make", "autotools"], cwd=src, log=log)
    sh(["./configure", f"--prefix={install}"], cwd=src, log=log)
    jobs = f"-j{os.cpu_count() or 1}"
    sh(["make", jobs, "-C", "lib"], cwd=src, log=log)
    sh(["make", jobs, "-C", "testcases/kernel/syscalls"], cwd=src, log=log)
    sh(["make", "-C", "testcases/kernel/syscalls", "install"], cwd=src, log=log)
    (install / "runtest").mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "runtest/syscalls", install / "runtest/syscalls")
    stamp.touch()
    print(f"ltp.py: built LTP {args.tag} in {install}")


def runtest(install: Path):
    """(name, command) of each line of runtest/syscalls."""
    out = []
    for line in (install / "runtest/syscalls").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        # The name, then the command line (spaces or tabs between).
        name, _, cmd = line.replace("\t", " ").partition(" ")
        out.append((name, cmd.strip() or name))
    return out


LONG_FIELDS = re.compile(r"\.(min_runtime|runtime|max_runtime)\s*=\s*(\d+)")


def scan_sources(src: Path):
    """Test programs whose source asks LTP for a block device, and those
    that loop for a long time (race tests with fuzzy sync, or a runtime of
    30 s or more, which LTP_RUNTIME_MUL cannot shorten below
    `.min_runtime`)."""
    devices, slow = set(), set()
    for c in (src / "testcases/kernel/syscalls").rglob("*.c"):
        try:
            text = c.read_text(errors="replace")
        except OSError:
            continue
        if DEVICE_FIELDS.search(text):
            devices.add(c.stem)
        if "tst_fuzzy_sync.h" in text or any(int(m.group(2)) >= 30
                                              for m in LONG_FIELDS.finditer(text)):
            slow.add(c.stem)
    return devices, slow


def skip_reason(name: str, cmd: str, devices: set, slow: set):
    for rule, why in SKIP_RULES:
        if rule.fullmatch(name):
            return why
    prog = os.path.basename(cmd.split()[0]) if cmd.split() else name
    # foo_64 and foo_16 are built from foo.c.
    prog = re.sub(r"_(64|16)$", "", prog)
    if prog in devices:
        return "needs a block device (LTP sets up a loop device and file systems on the host)"
    if prog in slow:
        return "loops for minutes (a race test or a long runtime): --slow runs it"
    return None


def run_one(argv, env, timeout, log: Path):
    tmp = tempfile.mkdtemp(prefix="picos-ltp-")
    env = dict(env, TMPDIR=tmp)
    t0 = time.monotonic()
    timed_out = False
    with open(log, "wb") as out:
        p = subprocess.Popen(argv, env=env, cwd=tmp, stdin=subprocess.DEVNULL,
                             stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            rc = p.wait()
    # A test's leftover children (killed with the group on a timeout).
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    elapsed = time.monotonic() - t0
    shutil.rmtree(tmp, ignore_errors=True)
    return results_of(rc, timed_out), elapsed


def load_known():
    known = {}
    if KNOWN.exists():
        for line in KNOWN.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) < 3:
                sys.exit(f"ltp.py: {KNOWN}: bad line (test, issue, reason; tabs): {line!r}")
            known[parts[0]] = (parts[1], parts[2])
    return known


def load_results(path: Path):
    rows = {}
    for line in path.read_text().splitlines()[1:]:
        f = line.split("\t")
        if len(f) >= 5:
            rows[f[0]] = f
    return rows


def report(rows, out=sys.stdout):
    """rows: [name, native, picos, t_native, t_picos, why]. Returns the NEW count."""
    known = load_known()
    ran = [r for r in rows if r[1] != "SKIP"]
    native_pass = [r for r in ran if r[1] == "PASS"]
    both = [r for r in native_pass if r[2] == "PASS"]
    differ = [r for r in native_pass if r[2] != "PASS"]
    new = 0
    print("\n## Pass natively, not under picos\n", file=out)
    for r in differ:
        k = known.get(r[0])
        if k:
            print(f"{r[0]:24} {r[2]:8} known ({k[0]}): {k[1]}", file=out)
        else:
            new += 1
            print(f"{r[0]:24} {r[2]:8} NEW", file=out)
    fixed = [r for r in rows if r[0] in known and r[1] == "PASS" and r[2] == "PASS"]
    if fixed:
        print("\n## Known differences that pass now (FIXED: remove them from the list;"
              " an intermittent one only passed this time)\n", file=out)
        for r in fixed:
            what = "passed (intermittent)" if known[r[0]][1].startswith("intermittent") else "FIXED"
            print(f"{r[0]:24} {what}", file=out)
    better = [r for r in ran if r[1] != "PASS" and r[2] == "PASS"]
    skipped = len(rows) - len(ran)
    share = 100.0 * len(both) / len(native_pass) if native_pass else 0.0
    t_native = sum(float(r[3]) for r in ran if r[3])
    t_picos = sum(float(r[4]) for r in ran if r[4])
    print(f"\n{len(rows)} tests: {skipped} not run (they change the host, need a block device, "
          f"or loop for minutes), {len(ran)} run; "
          f"{len(native_pass)} pass natively, {len(both)} of them under picos too "
          f"({share:.1f}%); {len(differ)} differ ({new} new, {len(differ) - new} known); "
          f"{len(better)} pass under picos only. Time: {t_native:.0f} s natively, "
          f"{t_picos:.0f} s under picos.", file=out)
    return new


def run(args):
    install = CACHE / "install"
    if not (install / "runtest/syscalls").exists():
        sys.exit(f"ltp.py: LTP is not built in {install}: run 'tools/ltp.py build' first")
    picos = Path(args.picos).resolve()
    if not picos.exists():
        sys.exit(f"ltp.py: {picos} does not exist: build picos first (cargo build --release)")
    devices, slow = scan_sources(CACHE / "src")
    if args.slow:
        slow = set()
    tests = runtest(install)
    if args.filter:
        f = re.compile(args.filter)
        tests = [t for t in tests if f.search(t[0])]
    if not tests:
        sys.exit("ltp.py: no test matches")
    previous = load_results(Path(args.native_from)) if args.native_from else {}
    logs = CACHE / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(
        LTPROOT=str(install),
        PATH=f"{install}/testcases/bin:{env.get('PATH', '/usr/bin:/bin')}",
        LTP_COLORIZE_OUTPUT="0",
        LTP_TIMEOUT_MUL=str(args.timeout_mul),
        LTP_RUNTIME_MUL=str(args.runtime_mul),
    )
    env.pop("CI", None)
    # Tests expect the default dispositions: a runner started with nohup
    # would pass on SIGHUP ignored (kill11 waits forever for a child that
    # SIGHUP should end).
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)

    def one(t):
        name, cmd = t
        why = skip_reason(name, cmd, devices, slow)
        if why:
            return [name, "SKIP", "SKIP", "", "", why]
        if name in previous and previous[name][1] not in ("SKIP", ""):
            nat, tn = previous[name][1], previous[name][3]
        else:
            nat, tn = run_one(["/bin/sh", "-c", cmd], env, args.timeout, logs / f"{name}.native.log")
            tn = f"{tn:.2f}"
        pic, tp = run_one([str(picos), "run", "--", "/bin/sh", "-c", cmd], env, args.timeout,
                          logs / f"{name}.picos.log")
        return [name, nat, pic, tn, f"{tp:.2f}", ""]

    out = open(args.out, "w") if args.out else None
    if out:
        out.write("test\tnative\tpicos\tnative_s\tpicos_s\tnote\n")
    rows = []
    print(f"{'test':24} {'native':8} {'picos':8} {'native s':>9} {'picos s':>9}")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for r in pool.map(one, tests):
            rows.append(r)
            mark = "" if r[1] == r[2] or r[1] == "SKIP" else "  <-- differs"
            print(f"{r[0]:24} {r[1]:8} {r[2]:8} {r[3]:>9} {r[4]:>9}{mark}"
                  + (f"  ({r[5]})" if r[5] else ""), flush=True)
            if out:
                out.write("\t".join(r) + "\n")
                out.flush()
    if out:
        out.close()
    return 1 if report(rows) else 0


def compare(args):
    rows = list(load_results(Path(args.results)).values())
    rows = [r + [""] * (6 - len(r)) for r in rows]
    return 1 if report(rows) else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build", help="clone and build LTP's syscall tests in the cache")
    b.add_argument("--src", default=DEFAULT_SRC, help="LTP's git repository (path or URL)")
    b.add_argument("--tag", default=DEFAULT_TAG, help="release tag to build")
    b.add_argument("--rebuild", action="store_true", help="build again even if built")
    r = sub.add_parser("run", help="run runtest/syscalls natively and under picos")
    r.add_argument("--picos", default=str(REPO / "target/x86_64-unknown-linux-musl/release/picos"))
    r.add_argument("--filter", help="only tests whose name matches this regular expression")
    r.add_argument("--jobs", type=int, default=1, help="tests run at once (default 1)")
    r.add_argument("--timeout", type=float, default=300, help="seconds before a run is killed")
    r.add_argument("--timeout-mul", type=float, default=2, help="LTP_TIMEOUT_MUL (default 2)")
    r.add_argument("--runtime-mul", type=float, default=0.1,
                   help="LTP_RUNTIME_MUL: how long the race and stress tests loop (default 0.1 "
                        "of their own time; 1 runs them as LTP does, hours in all)")
    r.add_argument("--out", default=str(CACHE / "results.tsv"), help="results as TSV")
    r.add_argument("--native-from", help="take native results from this earlier TSV")
    r.add_argument("--slow", action="store_true",
                   help="also run the tests that loop for minutes (race tests: hours in all)")
    c = sub.add_parser("compare", help="print the report of an earlier run's TSV")
    c.add_argument("results")
    args = ap.parse_args()
    return {"build": build, "run": run, "compare": compare}[args.what](args) or 0


if __name__ == "__main__":
    sys.exit(main())

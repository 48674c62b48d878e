#!/usr/bin/env python3
"""Container start-up with picos as the OCI runtime against runc.

    sudo tools/oci_startup.py [--picos PATH] [--runc PATH] [--rounds N]

Times `podman run --rm --network none IMAGE true` with `--runtime runc` and
`--runtime picos`, alternating, N rounds (default 30), in a podman storage
of its own (a temporary directory: the machine's images and containers are
neither seen nor touched) with a busybox image made from /bin/busybox.
Prints each runtime's mean ± 95% confidence interval and the paired
difference. Needs root, podman, runc and busybox (Debian: podman runc
busybox-static).
"""

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# Debian 12's runc cannot raise the limits podman otherwise takes from the
# caller (docs/OCI.md); picos sets whatever the spec says, so both get these.
ULIMITS = ["--ulimit", "nofile=1024:20000", "--ulimit", "nproc=1024:1024"]


def ci95(v):
    """Half-width of the 95% confidence interval of the mean (Student's t)."""
    n = len(v)
    if n < 2:
        return float("nan")
    # t(0.975) for n-1 degrees of freedom; 1.96 beyond the table.
    t = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31,
         9: 2.26, 10: 2.23, 15: 2.13, 20: 2.09, 25: 2.06, 30: 2.04, 40: 2.02}
    df = n - 1
    k = max((d for d in t if d <= df), default=1)
    return (t[k] if df <= 40 else 1.96) * statistics.stdev(v) / math.sqrt(n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--picos", default=os.path.join(
        here, "..", "target", "x86_64-unknown-linux-musl", "release", "picos"))
    ap.add_argument("--runc", default=shutil.which("runc") or "/usr/bin/runc")
    ap.add_argument("--rounds", type=int, default=30)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("oci_startup.py: needs root (rootful podman)")
    for prog in ("podman", a.runc, a.picos, "/bin/busybox"):
        if not shutil.which(prog) and not os.path.exists(prog):
            sys.exit(f"oci_startup.py: {prog} not found")
    picos = os.path.abspath(a.picos)
    d = tempfile.mkdtemp(prefix="picos-oci-bench-")
    base = ["podman", "--root", f"{d}/storage", "--runroot", f"{d}/run",
            "--tmpdir", f"{d}/tmp", "--cgroup-manager", "cgroupfs",
            "--events-backend", "file"]
    try:
        root = f"{d}/root"
        os.makedirs(f"{root}/bin")
        shutil.copy("/bin/busybox", f"{root}/bin/busybox")
        os.symlink("busybox", f"{root}/bin/true")
        subprocess.run(["tar", "-C", root, "-cf", f"{d}/bb.tar", "."], check=True)
        subprocess.run(base + ["import", f"{d}/bb.tar", "localhost/picos-bench-bb"],
                       check=True, stdout=subprocess.DEVNULL)
        cmd = ["run", "--rm", "--network", "none"] + ULIMITS + ["localhost/picos-bench-bb", "true"]
        runtimes = {"runc": a.runc, "picos": picos}
        times = {k: [] for k in runtimes}
        # One of each first, untimed: podman's and the page cache's first-use costs.
        for rt in runtimes.values():
            subprocess.run(base + ["--runtime", rt] + cmd, check=True)
        for _ in range(a.rounds):
            for k, rt in runtimes.items():
                t = time.perf_counter()
                subprocess.run(base + ["--runtime", rt] + cmd, check=True)
                times[k].append((time.perf_counter() - t) * 1e3)
        print(f"podman run --rm IMAGE true, {a.rounds} rounds, alternating")
        for k, v in times.items():
            print(f"  {k:6s} {statistics.mean(v):8.1f} ± {ci95(v):5.1f} ms  "
                  f"(median {statistics.median(v):.1f})")
        diff = [p - r for p, r in zip(times["picos"], times["runc"])]
        print(f"  picos - runc: {statistics.mean(diff):+.1f} ± {ci95(diff):.1f} ms (paired)")
    finally:
        subprocess.run(base + ["system", "reset", "--force"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()

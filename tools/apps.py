#!/usr/bin/python3
"""Application benchmark: real servers and builds, natively and under picos.

Each row starts its own server on loopback (or runs its own build), drives
it with the usual client for a fixed time, and stops it. The configurations
(native, picos, and on request `picos run --profile`) take turns in every
round, in a rotating order, so that a busy machine slows all of them alike;
the report gives each configuration's mean with a 95% confidence interval
and its ratio to native (the geometric mean of the per-round ratios, with
its own interval), as `picos bench` does.

Rows (each skipped, with the reason, when its programs are not installed):

  redis-{set,get,lpush,incr}   redis-server + redis-benchmark, requests/s
  redis-aof-set                the same with --appendonly yes
  redis-io2-get                the same with --io-threads 2
  nginx-1k, nginx-1m           nginx (2 workers) + wrk, a 1 KiB / 1 MiB file,
                               requests/s
  pgbench                      PostgreSQL + pgbench -c 4 (select-only), tps
  pgbench-connect              the same with a new connection per
                               transaction (-C): a backend fork each time
  make-j2                      make -j2 of a generated C project, builds/s

Usage:
  tools/apps.py [--picos PATH] [--rounds N] [--seconds S] [--rows RE]
                [--profile] [--container] [--cgroup] [--variant NAME=ARGS]...
                [--json FILE]

docs/BENCHMARKS.md ("Applications") has the latest figures and the
command that produced them.
"""

import argparse
import glob
import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PICOS = os.path.join(ROOT, "target/x86_64-unknown-linux-musl/release/picos")
PG_BIN = "/usr/lib/postgresql/15/bin"

# Student's t, two-sided 95%, by degrees of freedom.
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31,
       9: 2.26, 10: 2.23, 15: 2.13, 20: 2.09, 30: 2.04}


def t95(df):
    if df <= 0:
        return float("nan")
    keys = sorted(k for k in T95 if k <= df)
    return T95[keys[-1]] if keys else T95[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the server ended before listening (status {proc.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout} s")


class Config:
    """How a server or build is started: natively or under picos."""

    def __init__(self, name, prefix):
        self.name = name
        self.prefix = prefix

    def cmd(self, argv, user=None):
        """The command that runs `argv` (as `user`, when given: we are root)."""
        return as_user(user, self.prefix + argv)

    def cleanup(self):
        """Called after each server or build has been stopped."""


# Debian 12's runc cannot raise the limits podman otherwise takes from the
# caller (docs/OCI.md); picos sets whatever the spec says, so both get these.
PODMAN_ULIMITS = ["--ulimit", "nofile=1024:20000", "--ulimit", "nproc=4096:4096"]


class Container(Config):
    """The same command in a podman container, with `runtime` as its OCI
    runtime (runc, or picos). The container sees the host's /usr and /etc
    (read-only) and the benchmark's work directory (read-write) and nothing
    else of the host's tree, shares the host's network namespace (the
    clients connect to 127.0.0.1 as they do to a native server), and gets
    podman's defaults otherwise (its own pid, IPC, mount and UTS
    namespaces, cgroup, capabilities; with picos, the sandbox derived from
    the spec: docs/OCI.md)."""

    def __init__(self, name, runtime, podman, rootfs, work):
        super().__init__(name, [])
        self.runtime = runtime
        self.podman = podman
        self.rootfs = rootfs
        self.work = work
        self.names = []

    def cmd(self, argv, user=None):
        cname = f"picos-apps-{os.getpid()}-{len(self.names)}"
        self.names.append(cname)
        return (self.podman + ["--runtime", self.runtime, "run", "--rm", "--name", cname,
                               "--network", "host", "--shm-size", "256m"]
                + PODMAN_ULIMITS
                + ["-v", "/usr:/usr:ro", "-v", "/etc:/etc:ro",
                   "-v", f"{self.work}:{self.work}", "-w", "/"]
                + (["--user", user] if user else [])
                # --rootfs: the first argument is a root directory, not an image.
                + ["--rootfs", self.rootfs] + argv)

    def cleanup(self):
        # `podman run --rm` removes its container when the server ends; one
        # left behind (a server that did not stop in time) is removed here.
        while self.names:
            subprocess.run(self.podman + ["rm", "-f", "-t", "0", self.names.pop()],
                           capture_output=True)


# Moves the shell into cgroup NAME/ctr of every hierarchy (cgroup v1: each
# controller's; v2: the unified one, with cpu, memory, pids and io enabled
# where the root delegates them), two levels down as podman's cgroupfs
# manager puts a container (libpod_parent/libpod-ID), then runs the command.
CGROUP_SCRIPT = r"""
name=$1; shift
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
  mkdir -p "/sys/fs/cgroup/$name/ctr" || exit 1
  for c in cpu memory pids io; do
    echo "+$c" > "/sys/fs/cgroup/$name/cgroup.subtree_control" 2>/dev/null
  done
  echo $$ > "/sys/fs/cgroup/$name/ctr/cgroup.procs" || exit 1
else
  for h in /sys/fs/cgroup/*/; do
    case $h in */systemd/|*/unified/) continue;; esac
    [ -e "${h}cgroup.procs" ] || continue
    mkdir -p "$h$name/ctr" || exit 1
    if [ -e "${h}cpuset.cpus" ]; then
      for f in cpuset.cpus cpuset.mems; do
        cat "$h$f" > "$h$name/$f" && cat "$h$f" > "$h$name/ctr/$f" || exit 1
      done
    fi
    echo $$ > "$h$name/ctr/cgroup.procs" || exit 1
  done
fi
exec "$@"
"""


class InCgroup(Config):
    """A configuration (natively or under picos) run in a cgroup of its own
    two levels down in every hierarchy, as a container's is, but without a
    container: what the cgroup alone costs a row (`--cgroup`)."""

    def __init__(self, name, inner):
        super().__init__(name, [])
        self.inner = inner
        self.cgroup = f"picos-apps-{os.getpid()}-{name.replace(' ', '-')}"

    def cmd(self, argv, user=None):
        # The move needs root: runuser comes after it.
        return (["/bin/sh", "-c", CGROUP_SCRIPT, "sh", self.cgroup]
                + as_user(user, self.inner + argv))

    def cleanup(self):
        # Called once the server has stopped: the cgroups are empty.
        for d in glob.glob(f"/sys/fs/cgroup/{self.cgroup}") + glob.glob(
                f"/sys/fs/cgroup/*/{self.cgroup}"):
            for sub in (f"{d}/ctr", d):
                try:
                    os.rmdir(sub)
                except OSError:
                    pass


def container_rootfs(d):
    """An empty root for --rootfs: the mount points, and the merged-/usr
    links (Debian's /bin, /lib... point into /usr, which is bound from the
    host)."""
    for sub in ("usr", "etc", "tmp", "proc", "sys", "dev", "run", "var/tmp", "root"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    os.chmod(os.path.join(d, "tmp"), 0o1777)
    for link in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        if os.path.islink(f"/{link}"):
            os.symlink(os.readlink(f"/{link}"), os.path.join(d, link))
    return d


def stop(proc, timeout=10.0):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def whole(seconds):
    """`seconds` as the whole number wrk and pgbench take (at least 1)."""
    return max(1, round(seconds))


def run_client(argv, timeout, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if r.returncode != 0:
        why = (r.stderr.strip() or r.stdout.strip())[-400:]
        raise RuntimeError(f"{argv[0]} failed ({r.returncode}): {why}")
    return r.stdout


# --------------------------------------------------------------------------
# Rows. Each is a function (config, work directory, seconds) -> a value
# (higher is better), plus what it needs installed.

def redis_row(test, extra):
    def measure(cfg, work, seconds):
        port = free_port()
        # A fresh directory each time: an append-only file left by the last
        # run would be loaded first ("LOADING" errors).
        data = tempfile.mkdtemp(dir=work)
        log = open(os.path.join(work, "redis.log"), "w")
        srv = subprocess.Popen(
            cfg.cmd(["/usr/bin/redis-server", "--port", str(port), "--bind", "127.0.0.1",
                     "--save", "", "--dir", data, "--protected-mode", "no"] + extra),
            stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_port(port, srv)
            # A request count that lasts about `seconds` here (~50k/s).
            n = max(10000, int(seconds * 40000))
            out = run_client(["/usr/bin/redis-benchmark", "-p", str(port), "-q", "--csv",
                              "-c", "20", "-n", str(n), "-t", test],
                             timeout=seconds * 20 + 30)
            for line in out.splitlines():
                f = [x.strip('"') for x in line.split(",")]
                if len(f) >= 2 and f[0].lower().startswith(test.lower()):
                    return float(f[1])
            raise RuntimeError(f"no {test} line in redis-benchmark's output: {out[-300:]}")
        finally:
            stop(srv)
            cfg.cleanup()
            log.close()
            shutil.rmtree(data, ignore_errors=True)
    return measure


def nginx_row(size):
    def measure(cfg, work, seconds):
        port = free_port()
        root = os.path.join(work, "www")
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, "f"), "wb") as f:
            f.write(os.urandom(size))
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""worker_processes 2;
daemon off;
master_process on;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 256; }}
http {{
  access_log off;
  sendfile on;
  client_body_temp_path {work}/body;
  proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fastcgi;
  uwsgi_temp_path {work}/uwsgi;
  scgi_temp_path {work}/scgi;
  server {{ listen 127.0.0.1:{port}; root {root}; }}
}}
""")
        srv = subprocess.Popen(cfg.cmd(["/usr/sbin/nginx", "-c", conf, "-p", work]),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port, srv)
            out = run_client(["/usr/bin/wrk", "-t", "2", "-c", "16", "-d", f"{whole(seconds)}s",
                              f"http://127.0.0.1:{port}/f"], timeout=seconds + 30)
            m = re.search(r"Requests/sec:\s*([0-9.]+)", out)
            if not m:
                raise RuntimeError(f"no Requests/sec in wrk's output: {out[-300:]}")
            return float(m.group(1))
        finally:
            stop(srv)
            cfg.cleanup()
    return measure


def as_user(user, argv):
    """`argv` run as `user` (we are root), or as it is if `user` is None."""
    return ["/usr/sbin/runuser", "-u", user, "--"] + argv if user else argv


def postgres_user():
    # PostgreSQL refuses to run as root: as root, the server runs as the
    # postgres user (its cluster is that user's).
    return "postgres" if os.geteuid() == 0 else None


def pgbench_row(connect):
    def measure(cfg, work, seconds):
        data = os.path.join(work, "pg")
        if not os.path.isdir(data):
            os.makedirs(data, mode=0o700)
            if os.geteuid() == 0:
                # PostgreSQL refuses to run as root: its cluster is the
                # postgres user's.
                shutil.chown(data, "postgres", "postgres")
            run_client(as_user(postgres_user(),
                               [f"{PG_BIN}/initdb", "-D", data, "-A", "trust", "-U", "bench",
                                "--no-sync"]), timeout=120)
        port = free_port()
        srv = subprocess.Popen(
            cfg.cmd([f"{PG_BIN}/postgres", "-D", data, "-p", str(port),
                     "-k", data, "-c", "listen_addresses=127.0.0.1",
                     "-c", "fsync=off", "-c", "shared_buffers=64MB"], user=postgres_user()),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port, srv, timeout=60)
            env = dict(os.environ, PGHOST="127.0.0.1", PGPORT=str(port), PGUSER="bench")
            if not os.path.exists(os.path.join(work, "pg.initialised")):
                run_client(["/usr/bin/pgbench", "-i", "-s", "2", "-q", "postgres"],
                           timeout=120, env=env)
                open(os.path.join(work, "pg.initialised"), "w").close()
            argv = ["/usr/bin/pgbench", "-S", "-c", "4", "-j", "2", "-T", str(whole(seconds)),
                    "postgres"]
            if connect:
                argv.insert(1, "-C")
            out = run_client(argv, timeout=seconds + 60, env=env)
            m = re.search(r"tps = ([0-9.]+)", out)
            if not m:
                raise RuntimeError(f"no tps in pgbench's output: {out[-300:]}")
            return float(m.group(1))
        finally:
            stop(srv, timeout=30)
            cfg.cleanup()
    return measure


def timed_loop(cfg, script, args, seconds, what):
    """Runs `script` (a /bin/sh loop that times itself: its first argument
    is how long to run, in ns; it prints how many rounds it made and in how
    many ns) under configuration `cfg`; returns rounds per second."""
    try:
        r = subprocess.run(cfg.cmd(["/bin/sh", script, str(int(seconds * 1e9))] + args),
                           capture_output=True, text=True, timeout=seconds * 10 + 300)
    finally:
        cfg.cleanup()
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed ({r.returncode}): {(r.stderr or r.stdout)[-400:]}")
    try:
        rounds, ns = (int(x) for x in r.stdout.split()[-2:])
    except ValueError:
        raise RuntimeError(f"no round count in {r.stdout[-200:]!r}") from None
    return rounds / (ns / 1e9)


def make_row(cfg, work, seconds):
    src = os.path.join(work, "proj")
    if not os.path.isdir(src):
        os.makedirs(src)
        for i in range(24):
            with open(os.path.join(src, f"f{i}.c"), "w") as f:
                f.write(f"#include <stdio.h>\n#include <string.h>\n"
                        f"int f{i}(int x) {{ char b[64]; snprintf(b, sizeof b, \"%d\", x);"
                        f" return (int)strlen(b) + {i}; }}\n")
        with open(os.path.join(src, "main.c"), "w") as f:
            f.write("".join(f"int f{i}(int);\n" for i in range(24)))
            f.write("int main(void) { int s = 0;" +
                    "".join(f" s += f{i}({i});" for i in range(24)) + " return s == 0; }\n")
        objs = " ".join(f"f{i}.o" for i in range(24))
        with open(os.path.join(src, "Makefile"), "w") as f:
            f.write(f"prog: main.o {objs}\n\tgcc -o $@ $^\n%.o: %.c\n\tgcc -O1 -c $< -o $@\n"
                    f"clean:\n\trm -f prog *.o\n")
    # The build loop runs under the configuration, timed from inside, so
    # that what is measured is builds (make, gcc, as, ld: a fork and exec
    # each) and not how long picos or a container takes to start.
    script = os.path.join(work, "builds.sh")
    with open(script, "w") as f:
        f.write("""start=$(date +%s%N); n=0
while :; do
  make -s -C "$2" clean >/dev/null || exit 1
  make -s -j2 -C "$2" || exit 1
  n=$((n + 1)); now=$(date +%s%N)
  [ $((now - start)) -ge "$1" ] && break
done
echo "$n $((now - start))"
""")
    return timed_loop(cfg, script, [src], seconds, "make")


def shell_row(cfg, work, seconds):
    """A shell script of small commands (as configure scripts, git hooks and
    build glue are): per loop, four programs run by fork and exec (basename,
    tr, wc, true) and three subshells, under /bin/sh; timed from inside, as
    make-j2 is."""
    script = os.path.join(work, "shell.sh")
    with open(script, "w") as f:
        f.write("""start=$(date +%s%N); n=0
while :; do
  for i in 1 2 3 4 5 6 7 8 9 10; do
    b=$(basename /usr/lib/x86_64-linux-gnu/libc.so.6)
    c=$(echo "$b" | tr a-z A-Z)
    d=$(printf '%s\\n' a b c | wc -l)
    [ "$c" = LIBC.SO.6 ] && [ "$d" = 3 ] || exit 1
    /bin/true || exit 1
  done
  n=$((n + 10)); now=$(date +%s%N)
  [ $((now - start)) -ge "$1" ] && break
done
echo "$n $((now - start))"
""")
    return timed_loop(cfg, script, [], seconds, "shell loop")


ROWS = [
    ("redis-set", redis_row("SET", []), ["/usr/bin/redis-server", "/usr/bin/redis-benchmark"]),
    ("redis-get", redis_row("GET", []), ["/usr/bin/redis-server", "/usr/bin/redis-benchmark"]),
    ("redis-lpush", redis_row("LPUSH", []), ["/usr/bin/redis-server", "/usr/bin/redis-benchmark"]),
    ("redis-incr", redis_row("INCR", []), ["/usr/bin/redis-server", "/usr/bin/redis-benchmark"]),
    ("redis-aof-set", redis_row("SET", ["--appendonly", "yes", "--appendfsync", "everysec"]),
     ["/usr/bin/redis-server", "/usr/bin/redis-benchmark"]),
    ("redis-io2-get", redis_row("GET", ["--io-threads", "2", "--io-threads-do-reads", "yes"]),
     ["/usr/bin/redis-server", "/usr/bin/redis-benchmark"]),
    ("nginx-1k", nginx_row(1024), ["/usr/sbin/nginx", "/usr/bin/wrk"]),
    ("nginx-1m", nginx_row(1 << 20), ["/usr/sbin/nginx", "/usr/bin/wrk"]),
    ("pgbench", pgbench_row(False), [f"{PG_BIN}/postgres", "/usr/bin/pgbench"]),
    ("pgbench-connect", pgbench_row(True), [f"{PG_BIN}/postgres", "/usr/bin/pgbench"]),
    ("make-j2", make_row, ["/usr/bin/make", "/usr/bin/gcc"]),
    ("shell", shell_row, ["/bin/sh", "/usr/bin/basename", "/usr/bin/tr", "/usr/bin/wc"]),
]

UNITS = {"make-j2": "builds/s", "shell": "loops/s", "pgbench": "tps", "pgbench-connect": "tps"}


def summary(values):
    n = len(values)
    m = statistics.fmean(values)
    if n < 2:
        return m, float("nan")
    return m, t95(n - 1) * statistics.stdev(values) / math.sqrt(n)


def ratio_summary(native, other):
    """Geometric mean of the per-round ratios other/native, with a 95% CI."""
    logs = [math.log(o / n) for n, o in zip(native, other) if n > 0 and o > 0]
    if not logs:
        return float("nan"), float("nan"), float("nan")
    m = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(m), float("nan"), float("nan")
    h = t95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--picos", default=DEFAULT_PICOS)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    ap.add_argument("--rows", default="", help="regular expression over row names")
    ap.add_argument("--profile", action="store_true",
                    help="also measure `picos run --profile` (its overhead)")
    ap.add_argument("--container", action="store_true",
                    help="also run each row in a podman container, with runc and with picos "
                         "as its runtime (needs root, podman and runc)")
    ap.add_argument("--runc", default="runc", help="the runc of --container")
    ap.add_argument("--cgroup", action="store_true",
                    help="also run natively and under picos each in a cgroup two levels down "
                         "in every hierarchy, as a container's (needs root): what the cgroup "
                         "alone costs each row")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="also measure `picos run ARGS --` as configuration NAME (ARGS split "
                         "as a shell would; e.g. 'picos sb=-m sandbox.toml'); repeatable")
    ap.add_argument("--json", help="write every value as JSON")
    a = ap.parse_args()
    variants = []
    for v in a.variant:
        name, sep, args = v.partition("=")
        if not sep or not name.strip():
            sys.exit(f"apps.py: --variant {v!r}: expected NAME=ARGS (e.g. 'picos sb=-m sb.toml')")
        try:
            variants.append((name.strip(), shlex.split(args)))
        except ValueError as e:
            sys.exit(f"apps.py: --variant {v!r}: {e}")
    if not os.access(a.picos, os.X_OK):
        sys.exit(f"apps.py: {a.picos} is not an executable picos (build it: cargo build --release)")
    picos = os.path.abspath(a.picos)
    if a.cgroup and os.geteuid() != 0:
        sys.exit("apps.py: --cgroup needs root (it makes cgroups)")
    if a.container:
        if os.geteuid() != 0:
            sys.exit("apps.py: --container needs root (rootful podman)")
        for prog in ("podman", a.runc):
            if not shutil.which(prog):
                sys.exit(f"apps.py: --container needs {prog} (Debian: apt-get install podman runc)")
    with tempfile.TemporaryDirectory(prefix="picos-apps-") as tmp:
        os.chmod(tmp, 0o755)
        configs = [Config("native", []), Config("picos", [picos, "run", "--"])]
        if a.profile:
            configs.append(Config("picos --profile", [picos, "run", "--profile", "--"]))
        for name, args in variants:
            configs.append(Config(name, [picos, "run"] + args + ["--"]))
        if a.cgroup:
            configs.append(InCgroup("native cg", []))
            configs.append(InCgroup("picos cg", [picos, "run", "--"]))
        podman = None
        if a.container:
            # A podman storage of its own (nothing is pulled: --rootfs).
            podman = ["podman", "--root", f"{tmp}/.podman/storage",
                      "--runroot", f"{tmp}/.podman/run", "--tmpdir", f"{tmp}/.podman/tmp",
                      "--cgroup-manager", "cgroupfs", "--events-backend", "file"]
            rootfs = container_rootfs(f"{tmp}/.podman/rootfs")
            work = f"{tmp}/rows"
            os.makedirs(work)
            configs.append(Container("runc ctr", shutil.which(a.runc), podman, rootfs, work))
            configs.append(Container("picos ctr", picos, podman, rootfs, work))
        try:
            code = measure_all(a, configs, f"{tmp}/rows")
        finally:
            if podman:
                subprocess.run(podman + ["system", "reset", "--force"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sys.exit(code)


def measure_all(a, configs, tmp):
    rows = []
    for name, fn, needs in ROWS:
        if a.rows and not re.search(a.rows, name):
            continue
        missing = [p for p in needs if not os.access(p, os.X_OK)]
        if missing:
            print(f"SKIP {name}: not installed: {', '.join(missing)}", file=sys.stderr)
            continue
        rows.append((name, fn))
    results = {name: {c.name: [] for c in configs} for name, _ in rows}
    errors = {}
    t_start = time.monotonic()
    for r in range(a.rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for name, fn in rows:
            if name in errors:
                continue
            for cfg in order:
                work = os.path.join(tmp, name, cfg.name.replace(" ", "_"))
                os.makedirs(work, exist_ok=True)
                try:
                    v = fn(cfg, work, a.seconds)
                except Exception as e:  # noqa: BLE001 - reported, row dropped
                    errors[name] = f"{cfg.name}: {e}"
                    print(f"FAIL {name}: {errors[name]}", file=sys.stderr)
                    break
                results[name][cfg.name].append(v)
                print(f"round {r + 1}/{a.rounds} {name} {cfg.name}: {v:.1f}", file=sys.stderr)
    took = time.monotonic() - t_start
    # Ratios: every configuration to native; a container with picos and each
    # variant to picos without them (what they cost picos).
    names = [c.name for c in configs]
    pairs = [(n, "native") for n in names[1:]]
    pairs += [(n, "picos") for n in names[2:] if n.startswith("picos ") and n != "picos --profile"]
    # And picos in a container to runc in the same kind of container: what
    # picos costs there beyond what the container costs any runtime.
    if "picos ctr" in names and "runc ctr" in names:
        pairs.append(("picos ctr", "runc ctr"))
    head = ["row", "unit"] + names + [f"{x} / {y}" for x, y in pairs]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, _ in rows:
        if name in errors:
            print(f"| {name} | | failed: {errors[name]} |")
            continue
        cells = [name, UNITS.get(name, "requests/s")]
        for c in configs:
            m, h = summary(results[name][c.name])
            cells.append(f"{m:.1f} ± {h:.1f}")
        for x, y in pairs:
            g, lo, hi = ratio_summary(results[name][y], results[name][x])
            cells.append(f"{g:.3f} [{lo:.3f}, {hi:.3f}]")
        print("| " + " | ".join(cells) + " |")
    load = os.getloadavg()
    print(f"\n{a.rounds} rounds of {a.seconds:g} s per cell, configurations rotating; mean ± 95% CI; "
          f"ratio = geometric mean of per-round ratios (higher is better for picos), 95% CI. "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
          f"{load[0]:.2f}; {took:.0f} s.")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": results, "errors": errors, "rounds": a.rounds,
                       "seconds": a.seconds}, f, indent=1)
    return 1 if errors else 0


if __name__ == "__main__":
    main()

"""Deterministic Python workload for the picos integration tests.

Run with Debian's /usr/bin/python3. Every line printed must be the same
natively and under picos.
"""
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys
import threading


def section(name):
    print(f"== {name}", flush=True)


# --- json ---------------------------------------------------------------
section("json")
data = {
    "name": "picos",
    "version": [0, 1, 0],
    "nested": {"list": [1, 2.5, None, True, False, "x" * 3], "empty": {}, "unicode": "h\u00e9llo \u2603"},
    "matrix": [[i * j for j in range(5)] for i in range(5)],
}
text = json.dumps(data, sort_keys=True)
back = json.loads(text)
print(text)
print("round trip equal:", back == data)
pretty = json.dumps(back, indent=2, sort_keys=True, ensure_ascii=False)
print("pretty lines:", len(pretty.splitlines()))
print("sha256 of json:", hashlib.sha256(text.encode()).hexdigest())

# --- re -----------------------------------------------------------------
section("re")
log = """2024-01-02 10:11:12 INFO  server started on port 8080
2024-01-02 10:11:13 WARN  disk usage at 91%
2024-01-02 10:12:00 ERROR connection from 10.0.0.7 refused
2024-01-03 00:00:01 INFO  user alice@example.com logged in
2024-01-03 00:05:09 ERROR connection from 192.168.1.20 refused
"""
levels = re.findall(r"^\S+ \S+ (\w+)", log, re.M)
print("levels:", levels)
ips = re.findall(r"\b(?:\d{1,3}\.){3}\d{1,3}\b", log)
print("ips:", ips)
emails = re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", log)
print("emails:", emails)
dates = sorted({m.group("d") for m in re.finditer(r"(?P<d>\d{4}-\d{2}-\d{2})", log)})
print("dates:", dates)
print("sub:", re.sub(r"(\d+)%", lambda m: f"<{int(m.group(1)) * 2}>", "a 10% b 25%"))
print("split:", re.split(r"[,;\s]+", "a, b;c  d,,e"))
print("fullmatch:", bool(re.fullmatch(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", "Hello Big World")))

# --- threading ------------------------------------------------------------
section("threading")
counter = 0
lock = threading.Lock()


def bump(n):
    global counter
    for _ in range(n):
        with lock:
            counter += 1


threads = [threading.Thread(target=bump, args=(10_000,)) for _ in range(10)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("counter:", counter)

event = threading.Event()
results = []


def waiter(i):
    event.wait()
    with lock:
        results.append(i * i)


ws = [threading.Thread(target=waiter, args=(i,)) for i in range(8)]
for t in ws:
    t.start()
event.set()
for t in ws:
    t.join()
print("event results:", sorted(results))

# --- hashlib --------------------------------------------------------------
section("hashlib")
print("sha256(''):", hashlib.sha256(b"").hexdigest())
print("sha256(abc):", hashlib.sha256(b"abc").hexdigest())
print("md5(abc):", hashlib.md5(b"abc").hexdigest())
print("sha1(abc):", hashlib.sha1(b"abc").hexdigest())
big = bytes(range(256)) * 4096  # 1 MiB
print("sha256(1MiB):", hashlib.sha256(big).hexdigest())
print("md5(1MiB):", hashlib.md5(big).hexdigest())
assert hashlib.sha256(b"abc").hexdigest() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
assert hashlib.md5(b"abc").hexdigest() == "900150983cd24fb0d6963f7d28e17f72"

# --- ThreadPoolExecutor ---------------------------------------------------
section("thread pool")


def work(n):
    # A small CPU-bound function: digits of a hash chain plus a prime count.
    h = str(n).encode()
    for _ in range(50):
        h = hashlib.sha256(h).digest()
    primes = sum(1 for k in range(2, 200 + n % 100) if all(k % d for d in range(2, int(k ** 0.5) + 1)))
    return n, h.hex()[:8], primes


with concurrent.futures.ThreadPoolExecutor(max_workers=50) as ex:
    out = list(ex.map(work, range(500)))
print("items:", len(out))
print("first:", out[:3])
print("last:", out[-2:])
print("prime total:", sum(p for _, _, p in out))
print("chain digest:", hashlib.sha256("".join(h for _, h, _ in out).encode()).hexdigest())

with concurrent.futures.ThreadPoolExecutor(max_workers=50) as ex:
    futs = {ex.submit(pow, i, 3, 1_000_003): i for i in range(200)}
    cubes = {futs[f]: f.result() for f in concurrent.futures.as_completed(futs)}
print("cubes sum:", sum(cubes.values()))

# --- subprocess -----------------------------------------------------------
section("subprocess")
r = subprocess.run(["/bin/echo", "hi"], capture_output=True)
print("echo:", r.returncode, r.stdout)
r = subprocess.run(["/bin/sh", "-c", "echo from-sh; exit 7"], capture_output=True, text=True)
print("sh:", r.returncode, repr(r.stdout))
r = subprocess.run(["/bin/cat"], input=b"piped through cat\n", capture_output=True)
print("cat:", r.returncode, r.stdout)
sys.stdout.flush()
r = subprocess.run(["/bin/echo", "inherited stdout"])
print("inherited rc:", r.returncode)

# --- fork / waitpid -------------------------------------------------------
section("fork")
sys.stdout.flush()
rfd, wfd = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(rfd)
    os.write(wfd, f"child says {sum(range(1000))}".encode())
    os.close(wfd)
    os._exit(5)
os.close(wfd)
msg = b""
while True:
    chunk = os.read(rfd, 4096)
    if not chunk:
        break
    msg += chunk
os.close(rfd)
wpid, status = os.waitpid(pid, 0)
print("waitpid same pid:", wpid == pid)
print("child exited:", os.WIFEXITED(status), "code:", os.WEXITSTATUS(status))
print("pipe message:", msg.decode())

pids = []
for i in range(4):
    p = os.fork()
    if p == 0:
        os._exit(10 + i)
    pids.append(p)
codes = sorted(os.WEXITSTATUS(os.waitpid(p, 0)[1]) for p in pids)
print("children codes:", codes)

section("done")
sys.exit(3)

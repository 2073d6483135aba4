"""Benchmarks of the Python package against the Go API, in one run.

    make bench-python          (PYTHONPATH=out/python python3 tests/python/bench.py)

Runs the Go halves (tests/pybench, a `go test -bench` binary) and the
same workloads from Python, taking turns BENCH_COUNT times (default 3),
keeps the best of each, and prints a markdown table of wall-clock and CPU
ns per point (or key) and the Python/Go ratios (1.0: as fast as Go). Sizes: BENCH_POINTS (per-point
tracking, puts and gets; default 200,000), BENCH_BATCHED (batched
tracking and write batches; default 1,000,000), BENCH_ITER (iteration;
default 1,000,000).
"""

import array
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time

import kv0
import kv0.tracking as tracking

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
POINTS = int(os.environ.get("BENCH_POINTS", 200_000))
BATCHED = int(os.environ.get("BENCH_BATCHED", 1_000_000))
ITER = int(os.environ.get("BENCH_ITER", 1_000_000))
COUNT = int(os.environ.get("BENCH_COUNT", 3))
NAMES = [f"metric/{i}" for i in range(100)]
VALUE = bytes(100)


class Timer:
    """Wall and CPU time (every thread of the process, the engine's
    included) of the timed parts; CPU time is far less sensitive to other
    processes' load than the wall clock."""

    def __init__(self):
        self.t, self.c = time.perf_counter(), time.process_time()

    def per(self, n):
        return (time.perf_counter() - self.t) / n, (time.process_time() - self.c) / n


def key(i):
    return b"key" + i.to_bytes(8, "big")


def fresh(sub):
    d = tempfile.mkdtemp(prefix="kv0-pybench-")
    os.environ["KV0_WAL_DIR"] = os.path.join(d, "wal")
    return os.path.join(d, sub)


def bench_track():
    repo = tracking.Repo(fresh("repo"))
    t = Timer()
    run = repo.start_run(name="bench")
    track = run.track
    for i in range(POINTS):
        track(i * 0.5, NAMES[i % 100])
    repo.close()
    return t.per(POINTS)


def bench_track_batched():
    repo = tracking.Repo(fresh("repo"))
    values = array.array("d", [i * 0.25 for i in range(1000)])
    steps = [array.array("q", range(b * 1000, b * 1000 + 1000)) for b in range(BATCHED // 1000 // 100 + 1)]
    t = Timer()
    run = repo.start_run(name="bench")
    for j in range(BATCHED // 1000):
        run.track_many(NAMES[j % 100], values, steps=steps[j // 100])
    repo.close()
    return t.per(BATCHED)


def bench_put():
    db = kv0.DB(fresh("db"))
    keys = [key(i) for i in range(POINTS)]
    t = Timer()
    put = db.put
    for k in keys:
        put(k, VALUE)
    db.close()
    return t.per(POINTS)


def bench_write_batch():
    db = kv0.DB(fresh("db"))
    t = Timer()
    for j in range(BATCHED // 1000):
        wb = kv0.WriteBatch()
        for i in range(j * 1000, j * 1000 + 1000):
            wb.put(key(i), VALUE)
        db.write(wb)
    db.close()
    return t.per(BATCHED)


def _filled(n):
    db = kv0.DB(fresh("db"))
    for j in range(0, n, 1000):
        wb = kv0.WriteBatch()
        for i in range(j, min(j + 1000, n)):
            wb.put(key(i), VALUE)
        db.write(wb)
    db.flush()
    return db


def bench_get():
    db = _filled(POINTS)
    rng = random.Random(1)
    keys = [key(rng.randrange(POINTS)) for _ in range(POINTS)]
    get = db.get
    t = Timer()
    for k in keys:
        if get(k) is None:
            raise AssertionError("missing key")
    res = t.per(POINTS)
    db.close()
    return res


def bench_iterate():
    db = _filled(ITER)
    t = Timer()
    it = db.iteritems()
    it.seek_to_first()
    n = 0
    for _ in it:
        n += 1
    res = t.per(ITER)
    assert n == ITER, n
    db.close()
    return res


CASES = [
    ("Track", "Run.track, one point per call (100 series)", bench_track, POINTS),
    ("TrackBatched", "Run.track_many, batches of 1,000 points with steps", bench_track_batched, BATCHED),
    ("Put", "DB.put, one 100-byte value per call", bench_put, POINTS),
    ("WriteBatch", "DB.write(WriteBatch) of 1,000 puts", bench_write_batch, BATCHED),
    ("Get", "DB.get of random existing keys, one per call", bench_get, POINTS),
    ("Iterate", "iteritems() over every key (forward)", bench_iterate, ITER),
]


def go_command():
    subprocess.run(["go", "test", "-c", "-o", os.path.join(tempfile.gettempdir(), "kv0-pybench.test"),
                    "./tests/pybench"], cwd=ROOT, check=True)
    return [os.path.join(tempfile.gettempdir(), "kv0-pybench.test"), "-test.run", "^$", "-test.bench", ".",
            "-test.benchtime", "1x", f"-pybench.points={POINTS}", f"-pybench.batched={BATCHED}",
            f"-pybench.keys={POINTS}", f"-pybench.iter={ITER}"]


def go_once(cmd, best, best_cpu):
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"go benchmarks failed:\n{out.stdout}\n{out.stderr}")
    for m in re.finditer(r"^Benchmark(\w+?)(?:-\d+)?\s+\d+\s+\d+ ns/op(.*)$", out.stdout, re.M):
        name, rest = m.group(1), m.group(2)
        wall = re.search(r"([\d.]+) ns/point", rest)
        cpu = re.search(r"([\d.]+) cpu-ns/point", rest)
        if wall:
            best[name] = min(float(wall.group(1)), best.get(name, float("inf")))
        if cpu:
            best_cpu[name] = min(float(cpu.group(1)), best_cpu.get(name, float("inf")))


def main():
    # Go and Python take turns, so that both see the same machine load.
    cmd = go_command()
    go, go_cpu, py, py_cpu = {}, {}, {}, {}
    for _ in range(COUNT):
        go_once(cmd, go, go_cpu)
        for name, _, fn, _ in CASES:
            wall, cpu = fn()
            py[name] = min(wall * 1e9, py.get(name, float("inf")))
            py_cpu[name] = min(cpu * 1e9, py_cpu.get(name, float("inf")))
    go_cmd = "go test -c ./tests/pybench && ./pybench.test " + " ".join(cmd[1:])
    print(f"Command: `make bench-python` (Go half: `{go_cmd}`); "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d', time.gmtime())}, "
          f"best of {COUNT}, load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| workload | points/keys | Go ns each | Python ns each | Python/Go rate | Go CPU ns | Python CPU ns | "
          "Python/Go (CPU) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")

    def ratio(g, p):
        return f"{g / p:.2f}×" if g and p else "?"

    for name, desc, _, n in CASES:
        g, p, gc, pc = go.get(name, 0), py[name], go_cpu.get(name, 0), py_cpu[name]
        print(f"| {desc} | {n:,} | {g:,.0f} | {p:,.0f} | {ratio(g, p)} | {gc:,.0f} | {pc:,.0f} | {ratio(gc, pc)} |")


if __name__ == "__main__":
    main()

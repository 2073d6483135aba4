"""Processes: a training script killed with SIGKILL and reopened, threads
sharing handles, os.fork() with open handles, the atexit flush, two
processes racing to resume one run."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import kv0
import kv0.tracking as tracking
from kv0 import errors

from conftest import PYOUT, run_python

TRAIN = r"""
import sys, kv0, kv0.tracking as tracking
repo_path, db_path = sys.argv[1], sys.argv[2]
if sys.argv[3:] == ["wal-only"]:  # nothing reaches Lance: every point is only in the WAL
    repo = tracking.Repo(repo_path, flush_rows=10**9, flush_interval=-1, wal_sync="batch")
else:
    repo = tracking.Repo(repo_path, flush_rows=3000, flush_interval=0.05, wal_sync="batch")
db = kv0.DB(db_path, flush_interval=0.05)
run = repo.start_run(name="killed")
print("run", run.id, flush=True)
step = 0
while True:
    for _ in range(700):
        run.track(float(step), "loss")
        db.put(b"k%09d" % step, b"%d" % step)
        step += 1
    run.track_many("batched", [float(step)] * 10)
    repo.flush_wal()
    db.flush_wal()
    print("acked", step, flush=True)
"""


def test_sigkill_mid_training(tmp_path, cli):
    repo_path, db_path = str(tmp_path / "repo"), str(tmp_path / "db")
    env = dict(os.environ, PYTHONPATH=PYOUT)
    p = subprocess.Popen([sys.executable, "-c", TRAIN, repo_path, db_path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    acked = 0
    run_id = None
    try:
        for line in p.stdout:
            word, val = line.split()
            if word == "run":
                run_id = val
            else:
                acked = int(val)
                if acked >= 30 * 700:
                    break
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
        err = p.stderr.read()
    assert p.returncode == -signal.SIGKILL, err
    assert run_id and acked >= 30 * 700, err
    # A writable open replays the dead writer's WAL.
    with tracking.Repo(repo_path) as repo:
        series = {s["name"]: s["series_id"] for s in repo.all_series(run_id)}
        loss = repo.read_many([series["loss"]])[0]
        steps = list(loss["steps"])
        assert len(steps) >= acked, (len(steps), acked)
        assert steps == list(range(len(steps)))
        assert list(loss["values"]) == [float(s) for s in steps]
        stats = repo.series_stats([series["loss"]])[series["loss"]]
        assert stats["count"] == len(steps)
        repo.optimize()
    # None twice: the stored rows of the series, counted by the CLI.
    out = subprocess.run([cli, "lance", "cat", os.path.join(repo_path, "metrics.lance"), "--where",
                          f"series_id = {series['loss']}", "--columns", "step"],
                         capture_output=True, text=True, check=True).stdout
    rows = [json.loads(line)["step"] for line in out.splitlines()]
    assert sorted(rows) == list(range(len(steps))), "a point is stored twice or missing"
    with kv0.DB(db_path) as db:
        it = db.iterkeys()
        it.seek_to_first()
        keys = list(it)
    assert len(keys) >= acked
    assert keys == [b"k%09d" % i for i in range(len(keys))]


def test_threads_share_handles(tmp_path):
    repo = tracking.Repo(str(tmp_path / "repo"), flush_rows=2000)
    db = kv0.DB(str(tmp_path / "db"))
    errs = []
    ids = [None] * 8

    def work(t):
        try:
            run = repo.start_run(name=f"t{t}")
            ids[t] = run.id
            for i in range(3000):
                run.track(float(i), "loss", context={"thread": t})
                if i % 10 == 0:
                    db.put(b"t%d-%05d" % (t, i), b"%d" % i)
                    if db.get(b"t%d-%05d" % (t, i)) != b"%d" % i:
                        raise AssertionError(f"thread {t} lost its put {i}")
                if i % 1000 == 999:
                    run.track_many("batched", [float(i)] * 100)
                    repo.flush() if t % 2 else db.flush()
            run.finish()
        except Exception as e:  # reported below
            errs.append(e)

    stop = threading.Event()

    def scan():
        # A reader iterating both ways while the writers run: keys come in
        # order, never twice.
        try:
            while not stop.is_set():
                it = db.iterkeys()
                it.seek_to_first()
                keys = list(it)
                assert keys == sorted(set(keys))
                it.seek_to_last()
                back = list(reversed(it))
                assert back == sorted(set(back), reverse=True)
                repo.runs()
        except Exception as e:  # reported below
            errs.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    reader = threading.Thread(target=scan)
    reader.start()
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    stop.set()
    reader.join(timeout=60)
    assert not any(th.is_alive() for th in threads + [reader]), "deadlock: threads still running"
    assert not errs, errs
    for t, rid in enumerate(ids):
        series = {s["name"]: s for s in repo.all_series(rid)}
        assert series["loss"]["stats"]["count"] == 3000 and series["batched"]["stats"]["count"] == 300
        assert series["loss"]["context"] == {"thread": t}
    assert len(repo.runs(status="finished")) == 8
    it = db.iterkeys()
    it.seek_to_first()
    assert len(list(it)) == 8 * 300
    db.close()
    repo.close()


FORK = r"""
import os, sys, kv0, kv0.tracking as tracking
db = kv0.DB(sys.argv[1])
repo = tracking.Repo(sys.argv[2])
run = repo.start_run(name="parent")
db.put(b"before", b"fork")
pid = os.fork()
if pid == 0:
    ok = 0
    for call in (lambda: db.get(b"before"), lambda: db.put(b"child", b"x"), lambda: run.track(1.0, "loss"),
                 lambda: kv0.DB(sys.argv[1] + "-child"), lambda: repo.flush()):
        try:
            call()
        except kv0.errors.ForkedProcess as e:
            ok += "os.fork()" in str(e)
    os._exit(0 if ok == 5 else 1)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
db.put(b"after", b"fork")
run.track(2.0, "loss")
assert db.get(b"before") == b"fork"
db.close()
repo.close()
print("ok")
"""


def test_fork_refused_in_child(tmp_path):
    p = run_python(FORK, str(tmp_path / "db"), str(tmp_path / "repo"))
    assert p.stdout.strip() == "ok"
    with kv0.DB(str(tmp_path / "db"), read_only=True) as db:
        assert db.multi_get([b"before", b"after", b"child"]) == {b"before": b"fork", b"after": b"fork", b"child": None}
    assert not (tmp_path / "db-child").exists()


EXIT = r"""
import sys, kv0, kv0.tracking as tracking
db = kv0.DB(sys.argv[1], flush_interval=-1)
repo = tracking.Repo(sys.argv[2], flush_interval=-1)
run = repo.start_run(name="never-closed")
for i in range(100):
    db.put(b"%03d" % i, b"v")
    run.track(float(i), "loss")
print(run.id)
sys.exit(0)  # no close(): the atexit hook flushes
"""


def test_atexit_flushes_unclosed(tmp_path):
    p = run_python(EXIT, str(tmp_path / "db"), str(tmp_path / "repo"))
    run_id = p.stdout.strip()
    # Read-only handles replay no WAL: what they see was committed at exit.
    with kv0.DB(str(tmp_path / "db"), read_only=True) as db:
        it = db.iterkeys()
        it.seek_to_first()
        assert len(list(it)) == 100
    with tracking.Repo(str(tmp_path / "repo"), read_only=True) as repo:
        (s,) = repo.all_series(run_id)
        assert s["stats"]["count"] == 100


def test_environment_passed_through(tmp_path, monkeypatch):
    # The WAL root comes from KV0_WAL_DIR as os.environ holds it at open.
    a, b = tmp_path / "wal-a", tmp_path / "wal-b"
    monkeypatch.setenv("KV0_WAL_DIR", str(a))
    db = kv0.DB(str(tmp_path / "db1"))
    db.put(b"k", b"v")
    monkeypatch.setenv("KV0_WAL_DIR", str(b))
    db2 = kv0.DB(str(tmp_path / "db2"))
    db2.put(b"k", b"v")
    assert a.is_dir() and b.is_dir()
    assert len(os.listdir(a)) == 1 and len(os.listdir(b)) == 1
    db.close()
    db2.close()


def test_closed_errors_are_typed(tmp_path):
    db = kv0.DB(str(tmp_path / "db"))
    db.close()
    try:
        db.flush()
    except errors.Closed as e:
        assert "closed" in str(e)
    else:
        raise AssertionError("flush after close did not raise Closed")


def test_cli_replays_python_wal(tmp_path, cli):
    # The CLI and the package key a repository's WAL alike, so a writable
    # CLI open (kv0 track --resume) replays what a killed script left.
    repo_path, db_path = str(tmp_path / "repo"), str(tmp_path / "db")
    env = dict(os.environ, PYTHONPATH=PYOUT)
    p = subprocess.Popen([sys.executable, "-c", TRAIN, repo_path, db_path, "wal-only"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    acked, run_id = 0, None
    try:
        for line in p.stdout:
            word, val = line.split()
            if word == "run":
                run_id = val
            elif int(val) >= 3 * 700:
                acked = int(val)
                break
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert run_id and acked, p.stderr.read()
    with tracking.Repo(repo_path, read_only=True) as repo:
        with pytest.raises(errors.NotFound):
            repo.run(run_id)  # the run itself is only in the WAL
    subprocess.run([cli, "track", repo_path, "--resume", run_id], input="", capture_output=True, text=True,
                   check=True)
    with tracking.Repo(repo_path, read_only=True) as repo:
        series = {s["name"]: s["series_id"] for s in repo.all_series(run_id)}
        steps = list(repo.read_many([series["loss"]])[0]["steps"])
    assert len(steps) >= acked and steps == list(range(len(steps)))


def test_one_writer_per_run(tmp_path, cli):
    # A run a handle writes is locked on this host (native/runlock, as kv0
    # track locks it): a second handle, in this process or the CLI in
    # another, cannot resume it until the first lets it go.
    path = str(tmp_path / "repo")
    with tracking.Repo(path) as first:
        run = first.start_run(name="held")
        run.track(1.0, "loss")
        first.flush()
        with tracking.Repo(path) as second:
            with pytest.raises(errors.Conflict, match="another process of this host"):
                second.resume_run(run.id)
        p = subprocess.run([cli, "track", path, "--resume", run.id], input="", capture_output=True, text=True)
        assert p.returncode == 1 and "another process of this host" in p.stderr, p.stderr
        run.finish()
    # Finished and closed: free again, for the CLI as for a new handle.
    p = subprocess.run([cli, "track", path, "--resume", run.id, "--finish"], input="", capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    with tracking.Repo(path) as again:
        again.resume_run(run.id).finish()


RESUMER = r"""
import os, sys, time, kv0.tracking as tracking
from kv0 import errors
repo_path, run_id, gate, value, status = sys.argv[1:6]
repo = tracking.Repo(repo_path)  # KV0_WAL_DIR: a host of its own
open(gate + ".ready.%d" % os.getpid(), "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(gate) and time.monotonic() < deadline:
    time.sleep(0.0005)  # polling the gate file
try:
    run = repo.resume_run(run_id)
except errors.Conflict as e:
    print("held", e, flush=True)
    repo.close()
    sys.exit(3)
print("won", flush=True)
sys.stdin.readline()  # the test says when every racer has its answer
for i in range(3):
    run.track(float(value) + i, "m")
run.finish(status)
repo.close()
"""


def test_resume_race_one_wins(tmp_path):
    # Two processes with write-ahead logs of their own (two hosts) resume
    # one free run at the same moment, ten times: the run's create-only
    # claim lets exactly one of them have it; the other gets Conflict.
    path = str(tmp_path / "repo")
    with tracking.Repo(path) as repo:
        run = repo.start_run(name="contested")
        run.track(1.0, "m")
        run.finish()
    statuses = ["failed", "aborted"]
    winners = []
    for rnd in range(10):
        gate = str(tmp_path / ("gate%d" % rnd))
        procs = []
        for k in range(2):
            env = dict(os.environ, PYTHONPATH=PYOUT, KV0_WAL_DIR=str(tmp_path / ("host%d" % k)))
            procs.append(subprocess.Popen(
                [sys.executable, "-c", RESUMER, path, run.id, gate, str(100 * (k + 1) + 10 * rnd), statuses[k]],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        try:
            deadline = time.monotonic() + 60
            while len([f for f in os.listdir(tmp_path) if f.startswith("gate%d.ready." % rnd)]) < 2:
                assert time.monotonic() < deadline, "the racers did not reach the gate"
                time.sleep(0.001)  # polling the condition above
            open(gate, "w").close()
            answers = [p.stdout.readline().strip() for p in procs]
            won = [a == "won" for a in answers]
            assert sum(won) == 1, answers
            w = won.index(True)
            loser = procs[1 - w]
            assert loser.wait(timeout=60) == 3 and "held by another writer" in answers[1 - w], answers
            out, err = procs[w].communicate("go\n", timeout=60)
            assert procs[w].returncode == 0, err
            winners.append(w)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        with tracking.Repo(path, read_only=True) as repo:
            assert repo.run(run.id)["status"] == statuses[w]
            sid = repo.all_series(run.id)[0]["series_id"]
            values = list(repo.read_many([sid])[0]["values"])
            assert values[-3:] == [100 * (w + 1) + 10 * rnd + i for i in range(3)], values
    with tracking.Repo(path, read_only=True) as repo:
        sid = repo.all_series(run.id)[0]["series_id"]
        assert len(repo.read_many([sid])[0]["steps"]) == 1 + 3 * 10

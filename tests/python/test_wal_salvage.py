"""A damaged write-ahead log segment: kv0.DB and kv0.tracking.Repo raise
kv0.errors.WALCorruption naming the segment and `kv0 wal salvage`, and after
the salvage the writes before the damage are there, once each."""

import glob
import json
import os
import signal
import struct
import subprocess
import sys

import pytest

import kv0
import kv0.tracking as tracking
from kv0 import errors

from conftest import PYOUT

# A writer that logs n puts (or points) and is killed before it commits
# any: they are acknowledged (in the WAL, which survives the process) but
# only there.
WRITER = r"""
import sys, kv0, kv0.tracking as tracking
kind, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if kind == "db":
    db = kv0.DB(path, flush_interval=-1, write_buffer_size=1 << 30)
    for i in range(n):
        db.put(b"k%05d" % i, b"v%d" % i)
    db.flush_wal()
else:
    repo = tracking.Repo(path, flush_rows=10**9, flush_interval=-1)
    run = repo.start_run(name="killed")
    repo.flush()
    print("run", run.id, flush=True)
    for i in range(n):
        run.track(i * 0.5, "loss", step=i)
    repo.flush_wal()
print("done", flush=True)
sys.stdin.read()
"""


def killed_writer(kind, path, n):
    p = subprocess.Popen([sys.executable, "-c", WRITER, kind, path, str(n)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONPATH=PYOUT))
    run_id = None
    try:
        for line in p.stdout:
            word, *rest = line.split()
            if word == "run":
                run_id = rest[0]
            if word == "done":
                break
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert p.returncode == -signal.SIGKILL, p.stderr.read()
    return run_id


def segment(wal_dir):
    segs = glob.glob(os.path.join(str(wal_dir), "*", "*", "*.seg"))
    assert len(segs) == 1, segs
    return segs[0]


def record_starts(data):
    """Offsets of a segment's records (length u32, checksum u64, payload;
    a zero length ends the used part)."""
    starts, off = [], 0
    while off + 12 <= len(data):
        (n,) = struct.unpack_from("<I", data, off)
        if n == 0:
            break
        starts.append(off)
        off += 12 + n
    return starts


def damage(seg, pos):
    with open(seg, "r+b") as f:
        f.seek(pos)
        b = f.read(1)
        f.seek(pos)
        f.write(bytes([b[0] ^ 0xFF]))


def salvage(cli, path):
    out = subprocess.run([cli, "wal", "salvage", path], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_db_wal_corruption(tmp_path, wal_dir, cli):
    path = str(tmp_path / "db")
    killed_writer("db", path, 200)
    seg = segment(wal_dir)
    with open(seg, "rb") as f:
        starts = record_starts(f.read())
    assert len(starts) == 200
    damage(seg, starts[120])  # the boundary of the 121st put

    with pytest.raises(errors.WALCorruption) as ei:
        kv0.DB(path)
    msg = str(ei.value)
    assert isinstance(ei.value, errors.Corruption)
    assert seg in msg and "kv0 wal salvage " + path in msg and f"offset {starts[120]}" in msg, msg
    # Read-only opens never replay the log: they work meanwhile.
    with kv0.DB(path, read_only=True) as db:
        assert db.get(b"k00000") is None

    check = subprocess.run([cli, "wal", "check", path, "--json"], capture_output=True, text=True)
    assert check.returncode == 1, check.stderr
    rep = json.loads(check.stdout)
    assert rep["damaged"][0]["segment"] == seg and rep["damaged"][0]["intact"] == 120
    out = salvage(cli, path)
    assert "moved aside: " + seg in out, out

    with kv0.DB(path) as db:  # replays the 120 puts before the damage
        it = db.iteritems()
        it.seek_to_first()
        assert list(it) == [(b"k%05d" % i, b"v%d" % i) for i in range(120)]
        db.put(b"after", b"x")
    assert salvage(cli, path).count("no damage") == 1  # a second salvage changes nothing
    with kv0.DB(path, read_only=True) as db:
        assert db.get(b"k00119") == b"v119" and db.get(b"k00120") is None and db.get(b"after") == b"x"


def test_repo_wal_corruption(tmp_path, wal_dir, cli):
    path = str(tmp_path / "repo")
    run_id = killed_writer("repo", path, 12)
    seg = segment(wal_dir)
    with open(seg, "rb") as f:
        data = f.read()
    starts = record_starts(data)
    # The first point record (kind 23) after the series record; damage
    # the checksum of the fifth point's record.
    points = [s for s in starts if data[s + 12] == 23]
    assert len(points) == 12
    damage(seg, points[4] + 6)

    with pytest.raises(errors.WALCorruption) as ei:
        tracking.Repo(path)
    assert seg in str(ei.value) and "kv0 wal salvage " + path in str(ei.value)
    salvage(cli, path)
    with tracking.Repo(path) as repo:  # replays the four points before the damage
        repo.flush()
    with tracking.Repo(path, read_only=True) as repo:
        series = {s["name"]: s["series_id"] for s in repo.all_series(run_id)}
        loss = repo.read_many([series["loss"]])[0]
        assert list(loss["steps"]) == [0, 1, 2, 3]
        assert list(loss["values"]) == [0.0, 0.5, 1.0, 1.5]

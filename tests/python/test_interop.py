"""Interop: what Python writes, the CLI and lancedb read (the key-value op
log and the tracking tables), and what they write, Python reads.

lancedb here is 0.31 (lance 8), which reads data files of format 2.1 only:
the databases and repositories it reads are created with data_format="2.1"
(the default, 2.2, is what lance 12 writes)."""

import csv
import io
import json
import os
import subprocess

import kv0
import kv0.tracking as tracking

from conftest import REPO_ROOT

INTEROP = os.path.join(REPO_ROOT, "tests", "interop")


def _run(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{args}: {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout


def _node(node, *args):
    return _run([node, *args], cwd=INTEROP)


def _pairs(db):
    it = db.iteritems()
    it.seek_to_first()
    return list(it)


def test_kv_python_to_cli_and_lancedb(tmp_path, cli, node, wal_dir):
    path = str(tmp_path / "kv.lance")
    want = {}
    with kv0.DB(path, data_format="2.1") as db:
        for i in range(300):
            k, v = b"key\x00%04d" % i, os.urandom(i % 7)
            db.put(k, v)
            want[k] = v
        db.flush()
        db.delete_range(b"key\x000100", b"key\x000150")
        wb = kv0.WriteBatch()
        wb.delete(b"key\x000007")
        wb.put(b"\xff", b"last")
        db.write(wb)
    for k in [k for k in want if b"key\x000100" <= k < b"key\x000150"] + [b"key\x000007"]:
        del want[k]
    want[b"\xff"] = b"last"
    lines = sorted(f"{k.hex()}\t{v.hex()}" for k, v in want.items())
    cli_out = _run([cli, "kv", "scan", "--hex", "--wal-dir", str(wal_dir), path]).splitlines()
    assert cli_out == lines
    assert _node(node, "kv.mjs", "scan", str(tmp_path)).splitlines() == lines


def test_kv_cli_and_lancedb_to_python(tmp_path, cli, node, wal_dir):
    path = str(tmp_path / "kv.lance")
    _run([cli, "kv", "put", "--wal-dir", str(wal_dir), "--format", "2.1", path, "from-cli", "hello"])
    _run([cli, "kv", "put", "--wal-dir", str(wal_dir), path, "gone", "x"])
    _run([cli, "kv", "delete", "--wal-dir", str(wal_dir), path, "gone"])
    _node(node, "python.mjs", "append", str(tmp_path), "kv",
          json.dumps({"seq": "next", "op": 0, "key": b"from-lancedb".hex(), "value": b"\x00\x01".hex()}))
    with kv0.DB(path, read_only=True) as db:
        assert _pairs(db) == [(b"from-cli", b"hello"), (b"from-lancedb", b"\x00\x01")]
    with kv0.DB(path) as db:  # a writer carries on from them
        db.put(b"from-python", b"!")
        assert db.get(b"from-lancedb") == b"\x00\x01"
    assert _run([cli, "kv", "get", "--wal-dir", str(wal_dir), path, "from-python"]).strip() == "!"


def _populate(path, data_format=None):
    with tracking.Repo(path, data_format=data_format) as repo:
        ids = []
        for r in range(3):
            with repo.start_run(name=f"run{r}", experiment="interop", tags=["t"], params={"lr": 0.1 * (r + 1)}) as run:
                for i in range(50):
                    run.track(i * 0.25 + r, "loss", epoch=i // 10)
                run.track_many("acc", [0.5, 0.75, 1.0], steps=[0, 10, 20], context={"subset": "val"})
            ids.append(run.id)
        return ids


def test_tracking_python_to_cli(tmp_path, cli):
    path = str(tmp_path / "repo")
    ids = _populate(path)
    with tracking.Repo(path, read_only=True) as repo:
        assert repo.runs() == json.loads(_run([cli, "runs", path, "--json"]))
        for rid in ids:
            assert repo.run(rid) == json.loads(_run([cli, "run", path, rid, "--json"]))
            # The CLI's JSON carries a series' context as its canonical JSON
            # text (the key it is found by); Python hands back the dict track took.
            cli_series = json.loads(_run([cli, "series", path, rid, "--json"]))
            for s in cli_series:
                s["context"] = json.loads(s["context"])
            assert repo.all_series(rid) == cli_series
            assert repo.all_params(rid) == json.loads(_run([cli, "params", path, rid, "--json"]))
        loss = {s["name"]: s["series_id"] for s in repo.all_series(ids[1])}["loss"]
        data = repo.read_many([loss])[0]
    rows = list(csv.DictReader(io.StringIO(_run([cli, "metrics", path, ids[1], "loss", "--csv"]))))
    assert {r["name"] for r in rows} == {"loss"}
    assert [(int(r["step"]), float(r["value"])) for r in rows] == list(zip(data["steps"], data["values"]))


def test_tracking_python_to_lancedb(tmp_path, node):
    path = str(tmp_path / "repo")
    ids = _populate(path, data_format="2.1")
    out = tmp_path / "dump"
    out.mkdir()
    _node(node, "tracking.mjs", "dump", path, str(out))
    view = json.loads((out / "view.json").read_text())
    with tracking.Repo(path, read_only=True) as repo:
        assert sorted(view["runs"]) == sorted(ids)
        for r in repo.runs():
            assert view["runs"][r["run_id"]]["name"] == r["name"]
            assert view["runs"][r["run_id"]]["status"] == "finished"
        for rid in ids:
            for s in repo.all_series(rid):
                d = repo.read_many([s["series_id"]])[0]
                pts = view["points"][str(s["series_id"])]
                assert pts["steps"] == list(d["steps"])
                assert [float(v) for v in pts["values"]] == list(d["values"])


def test_tracking_cli_and_lancedb_to_python(tmp_path, cli, node):
    path = str(tmp_path / "repo")
    lines = [json.dumps({"params": {"model": {"depth": 4, "pretrained": False}}})]
    lines += [json.dumps({"name": "loss", "value": 1.0 / (i + 1), "step": i}) for i in range(20)]
    p = subprocess.run([cli, "track", path, "--run", "from-cli", "--experiment", "e", "--format", "2.1"], input="\n".join(lines),
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    with tracking.Repo(path, read_only=True) as repo:
        (run,) = repo.runs()
        assert run["name"] == "from-cli" and run["status"] == "finished"
        (s,) = repo.all_series(run["run_id"])
        d = repo.read_many([s["series_id"]])[0]
        assert list(d["steps"]) == list(range(20)) and list(d["values"]) == [1.0 / (i + 1) for i in range(20)]
        assert repo.all_params(run["run_id"]) == {"model.depth": 4, "model.pretrained": False}
    # lancedb appends a parameter row; the newest seq wins.
    _node(node, "python.mjs", "append", path, "params",
          json.dumps({"seq": "next", "run_id": run["run_id"], "key": "model.pretrained", "value": "true",
                      "flag": True}))
    with tracking.Repo(path) as repo:
        assert repo.all_params(run["run_id"]) == {"model.depth": 4, "model.pretrained": True}
        assert [r["run_id"] for r in repo.runs(params=[("model.pretrained", "=", True)])] == [run["run_id"]]
        r = repo.resume_run(run["run_id"])
        r.track(0.01, "loss")
        d = repo.read_many([s["series_id"]])[0]
        assert list(d["steps"])[-2:] == [19, 20]

"""The smoke test: what a user does first with the package, on a local
folder, through its public API only. test_wheel.py runs this file again
with the interpreter of a fresh venv where the release wheel was installed
(KV0_SMOKE_INSTALLED_IN then names the venv, which kv0 must come from)."""

import os
import re

import kv0
import kv0.tracking


def test_version_and_origin():
    assert re.fullmatch(r"\d+\.\d+\.\d+([-+.][0-9A-Za-z.-]+)?", kv0.__version__), kv0.__version__
    where = os.environ.get("KV0_SMOKE_INSTALLED_IN")
    if where:
        assert os.path.realpath(kv0.__file__).startswith(os.path.realpath(where) + os.sep), kv0.__file__


def test_key_value(tmp_path):
    path = str(tmp_path / "kv.lance")
    db = kv0.DB(path)
    batch = kv0.WriteBatch()
    for i in range(100):
        batch.put(b"k%03d" % i, b"v%d" % i)
    batch.delete(b"k050")
    db.write(batch)
    db.flush()
    db.close()
    db = kv0.DB(path)
    try:
        assert db.get(b"k007") == b"v7"
        assert db.get(b"k050") is None
        it = db.iteritems()
        it.seek(b"k090")
        assert [k for k, _ in it] == [b"k%03d" % i for i in range(90, 100)]
    finally:
        db.close()


def test_tracking(tmp_path):
    repo = kv0.tracking.Repo(str(tmp_path / "runs"))
    try:
        with repo.start_run(name="smoke", experiment="check", params={"lr": 0.5}) as run:
            for step in range(50):
                run.track(1.0 / (step + 1), name="loss", step=step, context={"subset": "train"})
        [listed] = repo.runs(experiment="check")
        assert listed["name"] == "smoke" and listed["status"] == "finished"
        [series] = repo.all_series(run.id)
        [data] = repo.read_many([series["series_id"]])
        assert list(data["steps"]) == list(range(50))
        assert list(data["values"]) == [1.0 / (s + 1) for s in range(50)]
        assert repo.all_params(run.id)["lr"] == 0.5
    finally:
        repo.close()

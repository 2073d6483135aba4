"""kv0.tracking: Repo and Run over the whole API."""

import array
import datetime
import json
import math
import os

import pytest

import kv0
import kv0.tracking as tracking
from kv0 import errors


@pytest.fixture
def repo(tmp_path):
    r = tracking.Repo(str(tmp_path / "repo"), flush_interval=-1)
    yield r
    r.close()


def _col(a):
    return list(a)


def test_start_track_read(repo):
    run = repo.start_run(name="base", experiment="mnist", description="d", tags=("a", "b"),
                         params={"optimizer": {"lr": 0.001, "name": "adam"}, "bs": 32}, kind="training",
                         target={"dataset": "mnist"})
    assert isinstance(run.id, str) and len(run.id) == 32
    for i in range(10):
        run.track(i * 0.5, "loss", epoch=i // 5)
    run.track(1.0, "loss", step=100, context={"subset": "val"})
    run.track(2, "loss", step=101, context={"subset": "val"})  # ints are numbers too
    run.track_many("acc", array.array("d", [0.1, 0.2, 0.3]))
    run.track_many("acc", [0.4, 0.5], steps=[10, 20])
    run.track_many("lr", (1e-3,) * 4, steps=array.array("q", [0, 1, 2, 3]), epoch=7)
    run.track_many("empty", [])
    info = repo.run(run.id)
    assert info["name"] == "base" and info["experiment"] == "mnist" and info["tags"] == ["a", "b"]
    assert info["status"] == "running" and info["kind"] == "training" and info["description"] == "d"
    assert info["target"] == '{"dataset": "mnist"}'
    assert repo.all_params(run.id) == {"optimizer.lr": 0.001, "optimizer.name": "adam", "bs": 32}
    series = repo.all_series(run.id)
    names = [(s["name"], s["context"]) for s in series]
    assert names == [("acc", {}), ("loss", {"subset": "val"}), ("loss", {}), ("lr", {})]
    by = {(s["name"], json.dumps(s["context"], separators=(",", ":"))): s for s in series}
    assert all(isinstance(s["series_id"], int) for s in series)
    loss = by[("loss", "{}")]
    assert loss["stats"]["count"] == 10 and loss["stats"]["last_value"] == 4.5 and loss["stats"]["max_step"] == 9
    ids = [by[k]["series_id"] for k in [("loss", "{}"), ("acc", "{}"), ("lr", "{}"), ("loss", '{"subset":"val"}')]]
    data = repo.read_many(ids + [12345])
    assert [d["series_id"] for d in data] == ids + [12345]
    assert _col(data[0]["steps"]) == list(range(10))
    assert _col(data[0]["values"]) == [i * 0.5 for i in range(10)]
    assert _col(data[0]["epochs"]) == [0] * 5 + [1] * 5
    assert _col(data[1]["steps"]) == [0, 1, 2, 10, 20] and _col(data[1]["values"]) == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert _col(data[1]["epochs"]) == [tracking.NO_EPOCH] * 5
    assert _col(data[2]["epochs"]) == [7] * 4
    assert _col(data[3]["values"]) == [1.0, 2.0]
    assert len(data[4]["steps"]) == 0
    now = datetime.datetime.now(datetime.timezone.utc).timestamp()
    assert all(now - 60 < t <= now + 1 for t in data[0]["timestamps"])
    # Ranges and downsampling.
    assert _col(repo.read_many([ids[0]], steps=(2, 5))[0]["steps"]) == [2, 3, 4]
    assert _col(repo.read_many([ids[0]], steps=range(8, 100))[0]["steps"]) == [8, 9]
    assert len(repo.read_many([ids[0]], max_points=4)[0]["steps"]) <= 4
    assert len(repo.read_many([ids[0]], time=(now - 3600, now + 3600))[0]["steps"]) == 10
    assert len(repo.read_many([ids[0]], time=(now + 3600, now + 7200))[0]["steps"]) == 0
    stats = repo.series_stats(ids[:2])
    assert set(stats) == set(ids[:2]) and stats[ids[1]]["count"] == 5
    assert set(repo.series_stats()) == set(ids)
    run.finish()
    assert repo.run(run.id)["status"] == "finished" and "ended_at" in repo.run(run.id)


def test_non_finite_values(repo):
    run = repo.start_run(name="nan")
    run.track_many("x", [math.nan, math.inf, -math.inf])
    s = repo.all_series(run.id)[0]
    assert s["stats"]["non_finite"] == 3 and s["stats"]["min"] == math.inf and s["stats"]["max"] == -math.inf
    vals = repo.read_many([s["series_id"]])[0]["values"]
    assert math.isnan(vals[0]) and vals[1] == math.inf and vals[2] == -math.inf


def test_runs_filters_update_delete(repo):
    a = repo.start_run(name="a", experiment="e1", tags=["x"])
    b = repo.start_run(name="b", experiment="e2", tags=["x", "y"], params={"lr": 0.1})
    c = repo.start_run(name="c", experiment="e1")
    assert [r["name"] for r in repo.runs()] == ["a", "b", "c"]
    assert [r["name"] for r in repo.runs(experiment="e1")] == ["a", "c"]
    assert [r["name"] for r in repo.runs(tags=["y"])] == ["b"]
    assert [r["name"] for r in repo.runs(params=[("lr", ">", 0.05)])] == ["b"]
    repo.update_run(a.id, description="changed", archived=True, tags=["z"])
    a.update(name="a2")
    info = repo.run(a.id)
    assert info["name"] == "a2" and info["description"] == "changed" and info["archived"] and info["tags"] == ["z"]
    assert [r["name"] for r in repo.runs(archived=False)] == ["b", "c"]
    b.set_params({"opt": {"m": 0.9}})
    b.set_params({"opt": {"n": 1}})
    assert repo.all_params(b.id) == {"lr": 0.1, "opt.m": 0.9, "opt.n": 1}
    c.finish("failed")
    assert [r["name"] for r in repo.runs(status="failed")] == ["c"]
    repo.delete_runs([c.id])
    assert [r["name"] for r in repo.runs()] == ["a2", "b"]
    with pytest.raises(errors.NotFound):
        repo.run(c.id)
    with pytest.raises(errors.NotFound):
        repo.delete_runs(["no-such-run"])
    with pytest.raises(errors.NotFound):
        repo.resume_run("no-such-run")
    with pytest.raises(TypeError):
        repo.update_run(a.id, colour="red")
    with pytest.raises(TypeError):
        repo.runs(colour="red")


def test_resume_context_manager_optimize_purge(tmp_path):
    path = str(tmp_path / "repo")
    with tracking.Repo(path) as repo:
        with repo.start_run(name="r") as run:
            for i in range(5):
                run.track(float(i), "loss")
        rid = run.id
        assert repo.run(rid)["status"] == "finished"
        with pytest.raises(RuntimeError):
            with repo.start_run(name="boom") as bad:
                raise RuntimeError("training failed")
        assert repo.run(bad.id)["status"] == "failed"
    with tracking.Repo(path) as repo:
        run = repo.resume_run(rid)
        run.track(5.0, "loss")  # continues at step 5
        sid = repo.all_series(rid)[0]["series_id"]
        assert list(repo.read_many([sid])[0]["steps"]) == [0, 1, 2, 3, 4, 5]
        st = repo.optimize()
        assert st["metrics_rewritten"] >= 6
        repo.delete_runs([bad.id])
        repo.purge()
        assert [r["run_id"] for r in repo.runs()] == [rid]
        repo.flush()
        repo.flush_wal()


def test_read_only_and_closed(tmp_path):
    path = str(tmp_path / "repo")
    with pytest.raises(errors.NotFound):
        tracking.Repo(path, read_only=True)
    w = tracking.Repo(path)
    run = w.start_run(name="r")
    run.track(1.0, "loss")
    w.close()
    w.close()  # a second close does nothing
    with pytest.raises(errors.Closed):
        run.track(2.0, "loss")
    with pytest.raises(errors.Closed):
        w.runs()
    ro = tracking.Repo(path, read_only=True)
    assert ro.read_only and [r["name"] for r in ro.runs()] == ["r"]
    for write in (lambda: ro.start_run(name="x"), lambda: ro.update_run(run.id, name="y"),
                  lambda: ro.delete_runs([run.id]), lambda: ro.resume_run(run.id)):
        with pytest.raises(errors.NotSupported):
            write()
    ro.close()


def test_bad_arguments(repo):
    run = repo.start_run()
    with pytest.raises(errors.InvalidArgument):
        run.track(1.0, "")
    with pytest.raises(TypeError):
        run.track(1.0, 5)
    with pytest.raises(TypeError):
        run.track("x", "loss")
    with pytest.raises(TypeError):
        run.track(1.0, "loss", step="3")
    with pytest.raises(TypeError):
        run.track(1.0, "loss", context="subset=train")
    with pytest.raises(ValueError):
        run.track_many("loss", [1.0, 2.0], steps=[1])
    with pytest.raises(TypeError):
        run.track_many("loss", ["a"])
    with pytest.raises(TypeError):
        tracking.Repo("memory://x", colour="red")
    with pytest.raises(TypeError):
        repo.start_run(tags="a")
    run.track(True, "flag")  # a bool is a number
    run.track_many("f32", memoryview(array.array("f", [1.5, 2.5])))  # converted
    run.track_many("ro", memoryview(array.array("d", [3.5, 4.5]).tobytes()).cast("d"))  # a read-only buffer
    sids = {s["name"]: s["series_id"] for s in repo.all_series(run.id)}
    f32, ro = repo.read_many([sids["f32"], sids["ro"]])
    assert list(f32["values"]) == [1.5, 2.5] and list(ro["values"]) == [3.5, 4.5]


def test_steps_epochs_values_checked(repo):
    """A step or epoch outside int64 is an OverflowError (never cut to 64
    bits), a bool or a str step a TypeError, a str value a TypeError (not
    parsed); nothing of them is stored."""
    run = repo.start_run()
    for bad in (2**64 + 7, 2**63, -(2**63) - 1):
        with pytest.raises(OverflowError):
            run.track(1.0, "loss", step=bad)
        with pytest.raises(OverflowError):
            run.track(1.0, "loss", step=0, epoch=bad)
        with pytest.raises(OverflowError):
            run.track(1.0, "loss", epoch=bad)
    with pytest.raises(TypeError):
        run.track(1.0, "loss", step=True)
    with pytest.raises(TypeError):
        run.track("1.5", "loss")
    assert repo.all_series(run.id) == []
    run.track(1.0, "loss", step=2**63 - 1, epoch=-(2**63))  # the extremes themselves are fine
    with pytest.raises(errors.InvalidArgument):
        run.track(2.0, "loss")  # no step follows the largest
    (s,) = repo.all_series(run.id)
    (d,) = repo.read_many([s["series_id"]])
    assert list(d["steps"]) == [2**63 - 1] and list(d["values"]) == [1.0]


def test_nested_context(repo):
    """A context holding a dict or a list works as the CLI's does."""
    run = repo.start_run()
    run.track(1.0, "loss", context={"a": {"b": 1}})
    run.track(2.0, "loss", context={"a": {"b": 1}})
    run.track(3.0, "loss", context={"tags": ["x", "y"]})
    run.track_many("loss", [4.0, 5.0], context={"a": {"b": 2}})
    got = sorted((json.dumps(s["context"], separators=(",", ":")), s["stats"]["count"])
                 for s in repo.all_series(run.id))
    assert got == [('{"a":{"b":1}}', 2), ('{"a":{"b":2}}', 2), ('{"tags":["x","y"]}', 1)], got
    assert all(isinstance(s["context"], dict) for s in repo.all_series(run.id))


def test_status_checked(repo):
    """A status outside running, finished, failed and aborted is refused,
    and so is finishing as running."""
    run = repo.start_run()
    with pytest.raises(errors.InvalidArgument):
        run.update(status="weird")
    with pytest.raises(errors.InvalidArgument):
        run.finish("bogus")
    with pytest.raises(errors.InvalidArgument):
        run.finish("running")
    assert repo.run(run.id)["status"] == "running"
    run.finish("failed")
    assert repo.run(run.id)["status"] == "failed"


def test_memory_repo():
    with tracking.Repo("memory://pytest-repo") as r:
        run = r.start_run(name="m")
        run.track(1.0, "x")
        assert r.all_series(run.id)[0]["stats"]["count"] == 1


def test_numpy_arrays(repo):
    try:
        import numpy as np  # optional at run time; `make python-deps` installs it when CI=true
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but numpy is missing (apt-get install python3-numpy)")
        pytest.skip("numpy is not installed")
    run = repo.start_run(name="np")
    run.track_many("a", np.arange(5, dtype=np.float64), steps=np.arange(10, 15))
    run.track_many("b", np.arange(3, dtype=np.float32))  # converted
    run.track(np.float32(2.5), "c", step=np.int64(7))
    sids = {s["name"]: s["series_id"] for s in repo.all_series(run.id)}
    a, b, c = repo.read_many([sids["a"], sids["b"], sids["c"]])
    assert isinstance(a["steps"], np.ndarray) and a["steps"].dtype == np.int64
    assert a["steps"].tolist() == [10, 11, 12, 13, 14] and a["values"].tolist() == [0, 1, 2, 3, 4]
    assert b["values"].tolist() == [0, 1, 2] and c["steps"].tolist() == [7] and c["values"].tolist() == [2.5]


def test_track_many_refuses_bools_and_complex(repo):
    """track_many takes what track takes: booleans and complex numbers are
    TypeErrors (they were stored as 1.0/0.0 and as the real part), and
    nothing of the call is tracked."""
    run = repo.start_run()
    for values in ([1.0, True], [0.5, 1 + 2j], (False,)):
        with pytest.raises(TypeError):
            run.track_many("x", values)
    with pytest.raises(TypeError):
        run.track_many("x", [1.0, 2.0], steps=[0, True])
    with pytest.raises(TypeError):
        run.track_many("x", [1.0], steps=[0.5])
    with pytest.raises(TypeError):
        run.track_many("x", ["1.0"])
    try:
        import numpy as np
    except ImportError:
        np = None
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but numpy is missing (apt-get install python3-numpy)")
    if np is not None:
        for values in (np.array([True, False]), np.array([1 + 2j, 3j]), np.array([1, 2], dtype=np.complex64)):
            with pytest.raises(TypeError):
                run.track_many("x", values)
        with pytest.raises(TypeError):
            run.track_many("x", np.ones(2), steps=np.array([True, False]))
        run.track_many("y", np.array([1, 2], dtype=np.int32))  # integers are numbers
    run.track_many("z", (x for x in [1.0, 2]))  # any iterable of numbers
    got = {s["name"]: s["stats"]["count"] for s in repo.all_series(run.id)}
    assert got == ({"y": 2, "z": 2} if np is not None else {"z": 2}), got


def test_track_many_handles_signals_between_chunks(repo, monkeypatch):
    """A signal arriving during a long track_many is handled after the
    chunk in flight, not after the whole call: the chunks before it stay
    tracked, none after."""
    import signal
    # A process started in the background (nohup, CI runners) inherits an
    # ignored SIGINT, and Python then leaves it ignored: install the
    # handler a terminal's Ctrl-C would meet.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _track_many_interrupted(repo, monkeypatch, signal)
    finally:
        signal.signal(signal.SIGINT, previous)


def _track_many_interrupted(repo, monkeypatch, signal):
    run = repo.start_run()
    real = tracking.lib
    calls = []

    class Lib:
        def __getattr__(self, name):
            return getattr(real, name)

        def kv0_run_track_many(self, *args):
            code = real.kv0_run_track_many(*args)
            calls.append(args[4])
            if len(calls) == 1:
                signal.raise_signal(signal.SIGINT)  # as Ctrl-C during the first chunk
            return code

    monkeypatch.setattr(tracking, "lib", Lib())
    n = 5 * tracking._TRACK_MANY_CHUNK + 3
    with pytest.raises(KeyboardInterrupt):
        run.track_many("x", array.array("d", range(n)))
    monkeypatch.setattr(tracking, "lib", real)
    (s,) = repo.all_series(run.id)
    assert calls == [tracking._TRACK_MANY_CHUNK], calls
    assert s["stats"]["count"] == tracking._TRACK_MANY_CHUNK and s["stats"]["max_step"] == tracking._TRACK_MANY_CHUNK - 1
    run.track_many("x", [1.0, 2.0])  # steps go on after the tracked chunk
    (d,) = repo.read_many([s["series_id"]])
    assert list(d["steps"])[-2:] == [tracking._TRACK_MANY_CHUNK, tracking._TRACK_MANY_CHUNK + 1]


def test_without_numpy():
    # The array.array path, even where numpy is installed.
    from conftest import run_python
    code = ("import sys; sys.modules['numpy'] = None\n"
            "import array, kv0.tracking as t\n"
            "r = t.Repo('memory://no-numpy'); run = r.start_run()\n"
            "run.track_many('x', [1.0, 2.0])\n"
            "(d,) = r.read_many([r.all_series(run.id)[0]['series_id']])\n"
            "assert isinstance(d['values'], array.array) and d['values'].typecode == 'd', d\n"
            "assert list(d['steps']) == [0, 1] and d['steps'].typecode == 'q'\n"
            "print('ok')\n")
    assert run_python(code).stdout.strip() == "ok"


def test_params_keep_big_integers(tmp_path, cli):
    """An integer parameter above 2**53 reads back exactly, from Python and
    from the CLI."""
    import json
    import subprocess
    path = str(tmp_path / "repo")
    with tracking.Repo(path, flush_interval=-1) as repo:
        run = repo.start_run(params={"seed": 2**60 + 1})
        run.set_params({"ids": [1, 2**64 - 1]})
        assert repo.all_params(run.id) == {"seed": 2**60 + 1, "ids": [1, 2**64 - 1]}
    out = subprocess.run([cli, "params", path, run.id, "--json"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {"seed": 2**60 + 1, "ids": [1, 2**64 - 1]}


def test_run_id_finish_at_latest_versions(tmp_path):
    """start_run(run_id=...), finish(ended_at=...) and latest_versions()."""
    import datetime as dt
    with tracking.Repo(str(tmp_path / "repo"), flush_interval=-1) as repo:
        v0 = repo.latest_versions()
        assert set(v0) >= {"runs", "params", "series", "metrics"}
        run = repo.start_run(name="a", run_id="my-run-1")
        assert run.id == "my-run-1"
        with pytest.raises(errors.Conflict):
            repo.start_run(run_id="my-run-1")
        run.track(1.0, "loss")
        end = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
        run.finish("failed", ended_at=end)
        info = repo.run("my-run-1")
        assert info["status"] == "failed" and info["ended_at"] == "2026-01-02T03:04:05Z"
        v = repo.latest_versions()
        assert v["runs"] > v0["runs"] and v["series"] > v0["series"] and v["metrics"] > v0["metrics"]
        with pytest.raises(TypeError):
            repo.start_run().finish(ended_at="yesterday")


def test_run_block_status(tmp_path):
    """A `with run:` block ends the run as it ended: finished, failed on an
    exception, aborted on KeyboardInterrupt, by exit code on sys.exit; the
    block's own exception is the one raised even when finishing fails."""
    import sys
    with tracking.Repo(str(tmp_path / "repo"), flush_interval=-1) as repo:
        def status(body, exc=None):
            run = repo.start_run()
            if exc is None:
                with run:
                    body()
            else:
                with pytest.raises(exc):
                    with run:
                        body()
            return repo.run(run.id)["status"]

        def interrupt():
            raise KeyboardInterrupt

        def boom():
            raise RuntimeError("boom")

        assert status(lambda: None) == "finished"
        assert status(boom, RuntimeError) == "failed"
        assert status(interrupt, KeyboardInterrupt) == "aborted"
        assert status(lambda: sys.exit(0), SystemExit) == "finished"
        assert status(lambda: sys.exit(3), SystemExit) == "failed"
    other = tracking.Repo(str(tmp_path / "repo2"))
    run = other.start_run()
    with pytest.raises(RuntimeError, match="boom"):
        with run:
            other.close()
            boom()


@pytest.mark.parametrize("create,want,other", [(None, "2.2", "2.1"), ("2.1", "2.1", "2.2")])
def test_repo_data_format(tmp_path, cli, create, want, other):
    """A repository's tables get data_format's Lance file format (default
    2.2; 2.1 for lance 8 readers) and keep it; the other one raises
    InvalidArgument."""
    import json
    import subprocess
    path = str(tmp_path / "repo")
    with tracking.Repo(path, data_format=create) as repo:
        with repo.start_run(name="a") as run:
            run.track(1.0, "loss")
    with tracking.Repo(path) as repo:  # no format: the repository's
        with repo.start_run(name="b", params={"lr": 0.1}) as run:
            run.track(2.0, "loss")
    for table in ["runs", "params", "series", "metrics"]:
        p = subprocess.run([cli, "lance", "info", "--json", os.path.join(path, table + ".lance")], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["data_format"] == want, table
    with pytest.raises(kv0.errors.InvalidArgument, match=want):
        tracking.Repo(path, data_format=other)
    with pytest.raises(kv0.errors.InvalidArgument, match="bogus"):
        tracking.Repo(str(tmp_path / "other"), data_format="bogus")

"""A model test of kv0.tracking from Python: random track / track_many
with explicit and default steps, contexts, flushes, reopens that resume
the run, and reads compared with a model (the latest point of each step
wins). KV0_PY_SEED picks the seed."""

import json
import math
import os
import random

import pytest

import kv0.tracking as tracking

SEEDS = [int(os.environ["KV0_PY_SEED"])] if "KV0_PY_SEED" in os.environ else [1, random.randrange(1 << 30)]
NAMES = ["loss", "acc"]
CONTEXTS = [None, {"subset": "train"}, {"subset": "val", "k": 2}]


@pytest.mark.parametrize("seed", SEEDS)
def test_tracking_model(tmp_path, seed):
    rng = random.Random(seed)
    path = str(tmp_path / "repo")
    repo = tracking.Repo(path, flush_interval=-1, flush_rows=rng.choice([50, 100_000]))
    run = repo.start_run(name="model")
    points = {}  # (name, context index) -> {step: value}
    last = {}    # (name, context index) -> last step tracked by this handle
    try:
        for op in range(400):
            ctx = f"seed {seed} op {op}"
            r = rng.random()
            name, ci = rng.choice(NAMES), rng.randrange(len(CONTEXTS))
            key = (name, ci)
            if r < 0.45:
                value = rng.choice([rng.random(), float(rng.randrange(10)), math.inf])
                step = rng.randrange(30) if rng.random() < 0.5 else None
                run.track(value, name, step=step, context=CONTEXTS[ci])
                if step is None:
                    step = last[key] + 1 if key in last else 0
                points.setdefault(key, {})[step] = value
                last[key] = step
            elif r < 0.65:
                n = rng.randrange(1, 20)
                values = [rng.random() for _ in range(n)]
                if rng.random() < 0.5:
                    steps = [rng.randrange(40) for _ in range(n)]
                    run.track_many(name, values, steps=steps, context=CONTEXTS[ci])
                else:
                    first = last[key] + 1 if key in last else 0
                    steps = list(range(first, first + n))
                    run.track_many(name, values, context=CONTEXTS[ci])
                for s, v in zip(steps, values):
                    points.setdefault(key, {})[s] = v
                last[key] = steps[-1]
            elif r < 0.75:
                repo.flush()
            elif r < 0.80:
                repo.close()
                repo = tracking.Repo(path, flush_interval=-1)
                run = repo.resume_run(run.id)
                # A resumed run continues after each series' largest step.
                last = {k: max(v) for k, v in points.items()}
            else:
                _check(repo, run.id, points, ctx)
        _check(repo, run.id, points, f"seed {seed} end")
    finally:
        repo.close()
    with tracking.Repo(path, read_only=True) as ro:
        _check(ro, run.id, points, f"seed {seed} reopened")


def _check(repo, run_id, points, ctx):
    series = {(s["name"], json.dumps(s["context"], sort_keys=True, separators=(",", ":"))): s
              for s in repo.all_series(run_id)}
    want = {}
    for (name, ci), pts in points.items():
        c = CONTEXTS[ci]
        cj = "{}" if not c else "{" + ",".join(f'"{k}":{json_value(v)}' for k, v in sorted(c.items())) + "}"
        want[(name, cj)] = pts
    assert set(series) == set(want), ctx
    keys = sorted(want)
    data = repo.read_many([series[k]["series_id"] for k in keys])
    for k, d in zip(keys, data):
        pts = want[k]
        assert list(d["steps"]) == sorted(pts), f"{ctx}: steps of {k}"
        assert list(d["values"]) == [pts[s] for s in sorted(pts)], f"{ctx}: values of {k}"
        st = series[k]["stats"]
        assert st["count"] == len(pts) and st["last_step"] == max(pts), f"{ctx}: stats of {k}"


def json_value(v):
    return f'"{v}"' if isinstance(v, str) else str(v)

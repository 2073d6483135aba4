"""A model test of kv0.DB against a dict: random puts, deletes, range
deletes, batches, reads, iterator walks in both directions, flushes and
reopens (some while writes are still only in the WAL), readers and time
travel to versions flushed earlier. KV0_PY_SEED picks
the seed and KV0_PY_STEPS the number of operations (default 700); each
failure prints the seed that reproduces it."""

import bisect
import os
import random

import pytest

import kv0

SEEDS = [int(os.environ["KV0_PY_SEED"])] if "KV0_PY_SEED" in os.environ else [1, 2, random.randrange(1 << 30)]


def _key(rng):
    # A small alphabet makes collisions, prefixes and range hits common.
    return bytes(rng.choice(b"ab\x00\xff") for _ in range(rng.randint(0, 4)))


def _value(rng):
    n = rng.choice([0, 1, 8, 100, 5000])  # 5000: above the lazy-value threshold
    return rng.randbytes(n)


@pytest.mark.parametrize("seed", SEEDS)
def test_model(tmp_path, seed):
    rng = random.Random(seed)
    path = str(tmp_path / "db")
    model = {}
    versions = {}  # version -> the model when it was the latest
    db = kv0.DB(path, flush_interval=-1)
    try:
        for step in range(int(os.environ.get("KV0_PY_STEPS", "700"))):
            r = rng.random()
            ctx = f"seed {seed} step {step}"
            if r < 0.35:
                k, v = _key(rng), _value(rng)
                db.put(k, v, sync=rng.random() < 0.02)
                model[k] = v
            elif r < 0.45:
                k = _key(rng)
                db.delete(k)
                model.pop(k, None)
            elif r < 0.49:
                a, b = sorted((_key(rng), _key(rng)))
                db.delete_range(a, b)
                for k in [k for k in model if a <= k < b]:
                    del model[k]
            elif r < 0.55:
                wb = kv0.WriteBatch()
                staged = dict(model)
                for _ in range(rng.randint(0, 20)):
                    k = _key(rng)
                    if rng.random() < 0.7:
                        v = _value(rng)
                        wb.put(k, v)
                        staged[k] = v
                    else:
                        wb.delete(k)
                        staged.pop(k, None)
                db.write(wb)
                model = staged
            elif r < 0.70:
                k = _key(rng)
                assert db.get(k) == model.get(k), ctx
            elif r < 0.75:
                ks = [_key(rng) for _ in range(rng.randint(0, 10))]
                assert db.multi_get(ks) == {k: model.get(k) for k in ks}, ctx
            elif r < 0.90:
                _check_walk(db, model, rng, ctx)
            elif r < 0.95:
                db.flush()
                versions[db.versions()[-1]["version"]] = dict(model)
            elif r < 0.98:
                db.close()
                db = kv0.DB(path, flush_interval=-1)
            elif r < 0.99 or not versions:
                # A reader sees what the writer flushed; the writer's
                # unflushed writes are its own until then.
                db.flush()
                with kv0.DB(path, read_only=True) as ro:
                    it = ro.iteritems()
                    it.seek_to_first()
                    assert dict(it) == model, ctx
            else:
                # Time travel: an older version holds what was latest then.
                v = rng.choice(sorted(versions))
                with kv0.DB(path, version=v) as old:
                    it = old.iteritems()
                    it.seek_to_first()
                    assert list(it) == sorted(versions[v].items()), f"{ctx}: version {v}"
        db.close()
        db = kv0.DB(path, read_only=True)
        it = db.iteritems()
        it.seek_to_first()
        assert list(it) == sorted(model.items()), f"seed {seed} final"
    finally:
        db.close()


def _check_walk(db, model, rng, ctx):
    keys = sorted(model)
    it = db.iteritems()
    k = _key(rng)
    how = rng.randrange(4)
    if how == 0:
        it.seek_to_first()
        i = 0
    elif how == 1:
        it.seek_to_last()
        i = len(keys) - 1
    elif how == 2:
        it.seek(k)
        i = bisect.bisect_left(keys, k)
    else:
        it.seek_for_prev(k)
        i = bisect.bisect_right(keys, k) - 1
    for _ in range(rng.randint(1, 40)):
        want = (keys[i], model[keys[i]]) if 0 <= i < len(keys) else None
        if rng.random() < 0.6:
            got = it.next()
            assert got == want, f"{ctx}: next at {i}"
            if want is None:
                return
            i += 1
        else:
            got = reversed(it).next()
            assert got == want, f"{ctx}: prev at {i}"
            if want is None:
                return
            i -= 1

"""The tracking layer: repositories of runs, parameters and metric series.

    import kv0.tracking

    repo = kv0.tracking.Repo("runs/")            # a folder, s3://..., memory://...
    with repo.start_run(name="baseline", experiment="mnist", params={"lr": 1e-3}) as run:
        for step in range(100):
            run.track(loss, name="loss", step=step, context={"subset": "train"})
    repo.close()

Results are plain dicts and lists with the keys of the CLI's ``--json``
output (``runs()`` as ``kv0 runs --json``, ``all_series()`` as ``kv0 series
--json``); series ids are Python ints. :meth:`Repo.read_many` returns
columns as ``array.array``\\ s, or numpy arrays when numpy is importable.
"""

import array
import ctypes
import datetime
import json
import numbers
import struct

from . import _native, errors
from ._native import lib, out, take, check

try:  # optional: read_many returns numpy arrays when it is there
    import numpy as _np
except ImportError:  # pragma: no cover - depends on the machine
    _np = None

NO_EPOCH = -(1 << 63)
"""The epoch read_many reports for points tracked without one."""

_TRACK_STEP, _TRACK_EPOCH = 1, 2
_TRACK_MANY_CHUNK = 1 << 16  # points per native call of track_many (see there)
_HDR = struct.Struct("<QQ")

_REPO_OPTIONS = {"flush_rows", "flush_interval", "max_fragments", "wal", "wal_dir", "wal_sync",
                 "data_format", "storage_options"}
_FILTERS = ("experiment", "status", "tags", "archived", "params")
_STAT_FLOATS = ("last_value", "min", "max")
_FIELDS = ("name", "experiment", "description", "tags", "status", "archived", "ended_at", "kind", "target")


def _json_arg(obj):
    return json.dumps(obj, allow_nan=True).encode()


def _fields(fields):
    """Run fields as the engine takes them."""
    res = {}
    for k, v in fields.items():
        if k not in _FIELDS:
            raise TypeError(f"a run has no field {k!r} (one of {', '.join(_FIELDS)})")
        if k == "tags":
            if isinstance(v, str):
                raise TypeError("tags must be a list of strings, not a str")
            v = list(v)
        elif k == "target" and v is not None and not isinstance(v, str):
            v = json.dumps(v, sort_keys=True)
        elif k == "ended_at" and hasattr(v, "timestamp"):
            v = v.timestamp()
        res[k] = v
    return res


def _ctx_key(context):
    if not isinstance(context, dict):
        raise TypeError(f"a context must be a dict, not {type(context).__name__}")
    try:
        key = tuple((k, v.__class__, v) for k, v in sorted(context.items()))
        hash(key)
        return key
    except TypeError:  # unhashable values (a nested dict, a list) or mixed key types
        return json.dumps(context, sort_keys=True, default=repr)


def _buffer(values, fmt, what):
    """values as a C-contiguous buffer of 8-byte fmt items ("d": float64,
    "q": int64), with its address; (keeper, address, count). Booleans, and
    complex numbers where floats are wanted, are TypeErrors, as track() has
    them: converting would drop their meaning silently."""
    try:
        mv = memoryview(values)
    except TypeError:
        mv = None
    formats = ("d",) if fmt == "d" else ("q", "l")
    if mv is not None and mv.format in formats and mv.itemsize == 8 and mv.c_contiguous and mv.ndim == 1:
        n = mv.shape[0]
        if n == 0:
            return None, None, 0
        if not mv.readonly:
            keeper = (ctypes.c_char * (n * 8)).from_buffer(mv)
            return keeper, ctypes.addressof(keeper), n
        keeper = mv.tobytes()  # a read-only buffer: one copy at C speed
        return keeper, ctypes.cast(ctypes.c_char_p(keeper), ctypes.c_void_p).value, n
    if mv is not None:
        # Another item type (numpy bool, complex, int32, ...): its items
        # go through the checks below as Python numbers.
        if "?" in mv.format or "Z" in mv.format:
            kind = "booleans" if "?" in mv.format else "complex numbers"
            raise TypeError(f"{what} must be {'floats' if fmt == 'd' else 'integers'}, not {kind}")
        values = mv.tolist()
    elif not isinstance(values, (list, tuple)):
        try:
            values = list(values)
        except TypeError:
            raise TypeError(f"{what} must be a sequence of numbers or a 1-d buffer of them") from None
    for t in set(map(type, values)):
        if issubclass(t, bool) or not issubclass(t, numbers.Real if fmt == "d" else numbers.Integral):
            raise TypeError(f"{what} must be {'numbers' if fmt == 'd' else 'integers'}, not {t.__name__}")
    try:
        arr = array.array(fmt, values)
    except (TypeError, OverflowError) as e:
        if isinstance(e, OverflowError):
            raise OverflowError(f"{what}: a value is outside int64") from None
        raise TypeError(f"{what} must be a sequence of numbers or a 1-d buffer of them") from None
    n = len(arr)
    if n == 0:
        return None, None, 0
    addr, _ = arr.buffer_info()
    return arr, addr, n


class Repo:
    """A tracking repository: runs, parameters, metric series and points.

    ``Repo(location, read_only=False, **options)`` opens (and, unless
    read-only, creates) the repository at location: a folder,
    ``s3://bucket/prefix`` or ``memory://name``. Options:

    - ``flush_rows``: buffered points that trigger a flush (default 50,000);
    - ``flush_interval``: seconds a write stays buffered at most (default 5;
      negative: only explicit flushes);
    - ``max_fragments``: fragment count above which a flush compacts;
    - ``wal``: log writes in the local write-ahead log (default True), so a
      killed process loses no write that returned: every ``track``,
      ``set_params`` and run change is logged before it returns (handed to
      the OS; with ``wal_sync="always"`` also fsynced, which survives a
      power loss too) and replayed by the next writable open;
    - ``wal_dir``, ``wal_sync`` (``"batch"``, ``"none"``, ``"always"``): as
      for :class:`kv0.Options`;
    - ``data_format``: the Lance file format of a new repository's tables,
      ``"2.2"`` (the default) or ``"2.1"`` (for readers on lance 8 and
      older); an existing repository keeps its format, and asking for the
      other one raises InvalidArgument;
    - ``storage_options``: a dict for object stores.

    Environment variables (``AWS_*``, ``KV0_*``) are read from
    ``os.environ`` when the handle opens. A Repo is safe to use from many
    threads; a read-only one refuses writes with NotSupported. Close it
    (or use it as a context manager); handles left open are closed, and so
    flushed, at interpreter exit.
    """

    def __init__(self, location, read_only=False, **options):
        self._h = 0
        unknown = set(options) - _REPO_OPTIONS
        if unknown:
            raise TypeError(f"Repo has no option {', '.join(sorted(unknown))} (known: {', '.join(sorted(_REPO_OPTIONS))})")
        o = dict(options)
        if o.get("wal_sync") is not None and not isinstance(o["wal_sync"], str):
            o["wal_sync"] = "always" if o["wal_sync"] else "none"
        if hasattr(o.get("flush_interval"), "total_seconds"):
            o["flush_interval"] = o["flush_interval"].total_seconds()
        o["read_only"] = bool(read_only)
        self._read_only = bool(read_only)
        self._location = _native.path_of(location)
        ob = _json_arg(o)
        env = _native.environment()
        res = out()
        check(lib.kv0_repo_open(self._location, len(self._location), ob, len(ob), env, len(env), res), res)
        self._h = res.num
        _native.register(self)

    def _call(self, method, **args):
        m = method.encode()
        a = _json_arg(args) if args else b""
        o = out()
        check(lib.kv0_repo_call(self._h, m, len(m), a, len(a), o), o)
        data = take(o)
        return (json.loads(data) if data else None), o.num

    # -- runs

    def start_run(self, name=None, experiment=None, description=None, tags=(), params=None, kind=None,
                  target=None, run_id=None):
        """Start a run (status "running") and return its :class:`Run`.
        params are set on it at once; target (what the run is about) is
        JSON text or a JSON-serialisable object; run_id chooses the run's id
        (default: a new random one; Conflict when a run has it)."""
        if isinstance(tags, str):
            raise TypeError("tags must be a list of strings, not a str")
        spec = {"name": name or "", "experiment": experiment or "", "description": description or "",
                "tags": list(tags or ()), "kind": kind or ""}
        if run_id is not None:
            spec["id"] = _str(run_id, "run_id")
        if target is not None:
            spec["target"] = target if isinstance(target, str) else json.dumps(target, sort_keys=True)
        if params:
            if not isinstance(params, dict):
                raise TypeError(f"params must be a dict, not {type(params).__name__}")
            spec["params"] = params
        run_id, h = self._call("start_run", spec=spec)
        return Run(self, h, run_id)

    def resume_run(self, run_id):
        """A :class:`Run` writing to an existing run; default steps continue
        after each series' last step. NotFound for unknown or deleted runs;
        Conflict when another writer holds the run (a process of this host,
        a live writer elsewhere, or one that resumed it at the same time)."""
        rid, h = self._call("resume_run", run_id=_str(run_id, "run_id"))
        return Run(self, h, rid)

    def runs(self, **filters):
        """The live runs, oldest first, as ``kv0 runs --json`` prints them.
        Filters: experiment, status, tags (runs carrying every one),
        archived (bool), params (a list of (key, op, value), op one of =,
        !=, <, <=, >, >=)."""
        unknown = set(filters) - set(_FILTERS)
        if unknown:
            raise TypeError(f"runs() has no filter {', '.join(sorted(unknown))} (one of {', '.join(_FILTERS)})")
        if "tags" in filters and not isinstance(filters["tags"], str):
            filters["tags"] = list(filters["tags"])
        if "params" in filters:
            filters["params"] = [list(p) for p in filters["params"]]
        return self._call("runs", filters=filters)[0]

    def run(self, run_id):
        """One run as ``kv0 run --json`` prints it (NotFound if unknown)."""
        return self._call("run", run_id=_str(run_id, "run_id"))[0]

    def all_params(self, run_id):
        """A run's parameters by dotted key (``optimizer.lr``), as ``kv0
        params --json`` prints them."""
        return self._call("all_params", run_id=_str(run_id, "run_id"))[0]

    def all_series(self, run_id):
        """A run's metric series with their statistics, as ``kv0 series
        --json`` prints them: dicts with series_id, run_id, name, context
        (a dict, as track() takes it: {} for none), created_at and, once it
        has points, stats."""
        series = self._call("all_series", run_id=_str(run_id, "run_id"))[0]
        for s in series:
            ctx = s.get("context")
            s["context"] = json.loads(ctx) if isinstance(ctx, str) and ctx else (ctx or {})
            if "stats" in s:
                _fix_stats(s["stats"])
        return series

    def series_stats(self, ids=None):
        """Statistics of the series ids (every series of a live run when
        None), as a dict by series id; series without points are absent."""
        if ids is not None:
            ids = [int(i) for i in ids]
        res = self._call("series_stats", ids=ids)[0]
        return {s["series_id"]: _fix_stats(s) for s in res}

    def read_many(self, series_ids, max_points=None, steps=None, time=None):
        """The points of several series, one dict per id in order:
        ``{series_id, steps, values, timestamps, epochs}``, ordered by step
        with one point per step. Columns are numpy arrays when numpy is
        importable, else ``array.array``\\ s ('q' steps and epochs, 'd'
        values and timestamps in seconds since the epoch; NO_EPOCH marks a
        point without epoch).

        steps is a (from, to) range of steps (to excluded) or a range;
        time is a (from, to) range of timestamps (seconds or datetimes);
        max_points downsamples each series, keeping the first and last
        point and each bucket's minimum and maximum."""
        ids = array.array("Q", [int(i) for i in series_ids])
        opts = {}
        if max_points:
            opts["max_points"] = int(max_points)
        if steps is not None:
            if isinstance(steps, range):
                if steps.step != 1:
                    raise ValueError("read_many: a steps range must have step 1")
                steps = (steps.start, steps.stop)
            a, b = steps
            opts["steps"] = [int(a), int(b)]
        if time is not None:
            a, b = time
            opts["time"] = [a.timestamp() if hasattr(a, "timestamp") else float(a),
                            b.timestamp() if hasattr(b, "timestamp") else float(b)]
        ob = _json_arg(opts) if opts else b""
        addr = ids.buffer_info()[0] if len(ids) else None
        o = out()
        check(lib.kv0_repo_read_many(self._h, addr, len(ids), ob, len(ob), o), o)
        count = o.num
        data = _native.take_bytearray(o)
        res = []
        off = 0
        mv = memoryview(data)
        for _ in range(count):
            sid, n = _HDR.unpack_from(data, off)
            off += 16
            cols = []
            for fmt in ("q", "d", "d", "q"):
                if _np is not None:
                    cols.append(_np.frombuffer(data, dtype="<i8" if fmt == "q" else "<f8", count=n, offset=off))
                else:
                    a = array.array(fmt)
                    a.frombytes(mv[off:off + 8 * n])
                    cols.append(a)
                off += 8 * n
            res.append({"series_id": sid, "steps": cols[0], "values": cols[1], "timestamps": cols[2],
                        "epochs": cols[3]})
        return res

    def update_run(self, run_id, **fields):
        """Change fields of a run (name, experiment, description, tags,
        status, archived, ended_at, kind, target); only those are written."""
        self._call("update_run", run_id=_str(run_id, "run_id"), fields=_fields(fields))

    def delete_runs(self, run_ids):
        """Delete runs and everything they hold (NotFound for unknown ids,
        before anything is written)."""
        if isinstance(run_ids, str):
            run_ids = [run_ids]
        self._call("delete_runs", ids=[_str(r, "run id") for r in run_ids])

    def optimize(self):
        """Fold the change logs, sort metrics and index them; returns what
        was rewritten."""
        return self._call("optimize")[0]

    def purge(self, force=False):
        """Remove deleted runs from storage entirely (Conflict when a tag on
        an older version keeps their rows, unless force)."""
        self._call("purge", force=bool(force))

    def flush(self):
        """Commit every buffered write to storage now."""
        self._call("flush")

    def latest_versions(self):
        """The newest committed version of each table, for cheap change
        detection: ``{"runs", "params", "series", "metrics"}`` (0 for a
        table not written yet) and ``"records"`` (per records table, when
        any). Reads only version listings; does not flush the buffer."""
        return self._call("latest_versions")[0]

    def flush_wal(self):
        """Fsync the local write-ahead log: when it returns, every write made
        so far survives a power loss too (a killed process loses none of
        them in any ``wal_sync`` mode)."""
        self._call("flush_wal")

    @property
    def read_only(self):
        """Whether the handle refuses writes."""
        return self._read_only

    def close(self):
        """Flush and close the repository and its runs' handles. A second
        close does nothing."""
        h, self._h = self._h, 0
        if not h:
            return
        _native.unregister(self)
        o = out()
        m = b"close"
        check(lib.kv0_repo_call(h, m, len(m), None, 0, o), o)

    @property
    def closed(self):
        """Whether close() was called."""
        return not self._h

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", 0) and not _native.forked:
            try:
                self.close()
            except Exception:
                pass

    def __repr__(self):
        return f"<kv0.tracking.Repo {self._location.decode(errors='replace')!r}{' closed' if not self._h else ''}>"


def _fix_stats(s):
    """Non-finite statistics arrive as the strings NaN, Infinity, -Infinity."""
    for k in _STAT_FLOATS:
        if isinstance(s.get(k), str):
            s[k] = float(s[k])
    return s


def _str(v, what):
    if not isinstance(v, str):
        raise TypeError(f"{what} must be a str, not {type(v).__name__}")
    return v


class Run:
    """A writing handle on one run (from :meth:`Repo.start_run` or
    :meth:`Repo.resume_run`). Its writes go to the repository's buffer.
    Safe to use from many threads.

    As a context manager it finishes the run on exit: "finished", or
    "failed" when an exception escapes.
    """

    def __init__(self, repo, handle, run_id):
        self._repo = repo
        self._h = handle
        self._id = run_id
        self._slots = {}

    @property
    def id(self):
        """The run id."""
        return self._id

    @property
    def repo(self):
        """The Repo the run writes to."""
        return self._repo

    def _slot(self, name, context, key):
        if not isinstance(name, str):
            raise TypeError(f"a metric name must be a str, not {type(name).__name__}")
        if context is not None and not isinstance(context, dict):
            raise TypeError(f"a context must be a dict, not {type(context).__name__}")
        args = {"name": name}
        if context:
            args["context"] = context
        a = json.dumps(args, allow_nan=False).encode()
        o = out()
        check(lib.kv0_run_call(self._h, b"series", 6, a, len(a), o), o)
        packed = (self._h << 32) | (o.num << 2)  # kv0_run_track's first argument
        self._slots[key] = packed
        return packed

    def track(self, value, name, step=None, epoch=None, context=None):
        """Track one point of the series (name, context). step defaults to
        one past the series' last step in this handle (0 for a new
        series)."""
        base = self._slots.get((name, _ctx_key(context)) if context else name)
        if base is None:
            base = self._slot(name, context, (name, _ctx_key(context)) if context else name)
        # ctypes passes an int outside int64 on cut to 64 bits: such a step
        # or epoch (and a bool) takes the checked path below.
        if step is not None and (type(step) is not int or not _I64_MIN <= step <= _I64_MAX):
            step = _int(step, "step")
        if epoch is not None and (type(epoch) is not int or not _I64_MIN <= epoch <= _I64_MAX):
            epoch = _int(epoch, "epoch")
        try:
            if step is None:
                if epoch is None:
                    code = lib.kv0_run_track(base, value, 0, 0)
                else:
                    code = lib.kv0_run_track(base | _TRACK_EPOCH, value, 0, epoch)
            elif epoch is None:
                code = lib.kv0_run_track(base | _TRACK_STEP, value, step, 0)
            else:
                code = lib.kv0_run_track(base | _TRACK_STEP | _TRACK_EPOCH, value, step, epoch)
        except ctypes.ArgumentError:
            flags = (0 if step is None else _TRACK_STEP) | (0 if epoch is None else _TRACK_EPOCH)
            code = lib.kv0_run_track(base | flags, _float(value), 0 if step is None else _int(step, "step"),
                                     0 if epoch is None else _int(epoch, "epoch"))
        if code:
            raise _native.thread_error(code)

    def track_many(self, name, values, steps=None, context=None, epoch=None):
        """Track many points of one series in one call: values is a
        sequence of numbers, an ``array.array('d')`` or any 1-d float64
        buffer (a numpy array), passed without per-point Python work; steps
        (the same length, int64) default to consecutive steps after the
        series' last one. Booleans and complex numbers are TypeErrors, as in
        track(). epoch applies to every point, and so does the timestamp
        (one reading of the clock per 4,096 points). The points are logged
        in the WAL before the call returns; on an error, those before it
        are tracked (the message says how many) and none after. A signal
        (Ctrl-C) is handled between chunks of 65,536 points: the
        KeyboardInterrupt leaves the chunks before it tracked."""
        key = (name, _ctx_key(context)) if context else name
        packed = self._slots.get(key)
        if packed is None:
            packed = self._slot(name, context, key)
        slot = (packed & 0xFFFFFFFF) >> 2
        vk, vp, n = _buffer(values, "d", "values")
        sk, sp = None, None
        if steps is not None:
            sk, sp, ns = _buffer(steps, "q", "steps")
            if ns != n:
                raise ValueError(f"track_many: {n} values but {ns} steps")
        flags = 0
        if epoch is None:
            epoch = 0
        else:
            flags = _TRACK_EPOCH
            epoch = _int(epoch, "epoch")
        # One native call per chunk, so that a signal (Ctrl-C) is handled
        # between chunks instead of after the whole call.
        done = 0
        while done < n:
            k = min(n - done, _TRACK_MANY_CHUNK)
            o = out()
            code = lib.kv0_run_track_many(self._h, slot, vp + 8 * done, None if sp is None else sp + 8 * done,
                                          k, epoch, flags, o)
            if code:
                e = _native.error(code, o)
                e.args = (f"{e.args[0]} (after {done + o.num} of {n} points)",)
                raise e
            done += k
        del vk, sk

    def set_params(self, params):
        """Merge parameters into the run: nested dicts flatten to dotted
        keys, lists and scalars are leaves; setting a key keeps its
        siblings."""
        if not isinstance(params, dict):
            raise TypeError(f"params must be a dict, not {type(params).__name__}")
        self._run_call("set_params", params=params)

    def update(self, **fields):
        """Change fields of the run (name, experiment, description, tags,
        status, archived, ended_at, kind, target)."""
        self._run_call("update", fields=_fields(fields))

    def finish(self, status="finished", ended_at=None):
        """Set the status (finished, failed, aborted) and end time (now, or
        ended_at: a datetime or seconds since the epoch), then flush the
        repository."""
        args = {"status": _str(status, "status")}
        if ended_at is not None:
            if isinstance(ended_at, datetime.datetime):
                ended_at = ended_at.timestamp()
            elif isinstance(ended_at, bool) or not isinstance(ended_at, (int, float)):
                raise TypeError(f"ended_at must be a datetime or seconds since the epoch, not {type(ended_at).__name__}")
            args["ended_at"] = float(ended_at)
        self._run_call("finish", **args)

    def _run_call(self, method, **args):
        m = method.encode()
        a = json.dumps(args, allow_nan=False).encode()
        o = out()
        check(lib.kv0_run_call(self._h, m, len(m), a, len(a), o), o)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # The run ends as its block did: finished, failed on an exception,
        # aborted on Ctrl-C (as kv0 track marks SIGINT), and by exit code
        # on sys.exit.
        if exc_type is None:
            status = "finished"
        elif issubclass(exc_type, KeyboardInterrupt):
            status = "aborted"
        elif issubclass(exc_type, SystemExit):
            status = "finished" if exc.code in (None, 0) else "failed"
        else:
            status = "failed"
        try:
            self.finish(status)
        except errors.Error:
            if exc_type is None:
                raise
            # The block's own exception is what the caller needs to see
            # (the repository may have been closed inside it).

    def __repr__(self):
        return f"<kv0.tracking.Run {self._id}>"


def _float(v):
    if isinstance(v, (str, bytes, bytearray)):  # float() would parse them
        raise TypeError(f"a metric value must be a number, not {type(v).__name__}")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise TypeError(f"a metric value must be a number, not {type(v).__name__}") from None


_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _int(v, what):
    """v as an int64, for a step or an epoch: TypeError for anything but an
    int (a bool included), OverflowError outside int64."""
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{what} must be an int, not {type(v).__name__}")
    i = v.__index__()
    if not _I64_MIN <= i <= _I64_MAX:
        raise OverflowError(f"{what} {i} is outside int64")
    return i


__all__ = ["Repo", "Run", "NO_EPOCH"]

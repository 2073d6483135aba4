"""The ordered key-value store: DB, Options, WriteBatch and iterators.

The API is the one Aim's storage uses (aimrocks): keys and values are
bytes, ``get`` returns None for a missing key, iterators start unpositioned
and are positioned with ``seek``, ``seek_for_prev``, ``seek_to_first`` or
``seek_to_last``.
"""

import ctypes
import json
import struct
from itertools import accumulate

from . import _native
from . import errors
from ._native import lib, out, take, check

_PUT, _DELETE, _DELETE_RANGE = 0, 1, 2
_OP_HEADER = struct.Struct("<BII")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_HEAD = struct.Struct("<II")

# Seek operations of kv0_iter_seek.
_SEEK_NONE, _SEEK_FIRST, _SEEK_LAST, _SEEK_GE, _SEEK_LE = 0, 1, 2, 3, 4
_FIRST_CHUNK, _MAX_CHUNK = 16, 1024


def _bytes(x, what="key"):
    if type(x) is bytes:
        return x
    if isinstance(x, bytes):
        return bytes(x)
    raise TypeError(f"{what} must be bytes, not {type(x).__name__}")


def _flags(sync, disable_wal):
    return (1 if sync else 0) | (2 if disable_wal else 0)


def _seconds(v, name):
    if v is None:
        return None
    if hasattr(v, "total_seconds"):
        return v.total_seconds()
    if isinstance(v, (int, float)):
        return float(v)
    raise TypeError(f"{name} must be seconds (int, float or timedelta), not {type(v).__name__}")


class Options:
    """A permissive bag of database options.

    kv0 reads its own options and ignores every other name (RocksDB tuning
    such as ``max_open_files`` or ``create_if_missing`` is accepted and has
    no effect), so code written for aimrocks runs unchanged. kv0's options:

    - ``write_buffer_size``: bytes of pending writes that trigger a commit
      (default 4 MiB);
    - ``flush_interval``: seconds a write stays uncommitted at most (default
      5; negative: only explicit flushes);
    - ``refresh_interval``: seconds between looks for other writers' commits
      (default 1; negative: never);
    - ``wal_sync``: the write-ahead log's durability, ``"batch"`` (default:
      fsync about every 100 ms), ``"none"`` or ``"always"``;
    - ``wal_dir``: root of the write-ahead logs (default ``$KV0_WAL_DIR`` or
      the user cache directory);
    - ``disable_wal``: no write-ahead log (unflushed writes die with the
      process);
    - ``lazy_value_threshold``: values longer than this many bytes stay in
      storage and are read on demand (default 4 KiB);
    - ``value_cache_size``: bytes of lazily read values kept cached
      (default 64 MiB);
    - ``max_fragments``: fragment count above which a flush compacts;
    - ``disable_snapshots``: neither load nor save the reopen snapshot;
    - ``data_format``: the Lance file format of a new database's data files,
      ``"2.2"`` (the default, what current Lance writes) or ``"2.1"`` (the
      newest lance 8 and older read); an existing database keeps its
      format, and asking for the other one raises InvalidArgument;
    - ``storage_options``: a dict for object stores (``aws_endpoint``,
      ``aws_region``, ``aws_access_key_id``, ``aws_secret_access_key``,
      ``aws_session_token``, ``allow_http``, ...).

    Options are set as keywords or attributes: ``Options(wal_sync="always")``
    or ``opts.write_buffer_size = 8 << 20``.
    """

    _KNOWN = {
        "write_buffer_size": int, "lazy_value_threshold": int, "value_cache_size": int,
        "max_fragments": int, "flush_interval": "seconds", "refresh_interval": "seconds",
        "wal_sync": str, "wal_dir": str, "disable_wal": bool, "disable_snapshots": bool,
        "data_format": str, "storage_options": dict,
    }

    def __init__(self, **kwargs):
        object.__setattr__(self, "_values", dict(kwargs))

    def __getattr__(self, name):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self._values[name] = value

    def __repr__(self):
        return f"kv0.Options({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"

    def _engine(self, extra=None):
        """The options kv0 reads, checked, as a dict for the engine."""
        vals = dict(self._values)
        if extra:
            vals.update(extra)
        res = {}
        for name, kind in self._KNOWN.items():
            v = vals.get(name)
            if v is None:
                continue
            if kind == "seconds":
                v = _seconds(v, name)
            elif kind is bool:
                v = bool(v)
            elif kind is int:
                if isinstance(v, bool) or not isinstance(v, int):
                    raise TypeError(f"option {name} must be an int, not {type(v).__name__}")
            elif kind is str:
                if name == "wal_sync" and isinstance(v, bool):
                    v = "always" if v else "none"
                elif not isinstance(v, str):
                    v = str(v)
            elif not isinstance(v, kind):
                raise TypeError(f"option {name} must be a {kind.__name__}, not {type(v).__name__}")
            res[name] = v
        return res


class ColumnFamilyHandle:
    """The default column family, the only one a kv0 database has."""

    name = b"default"
    id = 0
    is_valid = True

    def __repr__(self):
        return "<kv0.ColumnFamilyHandle b'default'>"


_DEFAULT_CF = ColumnFamilyHandle()


def _check_cf(column_family):
    if column_family is None or column_family is _DEFAULT_CF:
        return
    if isinstance(column_family, ColumnFamilyHandle) or getattr(column_family, "name", None) == b"default":
        return
    raise errors.NotSupported("kv0 databases have only the default column family")


class WriteBatch:
    """Puts, deletes and range deletes that :meth:`DB.write` applies
    atomically: readers see all or none of them, and they are committed
    together.

    ``len(batch)`` is the number of operations; iterating yields them in
    order as ``('Put', key, value)``, ``('Delete', key, b'')`` and
    ``('DeleteRange', begin, end)``.
    """

    __slots__ = ("_buf", "_n")

    def __init__(self, data=None):
        self._buf = bytearray()
        self._n = 0
        if data is not None:
            self._buf += _bytes(data, "data")
            self._n = sum(1 for _ in self)

    def put(self, key, value, column_family=None):
        """Add a put of key to value."""
        key, value = _bytes(key), _bytes(value, "value")
        if column_family is not None:
            _check_cf(column_family)
        b = self._buf
        b += _OP_HEADER.pack(_PUT, len(key), len(value))
        b += key
        b += value
        self._n += 1

    def delete(self, key, column_family=None):
        """Add a delete of key."""
        key = _bytes(key)
        if column_family is not None:
            _check_cf(column_family)
        self._buf += _OP_HEADER.pack(_DELETE, len(key), 0)
        self._buf += key
        self._n += 1

    delete_single = delete

    def delete_range(self, begin_key, end_key, column_family=None):
        """Add a delete of every key in [begin_key, end_key)."""
        a, b = _bytes(begin_key), _bytes(end_key)
        if column_family is not None:
            _check_cf(column_family)
        self._buf += _OP_HEADER.pack(_DELETE_RANGE, len(a), len(b))
        self._buf += a
        self._buf += b
        self._n += 1

    def merge(self, key, value, column_family=None):
        """Merge operators are not supported by kv0: raises NotSupported."""
        raise errors.NotSupported("kv0 has no merge operator")

    def clear(self):
        """Remove every operation."""
        self._buf.clear()
        self._n = 0

    def count(self):
        """The number of operations (as len())."""
        return self._n

    def data(self):
        """The serialized batch; WriteBatch(data) rebuilds it."""
        return bytes(self._buf)

    def __len__(self):
        return self._n

    def __iter__(self):
        buf = memoryview(self._buf)
        off, n = 0, len(buf)
        names = {_PUT: "Put", _DELETE: "Delete", _DELETE_RANGE: "DeleteRange"}
        while off < n:
            if n - off < _OP_HEADER.size:
                raise errors.InvalidArgument(f"write batch: truncated at offset {off}")
            op, la, lb = _OP_HEADER.unpack_from(buf, off)
            off += _OP_HEADER.size
            if op not in names or la + lb > n - off:
                raise errors.InvalidArgument(f"write batch: bad operation at offset {off - _OP_HEADER.size}")
            a = bytes(buf[off:off + la])
            b = bytes(buf[off + la:off + la + lb])
            off += la + lb
            yield (names[op], a, b)

    def __repr__(self):
        return f"<kv0.WriteBatch of {self._n} operations>"


class DB:
    """An ordered key-value database stored as a Lance dataset.

    ``DB(path, opts=None, column_families=None, read_only=False, *,
    version=None, **kwargs)`` opens (creating if needed, unless read-only)
    the database at path: a local folder, ``s3://bucket/prefix`` or
    ``memory://name`` (private to the handle, gone when it closes).
    ``opts`` is an :class:`Options`; keyword arguments are more options
    (``storage_options={...}`` for S3).
    ``column_families`` may name only ``b"default"`` (the one column family
    a kv0 database has). ``version`` opens that stored version read-only
    (time travel). A read-only handle refuses writes with
    :class:`kv0.errors.NotSupported`; opening a missing database read-only
    raises :class:`kv0.errors.NotFound`.

    Writes are applied to the handle's view at once, logged in a local
    write-ahead log and committed to storage in batches (``flush()`` commits
    now). A DB is safe to use from many threads. Close it (or use it as a
    context manager); handles left open are closed at interpreter exit.
    """

    def __init__(self, path, opts=None, column_families=None, read_only=False, *, version=None, **kwargs):
        self._h = self._hp = 0
        if column_families:
            for name in column_families:
                if name != b"default":
                    raise errors.NotSupported(f"column family {name!r}: kv0 databases have only the default one")
        if opts is None:
            opts = Options()
        elif not isinstance(opts, Options):
            raise TypeError(f"opts must be a kv0.Options, not {type(opts).__name__}")
        eng = opts._engine(kwargs)
        if version is not None:
            if isinstance(version, bool) or not isinstance(version, int) or version <= 0:
                raise ValueError(f"version must be a positive int, not {version!r}")
            eng["version"] = version
        self._read_only = bool(read_only) or version is not None
        if read_only:
            eng["read_only"] = True
        self._location = _native.path_of(path)
        self._version = version
        self._opts = opts
        o = out()
        ob = json.dumps(eng).encode()
        env = _native.environment()
        check(lib.kv0_db_open(self._location, len(self._location), ob, len(ob), env, len(env), o), o)
        self._h = o.num
        self._hp = o.num << 2  # the handle as kv0_db_put takes it, flags or'ed in
        _native.register(self)

    # -- reads

    def get(self, key, column_family=None):
        """The value of key, or None when it has none."""
        if type(key) is not bytes:
            key = _bytes(key)
        if column_family is not None:
            _check_cf(column_family)
        o, addr, mv, _ = _native.receive()
        code = lib.kv0_db_get(self._h, key, len(key), addr, _native.RECEIVE_SIZE, o)
        if code:
            raise _native.error(code, o)
        n = o.num
        if n == 1:
            return mv[:o.len].tobytes()
        if n == 0:
            return None
        return take(o)

    def multi_get(self, keys):
        """A dict of each key's value (None for keys without one), read in
        one call. A key may be given as (column_family, key)."""
        keys = list(keys)
        parts = []
        for k in keys:
            if isinstance(k, tuple):
                _check_cf(k[0])
                k = k[1]
            k = _bytes(k)
            parts.append(_U32.pack(len(k)))
            parts.append(k)
        buf = b"".join(parts)
        o = out()
        check(lib.kv0_db_multi_get(self._h, buf, len(buf), len(keys), o), o)
        data = take(o)
        res = {}
        off = 0
        for k in keys:
            if isinstance(k, tuple):
                k = k[1]
            (n,) = _I64.unpack_from(data, off)
            off += 8
            if n < 0:
                res[k] = None
            else:
                res[k] = data[off:off + n]
                off += n
        return res

    def key_may_exist(self, key, fetch=False, column_family=None):
        """(exists, value): kv0 answers exactly, so exists is True only for
        keys with a value; value is that value when fetch is set, else
        None."""
        v = self.get(key, column_family=column_family)
        if v is None:
            return (False, None)
        return (True, v if fetch else None)

    def iterkeys(self, column_family=None):
        """An unpositioned iterator over the keys (seek it first)."""
        _check_cf(column_family)
        return KeysIterator(self)

    def itervalues(self, column_family=None):
        """An unpositioned iterator over the values (seek it first)."""
        _check_cf(column_family)
        return ValuesIterator(self)

    def iteritems(self, column_family=None):
        """An unpositioned iterator over (key, value) pairs (seek it first)."""
        _check_cf(column_family)
        return ItemsIterator(self)

    # -- writes

    def put(self, key, value, sync=False, disable_wal=False, column_family=None, **kwargs):
        """Set key to value. sync commits it (and everything before it) to
        storage before returning; disable_wal skips the write-ahead log for
        this write."""
        if type(key) is not bytes:
            key = _bytes(key)
        if type(value) is not bytes:
            value = _bytes(value, "value")
        if column_family is not None:
            _check_cf(column_family)
        if sync or disable_wal:
            code = lib.kv0_db_put(self._hp | _flags(sync, disable_wal), key, len(key), value, len(value))
        else:
            code = lib.kv0_db_put(self._hp, key, len(key), value, len(value))
        if code:
            raise _native.thread_error(code)

    def delete(self, key, sync=False, disable_wal=False, column_family=None, **kwargs):
        """Delete key (deleting a missing key is not an error)."""
        key = _bytes(key)
        _check_cf(column_family)
        o = out()
        check(lib.kv0_db_delete(self._h, key, len(key), _flags(sync, disable_wal), o), o)

    delete_single = delete

    def delete_range(self, begin_key, end_key, sync=False, disable_wal=False, column_family=None, **kwargs):
        """Delete every key in [begin_key, end_key)."""
        a, b = _bytes(begin_key), _bytes(end_key)
        _check_cf(column_family)
        o = out()
        check(lib.kv0_db_delete_range(self._h, a, len(a), b, len(b), _flags(sync, disable_wal), o), o)

    def merge(self, key, value, sync=False, disable_wal=False, column_family=None, **kwargs):
        """Merge operators are not supported by kv0: raises NotSupported."""
        raise errors.NotSupported("kv0 has no merge operator")

    def write(self, batch, sync=False, disable_wal=False, **kwargs):
        """Apply a WriteBatch atomically (one call, one commit)."""
        if not isinstance(batch, WriteBatch):
            raise TypeError(f"write takes a kv0.WriteBatch, not {type(batch).__name__}")
        buf = batch._buf
        n = len(buf)
        ptr = (ctypes.c_char * n).from_buffer(buf) if n else None
        o = out()
        check(lib.kv0_db_write(self._h, ptr, n, _flags(sync, disable_wal), o), o)

    # -- maintenance

    def flush(self, *args, **kwargs):
        """Commit every buffered write to storage now."""
        o = out()
        check(lib.kv0_db_flush(self._h, o), o)

    def flush_wal(self, sync=True):
        """Make every write made so far durable in the local write-ahead log
        (an fsync, whatever sync says). Does nothing without a WAL."""
        o = out()
        check(lib.kv0_db_flush_wal(self._h, o), o)

    def compact_range(self, begin=None, end=None, **kwargs):
        """Commit the buffer and rewrite storage as the live view (the range
        is advisory: everything is rewritten)."""
        if begin is not None:
            _bytes(begin, "begin")
        if end is not None:
            _bytes(end, "end")
        _check_cf(kwargs.get("column_family"))
        o = out()
        check(lib.kv0_db_compact_range(self._h, o), o)

    def versions(self):
        """The stored versions, oldest first, as dicts
        ``{"version": int, "timestamp": "RFC 3339"}`` (``kv0 kv versions
        --json`` prints the same keys and each version's tags)."""
        o = out()
        check(lib.kv0_db_versions(self._h, o), o)
        return json.loads(take(o) or b"[]")

    def cleanup_old_versions(self, seconds):
        """Remove stored versions older than seconds (never the latest);
        returns how many were removed."""
        s = _seconds(seconds, "seconds")
        o = out()
        check(lib.kv0_db_cleanup_old_versions(self._h, s, o), o)
        return o.num

    def purge(self, force=False):
        """Remove deleted data from storage (see the operations guide); a tag
        keeping deleted keys raises Conflict unless force is set."""
        o = out()
        check(lib.kv0_db_purge(self._h, 1 if force else 0, o), o)

    def get_property(self, name, column_family=None):
        """A property as bytes, or None for names kv0 does not know:
        ``kv0.location``, ``kv0.read-only``, ``kv0.version`` (the version
        read: the opened one, or the latest stored)."""
        _check_cf(column_family)
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        if name == "kv0.location":
            return self._location
        if name == "kv0.read-only":
            return b"true" if self._read_only else b"false"
        if name == "kv0.version":
            if self._version is not None:
                return str(self._version).encode()
            vs = self.versions()
            return str(vs[-1]["version"] if vs else 0).encode()
        return None

    @property
    def version(self):
        """The version the handle reads: the opened one for a handle on a
        stored version, else the latest stored (0 before the first
        commit)."""
        return int(self.get_property("kv0.version"))

    # -- column families (only the default one exists)

    @property
    def column_families(self):
        """The column families: only the default one."""
        return [_DEFAULT_CF]

    def get_column_family(self, name):
        """The default column family for b"default"; NotSupported otherwise."""
        if name == b"default":
            return _DEFAULT_CF
        raise errors.NotSupported(f"column family {name!r}: kv0 databases have only the default one")

    def create_column_family(self, name, copts=None):
        """Not supported: raises NotSupported."""
        raise errors.NotSupported("kv0 databases have only the default column family")

    def drop_column_family(self, handle):
        """Not supported: raises NotSupported."""
        raise errors.NotSupported("kv0 databases have only the default column family")

    @property
    def options(self):
        """The Options the database was opened with."""
        return self._opts

    @property
    def read_only(self):
        """Whether the handle refuses writes."""
        return self._read_only

    # -- lifetime

    def close(self):
        """Commit buffered writes and close the handle (and its iterators).
        A second close does nothing."""
        h, self._h, self._hp = self._h, 0, 0
        if not h:
            return
        _native.unregister(self)
        o = out()
        check(lib.kv0_db_close(h, o), o)

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
        state = "closed" if not self._h else ("read-only" if self._read_only else "open")
        return f"<kv0.DB {self._location.decode(errors='replace')!r} {state}>"


class BaseIterator:
    """An iterator over a DB in key order, as aimrocks has them.

    It starts unpositioned: position it with :meth:`seek` (first key >=
    key), :meth:`seek_for_prev` (last key <= key), :meth:`seek_to_first` or
    :meth:`seek_to_last`. Then :meth:`get` peeks at the current entry
    (ValueError past the end), :meth:`next` returns it and advances (None
    past the end), :meth:`skip` advances; the iterator protocol yields
    forward and ``reversed(it)`` iterates backward from the current entry.

    Entries are fetched from the engine many per call. An iterator is not
    a snapshot: writes made while it runs may or may not be seen, but no
    key is returned twice or out of order.
    """

    _keys_only = False

    def __init__(self, db):
        self._db = db
        self._buf = []       # fetched entries, (key, value)
        self._i = 0          # index of the current entry in _buf
        self._dir = 1        # direction _buf was fetched in
        self._more = False   # the engine has entries beyond _buf in _dir
        self._pending = None  # (op, key) of a seek not sent yet
        self._chunk = _FIRST_CHUNK
        self._ih = 0
        o = out()
        check(lib.kv0_iter_new(db._h, 1 if self._keys_only else 0, o), o)
        self._ih = o.num

    def _fetch(self, op, key, direction):
        o = out()
        check(lib.kv0_iter_seek(self._ih, op, key, len(key), direction, self._chunk, o), o)
        data = take(o)
        n, more = _HEAD.unpack_from(data, 0)
        pos = 8 + 8 * n
        # Offsets of every key and value, then slices, all at C speed.
        offs = list(accumulate(memoryview(data)[8:pos].cast("I"), initial=pos))
        ks = [data[a:b] for a, b in zip(offs[0::2], offs[1::2])]
        if self._keys_only:
            self._buf = ks
        else:
            self._buf = list(zip(ks, [data[a:b] for a, b in zip(offs[1::2], offs[2::2])]))
        self._i, self._dir, self._more = 0, direction, bool(more)
        if self._chunk < _MAX_CHUNK:
            self._chunk *= 4

    def _current(self, direction):
        """The current entry for moving in direction, or None."""
        if not self._ih or not self._db._h:
            # Entries fetched before a close are not handed out after it.
            raise errors.Closed("kv0 iterator used after its database or itself was closed")
        if self._pending is not None:
            op, key = self._pending
            self._pending = None
            self._chunk = _FIRST_CHUNK
            self._fetch(op, key, direction)
        elif direction != self._dir:
            if self._i >= len(self._buf):
                if not self._more:
                    return None  # off the end: stays invalid, as in RocksDB
                # The current entry is the next one the engine holds: fetch
                # it before turning round from it.
                self._fetch(_SEEK_NONE, b"", self._dir)
                if self._i >= len(self._buf):
                    return None
            key = self._buf[self._i]
            if not self._keys_only:
                key = key[0]
            self._chunk = _FIRST_CHUNK
            self._fetch(_SEEK_GE if direction > 0 else _SEEK_LE, key, direction)
        elif self._i >= len(self._buf):
            if not self._more:
                return None
            self._fetch(_SEEK_NONE, b"", direction)
        if self._i < len(self._buf):
            return self._buf[self._i]
        return None

    def _ob(self, entry):
        return entry

    def seek_to_first(self):
        """Move to the first key."""
        self._pending = (_SEEK_FIRST, b"")

    def seek_to_last(self):
        """Move to the last key."""
        self._pending = (_SEEK_LAST, b"")

    def seek(self, key):
        """Move to the first key >= key."""
        self._pending = (_SEEK_GE, _bytes(key))

    def seek_for_prev(self, key):
        """Move to the last key <= key."""
        self._pending = (_SEEK_LE, _bytes(key))

    def get(self):
        """The current entry without moving; ValueError when the iterator is
        not on one."""
        e = self._current(self._dir)
        if e is None:
            raise ValueError("kv0 iterator is not positioned on an entry")
        return self._ob(e)

    def next(self):
        """The current entry, then move forward; None past the end."""
        e = self._current(1)
        if e is None:
            return None
        self._i += 1
        return self._ob(e)

    def skip(self):
        """Move forward without returning the entry; ValueError when the
        iterator is not on one."""
        if self._current(1) is None:
            raise ValueError("kv0 iterator is not positioned on an entry")
        self._i += 1

    def _prev(self):
        e = self._current(-1)
        if e is None:
            return None
        self._i += 1
        return self._ob(e)

    def __iter__(self):
        return self

    def __next__(self):
        i = self._i
        if self._dir == 1 and i < len(self._buf) and self._pending is None and self._db._h and self._ih:
            self._i = i + 1  # the common case: the next fetched entry
            return self._ob(self._buf[i])
        e = self._current(1)
        if e is None:
            raise StopIteration
        self._i += 1
        return self._ob(e)

    def __reversed__(self):
        return ReversedIterator(self)

    def close(self):
        """Release the iterator now (it is released when collected anyway)."""
        ih, self._ih = self._ih, 0
        if ih and not _native.forked:
            lib.kv0_iter_close(ih)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class KeysIterator(BaseIterator):
    """Iterates keys (see BaseIterator)."""

    _keys_only = True  # entries are keys alone

    def _ob(self, entry):
        return entry


class ValuesIterator(BaseIterator):
    """Iterates values (see BaseIterator)."""

    def _ob(self, entry):
        return entry[1]


class ItemsIterator(BaseIterator):
    """Iterates (key, value) pairs (see BaseIterator)."""


class ReversedIterator:
    """An iterator moving backward (``reversed(it)``): each step returns the
    current entry, then moves to the previous key. The seeks are those of
    the iterator it wraps."""

    def __init__(self, it):
        self.it = it

    def seek_to_first(self):
        """Move to the first key."""
        self.it.seek_to_first()

    def seek_to_last(self):
        """Move to the last key."""
        self.it.seek_to_last()

    def seek(self, key):
        """Move to the first key >= key."""
        self.it.seek(key)

    def seek_for_prev(self, key):
        """Move to the last key <= key."""
        self.it.seek_for_prev(key)

    def get(self):
        """The current entry (ValueError when not on one)."""
        return self.it.get()

    def next(self):
        """The current entry, then move backward; None past the front."""
        return self.it._prev()

    def __iter__(self):
        return self

    def __reversed__(self):
        return self.it

    def __next__(self):
        e = self.it._prev()
        if e is None:
            raise StopIteration
        return e

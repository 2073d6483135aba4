"""Loading libkv0.so and calling it (internal).

The library is kv0's Go engine built as a C shared library
(native/capi). Every call returns a status code and fills a ``kv0_out``
record: a malloc'ed buffer (the result, or the error message) that is
released with ``kv0_free``, and a number (a handle, a count, a flag).
ctypes releases the GIL around every foreign call, so waiting calls
(flushes, S3) never block other Python threads.
"""

import atexit
import ctypes
import os
import sys
import threading
import weakref

from . import errors

ABI_VERSION = 3


class Out(ctypes.Structure):
    """The kv0_out record."""

    _fields_ = [("data", ctypes.c_void_p), ("len", ctypes.c_int64), ("num", ctypes.c_int64)]


_I64 = ctypes.c_int64
_I32 = ctypes.c_int32
_P = ctypes.c_char_p  # byte strings in (bytes objects are passed without a copy)
_V = ctypes.c_void_p
_D = ctypes.c_double
_OUT = ctypes.POINTER(Out)

# name: argument types (every call returns int32 unless listed in _VOID).
_SIGNATURES = {
    "kv0_db_open": [_P, _I64, _P, _I64, _P, _I64, _OUT],
    "kv0_db_put": [_I64, _P, _I64, _P, _I64],
    "kv0_db_get": [_I64, _P, _I64, _V, _I64, _OUT],
    "kv0_db_delete": [_I64, _P, _I64, _I32, _OUT],
    "kv0_db_delete_range": [_I64, _P, _I64, _P, _I64, _I32, _OUT],
    "kv0_db_write": [_I64, _V, _I64, _I32, _OUT],
    "kv0_db_multi_get": [_I64, _P, _I64, _I64, _OUT],
    "kv0_db_flush": [_I64, _OUT],
    "kv0_db_flush_wal": [_I64, _OUT],
    "kv0_db_compact_range": [_I64, _OUT],
    "kv0_db_versions": [_I64, _OUT],
    "kv0_db_cleanup_old_versions": [_I64, _D, _OUT],
    "kv0_db_purge": [_I64, _I32, _OUT],
    "kv0_db_close": [_I64, _OUT],
    "kv0_iter_new": [_I64, _I32, _OUT],
    "kv0_iter_seek": [_I64, _I32, _P, _I64, _I32, _I64, _OUT],
    "kv0_iter_close": [_I64],
    "kv0_repo_open": [_P, _I64, _P, _I64, _P, _I64, _OUT],
    "kv0_repo_call": [_I64, _P, _I64, _P, _I64, _OUT],
    "kv0_repo_read_many": [_I64, _V, _I64, _P, _I64, _OUT],
    "kv0_run_call": [_I64, _P, _I64, _P, _I64, _OUT],
    "kv0_run_track": [_I64, _D, _I64, _I64],
    "kv0_run_track_many": [_I64, _I64, _V, _V, _I64, _I64, _I32, _OUT],
    "kv0_free": [_V],
    "kv0_take_error": [_OUT],
    "kv0_abi_version": [],
}
_VOID = {"kv0_iter_close", "kv0_free", "kv0_take_error"}
_RESTYPE = {"kv0_abi_version": _I64}


def _library_path():
    override = os.environ.get("KV0_LIBRARY")
    if override:
        return override
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libkv0.so")


class _Lib:
    """The library's functions as attributes. After os.fork() the child's
    instance is emptied so that every call raises ForkedProcess."""


lib = _Lib()
_cdll = ctypes.CDLL(_library_path())
for _name, _args in _SIGNATURES.items():
    _f = getattr(_cdll, _name)
    _f.argtypes = _args
    _f.restype = None if _name in _VOID else _RESTYPE.get(_name, _I32)
    setattr(lib, _name, _f)
if lib.kv0_abi_version() != ABI_VERSION:
    raise ImportError(f"kv0: {_library_path()} has ABI version {lib.kv0_abi_version()}, this package wants {ABI_VERSION}")

_free = lib.kv0_free
forked = False


def _refuse(*_args, **_kwargs):
    raise errors.ForkedProcess(
        "kv0 cannot be used in a child of os.fork(): the Go engine's threads do not survive a fork, "
        "and the parent's open handles (and their write-ahead logs) belong to the parent. "
        "Open handles after the fork, in the child, only if kv0 was never loaded before it; "
        "otherwise use multiprocessing's 'spawn' start method")


def _after_fork_in_child():
    global forked
    forked = True
    for name in _SIGNATURES:
        setattr(lib, name, _refuse)
    _open.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)

_tls = threading.local()


def out():
    """The calling thread's kv0_out record."""
    try:
        return _tls.out
    except AttributeError:
        o = _tls.out = Out()
        return o


RECEIVE_SIZE = 64 << 10


def receive():
    """The calling thread's receive buffer: (kv0_out, address, memoryview)
    of RECEIVE_SIZE bytes the engine copies small results into, saving the
    allocation, copy and free of a kv0_out buffer."""
    try:
        return _tls.recv
    except AttributeError:
        b = bytearray(RECEIVE_SIZE)
        arr = (ctypes.c_char * RECEIVE_SIZE).from_buffer(b)
        r = _tls.recv = (out(), ctypes.addressof(arr), memoryview(b), arr)
        return r


def take(o):
    """The bytes of o's buffer (b"" when empty); frees the buffer."""
    p = o.data
    if not p:
        return b""
    b = ctypes.string_at(p, o.len)
    o.data = None
    _free(p)
    return b


def take_bytearray(o):
    """take, into a writable bytearray."""
    p = o.data
    if not p:
        return bytearray()
    n = o.len
    b = bytearray(n)
    ctypes.memmove((ctypes.c_char * n).from_buffer(b), p, n)
    o.data = None
    _free(p)
    return b


_CLASSES = {
    1: errors.NotFound,
    2: errors.StoreIOError,
    3: errors.Corruption,
    4: errors.NotSupported,
    5: errors.InvalidArgument,
    6: errors.Conflict,
    7: errors.Closed,
    9: errors.WALCorruption,
}


def error(code, o):
    """The exception for status code and o's message."""
    msg = take(o).decode("utf-8", "replace")
    return _CLASSES.get(code, errors.Error)(msg)


def thread_error(code):
    """The exception of a failed call that takes no kv0_out (put, track):
    the engine kept its message for the calling thread."""
    o = out()
    lib.kv0_take_error(o)
    return error(code, o)


def check(code, o):
    """Raise the error of a failed call."""
    if code:
        raise error(code, o)


def environment():
    """The variables the engine reads (KV0_*, AWS_*), from os.environ now,
    as NUL-separated NAME=VALUE entries: the Go runtime keeps its own copy
    of the environment, so every open sends the current one."""
    parts = [f"{k}={v}" for k, v in os.environ.items() if k.startswith(("KV0_", "AWS_"))]
    return "\0".join(parts).encode() or b"\0"


def path_of(location):
    """A location (str, bytes or os.PathLike) as UTF-8 bytes."""
    loc = os.fspath(location)
    if not isinstance(loc, (str, bytes)):
        raise TypeError(f"a location must be a str or os.PathLike, not {type(location).__name__}")
    if not loc.strip():
        # Resolved as a path it would be the current directory.
        raise errors.InvalidArgument(f"location {location!r} is empty: give a folder, memory://NAME or a URI")
    return loc if isinstance(loc, bytes) else loc.encode()


# Handles still open, closed (so flushed) at interpreter exit.
_open = weakref.WeakSet()


def register(handle):
    """Close handle at interpreter exit if it is still open then."""
    _open.add(handle)


def unregister(handle):
    _open.discard(handle)


@atexit.register
def _close_all():
    if forked:
        return
    for h in list(_open):
        try:
            h.close()
        except Exception as e:  # keep closing the others
            print(f"kv0: closing {h!r} at exit: {e}", file=sys.stderr)

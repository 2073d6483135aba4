"""Exceptions raised by kv0.

Every error of the Go engine arrives as one of these classes, chosen on the
Go side with ``errors.Is`` against the engine's sentinel errors:

- :class:`NotFound` (also a :class:`FileNotFoundError`): a missing database,
  repository, run or key where one is required;
- :class:`StoreIOError` (also an :class:`OSError`): the store or the local
  write-ahead log failed;
- :class:`Corruption`: stored bytes failed validation;
- :class:`WALCorruption` (also a :class:`Corruption`): a segment of the local
  write-ahead log is damaged; every writable open of the database or
  repository fails until ``kv0 wal salvage LOCATION`` (the message names it)
  keeps the records before the damage and moves the segment aside;
- :class:`NotSupported`: the handle cannot do it (a write on a read-only
  handle, a column family other than the default one, merge);
- :class:`InvalidArgument` (also a :class:`ValueError`): a bad argument;
- :class:`Conflict`: a concurrent writer won, something already exists, or a
  tag keeps deleted data;
- :class:`Closed`: the handle was closed;
- :class:`ForkedProcess` (also a :class:`RuntimeError`): the call was made in
  a child of ``os.fork()``, where the engine cannot run.

All of them derive from :class:`Error`.
"""


class Error(Exception):
    """Base class of every kv0 error."""


class NotFound(Error, FileNotFoundError):
    """A database, repository, run, series or key does not exist."""


class StoreIOError(Error, OSError):
    """The store (a local folder, S3) or the local write-ahead log failed."""


RocksIOError = StoreIOError
"""The name aimrocks gives to I/O errors, kept so code written for it runs."""


class Corruption(Error):
    """Stored bytes failed validation; the message names the file."""


class WALCorruption(Corruption):
    """A segment of the local write-ahead log is damaged (a record fails its
    checksum; an append cut short by a crash is not damage and is dropped
    on its own).

    Every writable open of the database or repository fails with it until
    the command the message names, ``kv0 wal salvage LOCATION``, has kept
    the records before the damage (the next writable open replays them,
    each once) and moved the damaged segment into the log's ``damaged/``
    folder. ``kv0 wal check LOCATION`` reports the damage without changing
    anything. The message also names the segment file and the offset.
    """


class NotSupported(Error):
    """The handle cannot perform the operation (e.g. a write on a read-only
    handle)."""


class InvalidArgument(Error, ValueError):
    """An argument is invalid (an empty metric name, a bad option value)."""


class Conflict(Error):
    """A concurrent change won, an object already exists, or a tag keeps data
    that an operation would delete."""


class Closed(Error):
    """The handle (or its database or repository) was closed."""


class ForkedProcess(Error, RuntimeError):
    """kv0 was called in a child of ``os.fork()``.

    The engine's threads do not survive a fork, so a child can neither use
    the handles it inherited nor open new ones: open them after the fork,
    or start processes with ``multiprocessing``'s "spawn" method.
    """


__all__ = ["Error", "NotFound", "StoreIOError", "RocksIOError", "Corruption", "WALCorruption", "NotSupported",
           "InvalidArgument", "Conflict", "Closed", "ForkedProcess"]

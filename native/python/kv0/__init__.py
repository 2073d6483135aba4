"""kv0: an embedded storage engine on Lance datasets, for Python.

Two layers, both stored as Lance datasets on a local folder, S3 or memory:

- :class:`DB`, an ordered key-value store with the API of aimrocks
  (``get``/``put``/``delete``/``write(WriteBatch)``, iterators with
  ``seek``), plus versions and time travel;
- :mod:`kv0.tracking`, the storage of an ML experiment tracker:
  :class:`kv0.tracking.Repo` and :class:`kv0.tracking.Run`.

Writes are logged in a local write-ahead log and committed in batches; a
handle still open at interpreter exit is closed (and so flushed) then.
Errors are the classes of :mod:`kv0.errors`.
"""

# make python writes core/version/version.go's Version here.
__version__ = "@VERSION@"

from . import errors  # noqa: E402
from .db import (  # noqa: E402
    DB, Options, WriteBatch, ColumnFamilyHandle, BaseIterator, KeysIterator, ValuesIterator, ItemsIterator,
    ReversedIterator,
)
from . import tracking  # noqa: E402

__all__ = ["DB", "Options", "WriteBatch", "ColumnFamilyHandle", "BaseIterator", "KeysIterator",
           "ValuesIterator", "ItemsIterator", "ReversedIterator", "errors", "tracking", "__version__"]

"""ThicketDB: a persistent, ordered key-value store (Python bindings).

>>> import thicketdb
>>> with thicketdb.DB("/tmp/example-db") as db:
...     db.put(b"apple", b"red")
...     db[b"apple"]
b'red'
"""

from ._errors import (
    ClosedError,
    CorruptionError,
    Error,
    InvalidArgumentError,
    IOError,
    KeyspaceNotFoundError,
    LockedError,
    NoSpaceError,
    NotFoundError,
)
from ._thicketdb import PROFILES, DB, Iterator, Keyspace, Snapshot, WriteBatch, destroy, repair

__all__ = [
    "PROFILES",
    "DB",
    "Iterator",
    "Keyspace",
    "Snapshot",
    "WriteBatch",
    "destroy",
    "repair",
    "Error",
    "CorruptionError",
    "InvalidArgumentError",
    "IOError",
    "NoSpaceError",
    "LockedError",
    "ClosedError",
    "NotFoundError",
    "KeyspaceNotFoundError",
]

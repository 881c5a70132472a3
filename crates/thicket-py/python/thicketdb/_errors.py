"""Exceptions raised by thicketdb (the native module raises these)."""


class Error(Exception):
    """Base class of every thicketdb error."""


class CorruptionError(Error):
    """Stored data failed a checksum or could not be decoded."""


class InvalidArgumentError(Error, ValueError):
    """The store refused an argument or option (also a ValueError)."""


class IOError(Error, OSError):  # noqa: A001 - the engine's name for it
    """An operating-system I/O error."""


class NoSpaceError(IOError):
    """The device is full."""


class LockedError(Error):
    """Another process, or another DB object in this one, holds the store."""


class ClosedError(Error):
    """The store was closed."""


class NotFoundError(Error, KeyError):
    """``db[key]`` found no value (also a KeyError)."""


class KeyspaceNotFoundError(NotFoundError):
    """No keyspace of that name: never created, or dropped (also a KeyError)."""

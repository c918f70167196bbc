"""One locked operation on a file nobody keeps open: open, lock, work, unlock, close.

A ``JSONLSession`` keeps its file's descriptor between calls (``locking.FileHandle``). Every
other piece of code that touches a session or sidecar file once (``check``, a folder
listing's counts, deleting a session, an edit's snapshot and merge, a fork's lineage check,
``grep``, a sidecar append, a rendered page) enters :class:`Transaction` instead, so the
pairing of open, lock, unlock and close, and what happens when a signal lands between them,
is written once (after diskcache's ``_transact`` and tinydb's ``_update_table``).

Example:
    >>> with Transaction("sessions/convo_123.jsonl", write=False) as file:    # doctest: +SKIP
    ...     if file.exists:
    ...         data = reads.read_range(file.fd, 0, file.size)
"""

from __future__ import annotations

from .locking import BUSY, DEFAULT_LOCK_TIMEOUT, MISSING, FileHandle

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from os import PathLike
    from types import TracebackType


class Transaction:
    """A ``with`` block holding ``path``'s lock: shared to read, exclusive to ``write``.

    The block gets this object: ``fd`` is the locked descriptor, or ``MISSING`` when the file
    does not exist and ``create`` is false (then nothing is held: check :attr:`exists`), or
    ``BUSY`` when ``timeout`` is None and someone else holds the lock (check :attr:`busy`).
    A class rather than ``contextlib.contextmanager``: ``jsonl-session ls`` counts every
    session through it, and contextlib is an import and a generator per file.

    Args:
        path: The file.
        write: Take the lock exclusively (to change the file).
        create: Create the file (owner-only) if it does not exist.
        timeout: Seconds to wait for another process's lock before ``LockTimeout``; None: do
            not wait at all (``grep`` locks a batch of files and never waits holding the others).
        durable: Fsync the folder when the file is created.

    Raises:
        LockTimeout: another process or thread kept the lock longer than ``timeout``.
    """

    __slots__ = ("_handle", "_locked", "fd")

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        write: bool,
        create: bool = False,
        timeout: float | None = DEFAULT_LOCK_TIMEOUT,
        durable: bool = True,
    ) -> None:
        self._handle = FileHandle(path, durable=durable)
        if timeout is None:
            self._locked = self._handle.try_locked(write=write, create=create)
        else:
            self._locked = self._handle.locked(write=write, create=create, timeout=timeout)
        self.fd = MISSING

    def __enter__(self) -> Transaction:  # noqa: PYI034  (Self needs 3.11)
        locked = False
        try:
            self.fd = self._locked.__enter__()
            locked = True
            return self
        except BaseException:  # a signal between the lock and the block: unlock, then close
            if locked:
                self._locked.__exit__(None, None, None)
            self._handle.close()
            raise

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            self._locked.__exit__(kind, error, trace)
        finally:
            self._handle.close()

    @property
    def exists(self) -> bool:
        """Whether the file existed and is locked (``fd`` is ``MISSING`` or ``BUSY`` otherwise)."""
        return self.fd >= 0

    @property
    def busy(self) -> bool:
        """Whether the lock was held elsewhere (only without a ``timeout``): nothing is held then."""
        return self.fd == BUSY

    @property
    def size(self) -> int:
        """The file's size, read under the lock."""
        return self._handle.size

    def sync_folder_once(self) -> None:
        """Before an in-place durable write: make the file's name durable (see ``FileHandle``)."""
        self._handle.sync_folder_once()

    def replaced(self) -> None:
        """The file was replaced or deleted inside the block (``FileHandle.replaced``)."""
        self._handle.replaced()

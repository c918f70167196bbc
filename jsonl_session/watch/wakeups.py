"""Wake-ups: ``watchfiles.watch`` on the folder, fast while sessions are active, slow when quiet.

It watches the *folder*, so creation, deletion and rename of session files are seen too (an
inotify watch on a deleted file is useless). ``watchfiles`` looks for events every ``step``
milliseconds, which sets both the latency (one to two steps) and the idle CPU (each look is
a wake-up of a thread that takes the GIL). A step is fixed for the life of a
``watchfiles.watch`` generator, so the step adapts by swapping generators: ``step_ms`` for
``HOT_SECONDS`` after each change, ``idle_step_ms`` after that.

Events are only hints: what changed is always worked out from the files. So events lost
in the moment between two generators are harmless: right after each swap the files are
looked at again (a ``"recheck"``, as soon as the new generator first hands back control),
and at every ``"tick"`` (``TICK_SECONDS``) anyway.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..core.fork_safety import close_in_forked_child
from .options import HOT_SECONDS, TICK_SECONDS, StopFlag, WatchOptions

if TYPE_CHECKING:
    import watchfiles

Wake = set[str] | Literal["tick", "recheck", "stop", "signal"]
_DEBOUNCE_MS = 10  # only matters when many distinct files change at once (folder watch)
_HOT_TIMEOUT_MS = 5  # how soon a hot generator hands back control when nothing happens
_IDLE_TIMEOUT_MS = 50
_MISSING_FOLDER_CHECK = 0.1
_ABANDONED_IN_CHILD: list[object] = []


class Wakeups:
    """Blocks until files we want changed (their names), a tick is due, or stop / Ctrl-C."""

    def __init__(self, directory: Path, wants: Callable[[str], bool], options: WatchOptions) -> None:
        self.directory = directory
        self.wants = wants
        self.step_ms = options.step_ms
        self.idle_step_ms = max(options.idle_step_ms, options.step_ms)
        self.poll_delay_ms = options.poll_delay_ms
        self.force_polling = _default_force_polling(options.force_polling)
        self.tick_seconds = TICK_SECONDS
        if self.force_polling:  # polling may miss a change within one mtime tick: check as often
            self.tick_seconds = min(TICK_SECONDS, options.poll_delay_ms / 1000)
        self._generator: Generator[set[tuple[watchfiles.Change, str]], None, None] | None = None
        self._generator_hot = False
        self._hot_until = 0.0
        self._next_tick = time.monotonic() + self.tick_seconds
        self._recheck_at = 0.0
        self._identity = _identity(directory)
        close_in_forked_child(self)

    def after_fork_in_child(self) -> None:
        """In a forked child: forget the parent's watcher (its thread does not exist here).

        Closing it would wait for that thread; it is dropped instead, and kept referenced so
        that no finalizer tries either. A watch used in the child starts a watcher of its own.
        """
        if self._generator is not None:
            _ABANDONED_IN_CHILD.append(self._generator)
            self._generator = None

    def wait(self, stop: StopFlag) -> Wake:
        """The next wake-up (see the class docstring)."""
        while True:
            now = time.monotonic()
            if now >= self._next_tick:
                self._next_tick = now + self.tick_seconds
                self._check_directory()
                return "tick"
            if self._recheck_at and now >= self._recheck_at:
                self._recheck_at = 0.0
                return "recheck"
            if self._identity is None:  # the folder does not exist (yet)
                if _sleep_unless(stop, min(_MISSING_FOLDER_CHECK, self._next_tick - now), self.idle_step_ms):
                    return "stop"
                if self.directory.is_dir():
                    self._next_tick = 0.0
                continue
            hot = self._hot_until > now
            if self._generator is None or hot != self._generator_hot:
                self._swap(hot, stop)
            assert self._generator is not None
            try:
                batch = next(self._generator)
            except StopIteration:
                self._generator = None
                return "stop"
            except KeyboardInterrupt:
                self._generator = None
                return "signal"
            except (OSError, RuntimeError) as exc:
                self._generator = None
                self._fall_back(exc)
                continue
            names = {os.path.basename(path) for _, path in batch}
            if os.path.basename(self.directory) in names and _identity(self.directory) != self._identity:
                self._next_tick = 0.0  # the folder itself was moved or deleted
            names = {name for name in names if self.wants(name)}
            if names:
                self._hot_until = time.monotonic() + HOT_SECONDS
                return names

    def close(self) -> None:
        if self._generator is not None:
            generator, self._generator = self._generator, None
            generator.close()  # leaves watchfiles' ``with RustNotify(...)``: its thread stops

    def _swap(self, hot: bool, stop: StopFlag) -> None:
        import watchfiles  # not at import time: the CLI's start-up stays quick

        self.close()
        self._generator_hot = hot
        timeout = _HOT_TIMEOUT_MS if hot else _IDLE_TIMEOUT_MS
        self._generator = watchfiles.watch(
            self.directory,
            watch_filter=None,
            debounce=_DEBOUNCE_MS,
            step=self.step_ms if hot else self.idle_step_ms,
            stop_event=stop,
            rust_timeout=timeout,
            yield_on_timeout=True,
            raise_interrupt=True,
            force_polling=self.force_polling,
            poll_delay_ms=self.poll_delay_ms,
            recursive=False,
        )
        # Events between the old generator and the new one are not seen: look at the files
        # once the new one first hands back control (``rust_timeout`` bounds that).
        self._recheck_at = time.monotonic() + timeout / 1000

    def _fall_back(self, exc: BaseException) -> None:
        """No events here (e.g. the inotify watch limit is reached): poll instead of failing."""
        if self.force_polling or not self.directory.is_dir():
            if not self.directory.is_dir():
                self._identity = None  # it went away while we started: wait for it again
                return
            raise exc
        warnings.warn(
            f"{self.directory}: file system events unavailable ({exc}); polling every "
            f"{self.poll_delay_ms} ms instead",
            RuntimeWarning,
            stacklevel=3,
        )
        self.force_polling = True
        self.tick_seconds = min(self.tick_seconds, self.poll_delay_ms / 1000)

    def _check_directory(self) -> None:
        """Watch the folder again if it was created, deleted or replaced since the last tick."""
        identity = _identity(self.directory)
        if identity != self._identity:
            self.close()
            self._identity = identity


def _identity(directory: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(directory)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (stat.st_dev, stat.st_ino)


def _sleep_unless(stop: StopFlag, seconds: float, step_ms: int) -> bool:
    """Sleep up to ``seconds`` in steps, returning True as soon as ``stop`` is set."""
    deadline = time.monotonic() + max(0.0, seconds)
    while True:
        if stop.is_set():
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(remaining, step_ms / 1000))


def _default_force_polling(force_polling: bool | None) -> bool:
    """As ``watchfiles`` decides: ``WATCHFILES_FORCE_POLLING``, else only on WSL (its documented rule)."""
    if force_polling is not None:
        return force_polling
    variable = os.environ.get("WATCHFILES_FORCE_POLLING")
    if variable:
        return variable.lower() not in {"false", "disable", "disabled"}
    import platform

    uname = platform.uname()
    return "microsoft-standard" in uname.release.lower() and uname.system.lower() == "linux"

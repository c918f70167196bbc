"""Turns, lineage, usage and paused runs: ``HistoryMethods``, one of ``JSONLSession``'s mixins.

Kept apart from ``store`` so that the SDK protocol stays short to read; every method here
goes through the same lock as the items (``LockedOperations.locked``, or its ``locked_in_thread`` for
the async ones), and the files it touches are the sidecars described in ``sidecar_files``. Async
methods wait for the session's lock on the loop and run the locked work in a worker thread:
waiting for another process's session lock never holds a thread, and a started write
finishes, and unlocks, even if the caller is cancelled. (The ``.usage`` log has a lock of its
own, taken only under the session's, so it is always free by then.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from ..core import reads, sidecar_files, storage
from ..core.codec import encode_items
from ..core.deferred_imports import OnFirstUse
from ..core.errors import SessionExistsError, SessionNotFoundError
from ..core.locking import MISSING
from ..history import paused_runs
from ..history.lineage import Lineage, read_lineage
from ..history.turns import TooFewTurnsError, Turn, last_turn, rewind, split_turns
from ..history.usage import (
    model_of,
    new_record,
    recorded_results,
    result_counters,
    session_usage,
    since,
    turn_usage,
)
from .locked_operations import LockedOperations

if TYPE_CHECKING:
    import asyncio
else:  # imported on first use: `jsonl-session ls` never awaits (see core/deferred_imports.py)
    asyncio = OnFirstUse("asyncio", globals())

if TYPE_CHECKING:
    from agents import Agent, RunState

T = TypeVar("T")


class HistoryMethods(LockedOperations):
    """Turn-aware history, fork lineage, a usage log and paused runs for one session file."""

    # -- turns -----------------------------------------------------------------------------

    def turns(self) -> list[Turn]:
        """Every turn (a user message and what follows it up to the next one), oldest first.

        Example:
            >>> [(t.index, t.start, t.end, t.text) for t in session.turns()]   # doctest: +SKIP
            [(1, 0, 2, 'Hi! Who are you?'), (2, 2, 6, "What's the weather in Paris?")]
        """
        return split_turns(self._all_items())

    def rewind_sync(self, turns: int = 1) -> list[Any]:
        """Remove the newest ``turns`` whole turns (one truncation, under the lock); return them.

        A paused run belongs to the newest turn, so it is discarded too.

        Raises:
            TooFewTurnsError: the session has fewer turns (a ``ValueError``; nothing is removed).

        Example:
            >>> removed = session.rewind_sync(1)              # doctest: +SKIP
        """
        _check_turns(turns)
        with self.locked(write=True, create=False) as fd:
            return self._rewind_locked(fd, turns)

    async def rewind(self, turns: int = 1) -> list[Any]:
        """The asynchronous equivalent of :meth:`rewind_sync`."""
        _check_turns(turns)
        return await self.locked_in_thread(self._rewind_locked, turns, write=True)

    def _rewind_locked(self, fd: int, turns: int) -> list[Any]:
        if fd == MISSING:
            if turns:
                raise TooFewTurnsError(self.path, 0, f"rewind {turns}")
            return []
        self._handle.sync_folder_once()
        removed = rewind(fd, self.path, turns, durable=self.durable)
        if removed:
            if self._times is not None:
                self._times.forget_newest(removed)
            paused_runs.clear(self.path, durable=self.durable)
        return removed

    # -- lineage ---------------------------------------------------------------------------

    @property
    def lineage(self) -> Lineage | None:
        """Where this session was forked from (None if it is not a fork)."""
        return read_lineage(self.path)

    # -- usage -----------------------------------------------------------------------------

    def record_usage_sync(self, result: Any) -> dict[str, Any]:
        """Append a run's token usage to the usage log; return the line written.

        If the run paused for a tool approval, its state is saved (see
        :meth:`save_run_state_sync`); if it completed, a saved paused run is removed. A
        resumed run's usage counts only what it spent since it was last recorded.

        Recording the same result object again (in this process) writes nothing and returns
        the line written the first time: a run counts once.

        Raises:
            ValueError: a streamed run (``Runner.run_streamed``) has not finished yet
                (``RunResultStreaming.is_complete`` is False): record it after its events are consumed.
            SessionNotFoundError: the session does not exist.

        Example:
            >>> result = await Runner.run(agent, "Hi", session=session)   # doctest: +SKIP
            >>> session.record_usage_sync(result)["total_tokens"]          # doctest: +SKIP
            876
        """
        _refuse_unfinished(result)
        with self.locked(write=True, create=False) as fd:
            return self._record_usage_locked(fd, result)

    async def record_usage(self, result: Any) -> dict[str, Any]:
        """The asynchronous equivalent of :meth:`record_usage_sync`."""
        _refuse_unfinished(result)
        return await self.locked_in_thread(self._record_usage_locked, result, write=True)

    def _record_usage_locked(self, fd: int, result: Any) -> dict[str, Any]:
        if fd == MISSING:
            raise SessionNotFoundError(self.path, "no such session; record usage after a run that used it")
        # Under the session's exclusive lock: two threads recording one result write one line.
        earlier = recorded_results.get(result, self.path)
        if earlier is not None:
            return dict(earlier)
        turn_count, user_item = last_turn(fd, self.path, size=self._handle.size)
        total = result_counters(result)
        envelope = paused_runs.read(self.path)
        recorded = envelope.get("recorded") if envelope is not None else None
        paused = bool(getattr(result, "interruptions", None))
        record = new_record(
            since(total, recorded if isinstance(recorded, dict) else None),
            model=model_of(result),
            turn=turn_count or None,
            user_item=user_item,
            paused=paused,
        )
        usage_path = sidecar_files.sidecar(self.path, sidecar_files.USAGE)
        sidecar_files.append_line(usage_path, record, durable=self.durable, timeout=self.lock_timeout)
        if paused:
            paused_runs.write(self.path, paused_runs.as_state(result), recorded=total, durable=self.durable)
        elif envelope is not None:
            paused_runs.clear(self.path, durable=self.durable)
        recorded_results.remember(result, self.path, record)
        return record

    def usage_records(self) -> list[dict[str, Any]]:
        """Every line of the usage log, oldest first."""
        with self.locked(write=False, create=False) as fd:
            return self._usage_records_locked(fd)

    def _usage_records_locked(self, fd: int) -> list[dict[str, Any]]:
        # Under the session's lock, which every writer of the log holds exclusively, so the
        # log's own lock is free by the time we get here: nobody waits for it in a thread.
        # ``fd`` is unused: a deleted session's leftover log still reads.
        return sidecar_files.read_lines(
            sidecar_files.sidecar(self.path, sidecar_files.USAGE), timeout=self.lock_timeout
        )

    def get_session_usage_sync(self) -> dict[str, int] | None:
        """Totals over every recorded run (None if none), like ``AdvancedSQLiteSession``'s.

        Keys: ``requests``, ``input_tokens``, ``output_tokens``, ``total_tokens``,
        ``cached_tokens``, ``reasoning_tokens``, ``total_turns``, ``runs``. Runs of turns
        rewound since still count: those tokens were spent.
        """
        return session_usage(self.usage_records())

    async def get_session_usage(self) -> dict[str, int] | None:
        """The asynchronous equivalent of :meth:`get_session_usage_sync`."""
        records = await self.locked_in_thread(self._usage_records_locked, write=False)
        return session_usage(records)

    def get_turn_usage_sync(
        self, user_turn_number: int | None = None
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """Usage per turn still in the session (a list), or of one turn (a dict, ``{}`` if none).

        Each entry has ``user_turn_number``, ``requests``, ``input_tokens``, ``output_tokens``,
        ``total_tokens``, ``input_tokens_details`` (``cached_tokens``),
        ``output_tokens_details`` (``reasoning_tokens``), ``at`` (when its first run was
        recorded) and ``models``.
        """
        with self.locked(write=False, create=False) as fd:
            return self._turn_usage_locked(fd, user_turn_number)

    async def get_turn_usage(
        self, user_turn_number: int | None = None
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """The asynchronous equivalent of :meth:`get_turn_usage_sync`."""
        return await self.locked_in_thread(self._turn_usage_locked, user_turn_number, write=False)

    def _turn_usage_locked(
        self, fd: int, user_turn_number: int | None
    ) -> list[dict[str, Any]] | dict[str, Any]:
        items = [] if fd == MISSING else reads.read_items(fd, self.path, size=self._handle.size)
        answer = turn_usage(self._usage_records_locked(fd), items, split_turns(items))
        if user_turn_number is None:
            return answer
        return next((entry for entry in answer if entry["user_turn_number"] == user_turn_number), {})

    # -- paused runs -----------------------------------------------------------------------

    def save_run_state_sync(self, state: Any) -> None:
        """Save a paused run (a ``RunState``, or the result itself) next to the session, atomically.

        Example:
            >>> result = Runner.run_sync(agent, "Refund order A1", session=session)  # doctest: +SKIP
            >>> if result.interruptions:                                            # doctest: +SKIP
            ...     session.save_run_state_sync(result.to_state())
        """
        state = paused_runs.as_state(state)
        with self.locked(write=True, create=False) as fd:
            self._save_run_state_locked(fd, state)

    async def save_run_state(self, state: Any) -> None:
        """The asynchronous equivalent of :meth:`save_run_state_sync`."""
        state = paused_runs.as_state(state)
        await self.locked_in_thread(self._save_run_state_locked, state, write=True)

    def _save_run_state_locked(self, fd: int, state: Any) -> None:
        if fd == MISSING:
            raise SessionNotFoundError(self.path, "no such session; save the state of a run that used it")
        envelope = paused_runs.read(self.path)
        recorded = envelope.get("recorded") if envelope is not None else None
        paused_runs.write(self.path, state, recorded=recorded, durable=self.durable)

    async def load_run_state(self, agent: Agent[Any], **options: Any) -> RunState[Any] | None:
        """The saved paused run, ready for approvals and ``Runner.run(agent, state, ...)``; None if none.

        ``options`` go to ``RunState.from_json`` (``context_deserializer``...). Only load
        state from storage you trust: it holds the tool calls waiting for approval.

        Example:
            >>> state = await session.load_run_state(agent)             # doctest: +SKIP
            >>> for item in state.get_interruptions():                   # doctest: +SKIP
            ...     state.approve(item)
            >>> result = await Runner.run(agent, state, session=session)  # doctest: +SKIP
        """
        envelope = await asyncio.to_thread(paused_runs.read, self.path)
        if envelope is None:
            return None
        from agents import RunState

        return await RunState.from_json(agent, envelope["state"], **options)

    def load_run_state_sync(self, agent: Agent[Any], **options: Any) -> RunState[Any] | None:
        """Blocking twin of :meth:`load_run_state`, for scripts (not inside a running event loop)."""
        return asyncio.run(self.load_run_state(agent, **options))

    def clear_run_state_sync(self) -> bool:
        """Forget the paused run (under the lock); True if there was one."""
        with self.locked(write=True, create=False) as fd:
            return self._clear_run_state_locked(fd)

    async def clear_run_state(self) -> bool:
        """The asynchronous equivalent of :meth:`clear_run_state_sync`."""
        return await self.locked_in_thread(self._clear_run_state_locked, write=True)

    def _clear_run_state_locked(self, fd: int) -> bool:
        return paused_runs.clear(self.path, durable=self.durable)

    def paused_run(self) -> paused_runs.PausedRun | None:
        """What a paused run waits for (tool names, call ids), or None; no SDK needed."""
        return paused_runs.info(self.path)

    # -- helpers ---------------------------------------------------------------------------

    def write_fork(self, items: list[Any], lineage: Lineage, times: list[int | None] | None = None) -> None:
        """Become a fork: the items, then the lineage, both under this session's exclusive lock.

        Internal: ``SessionDirectory.fork`` calls it on the new session.

        ``times`` (ms, one per item, None for unknown) are the source's: the fork keeps them.

        In this order a crash in between leaves a plain copy without lineage, never a lineage
        that describes items which are not there.

        Raises:
            SessionExistsError: this session already has items (nothing is overwritten).
        """
        payload = encode_items(items)
        with self.locked(write=True, create=True) as fd:
            if reads.read_items(fd, self.path, 1, size=self._handle.size):
                raise SessionExistsError(self.path, "session already exists; not overwriting it")
            self._handle.replaced()  # the next call opens the new file
            storage.replace(fd, self.path, payload, durable=self.durable)
            if self._times is not None and times is not None:
                self._times.write_records(payload, times)
            path = sidecar_files.sidecar(self.path, sidecar_files.LINEAGE)
            sidecar_files.write_json(path, lineage.to_json(), durable=self.durable)

    def _all_items(self) -> list[Any]:
        """Every item, whatever limit the settings or ``turn_limit`` impose on ``get_items``."""
        with self.locked(write=False, create=False) as fd:
            if fd == MISSING:
                return []
            return reads.read_items(fd, self.path, size=self._handle.size)


def _refuse_unfinished(result: Any) -> None:
    """A streamed run that is still going has no final usage, nor a turn of its own yet."""
    if getattr(result, "is_complete", True) is False:
        raise ValueError(
            "this streamed run has not finished (result.is_complete is False): record its usage "
            "after `async for event in result.stream_events()` has ended"
        )


def _check_turns(turns: Any) -> None:
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 0:
        raise ValueError(f"turns must be a non-negative int, not {turns!r}")

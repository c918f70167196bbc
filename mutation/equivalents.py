"""The surviving mutants no test can kill, each with the one-line reason (``mutation/mutation.py``).

A survivor is named by its module, the cosmic-ray operator and the code of the line it
changed (stripped, without its comment), not a line number: edits above it do not orphan its
reason. A reason says why the mutant behaves like the real code (the same bytes, the same
answers), or why the difference cannot be observed without patching the interpreter.
Anything a test *can* tell apart gets a test instead.
"""

from __future__ import annotations

_SIZE_GIVEN = (
    "every caller passes the size it holds under the lock, so the default is never used "
    "(and `fstat` would give the same size)"
)
_TYPE_ONLY = "imports names used only in annotations at run time too: the same behaviour, a slower start"
_LAST_BYTE = (
    "a read of 0 or 2 bytes, or at the end of the file, is not a newline either: the full tail "
    "check then runs and finds the same (the byte before the last is killed by a test)"
)

_AHEAD = (
    "`open_ahead` runs only when the handle has no descriptor (and so no holder): the rest of the "
    "condition never decides (the halves that do are killed by tests)"
)
_BEFORE_OPEN = "set by the first `_open`, which every first lock makes (there is no descriptor yet)"

_SPLIT = (
    "how many sessions are copied at once and how they are cut into batches: each session is "
    "copied the same way, all or nothing, whatever the split (a split of 0 is raised to 1)"
)
_THERE = (
    "which backends list their sessions first: Redis without the list only looks once more "
    "(a round trip); the SQL paths ignore `maybe_there`"
)
_NEWLINE_AT_0 = (
    "in `lines_containing`, a newline at 0 after the needle would have to be the needle's own "
    "first byte, and the needles are words"
)
_WORD_NEEDLE = (
    "the next search starts at the line's newline or its last byte instead of after it: a word "
    "needle cannot match across a newline, so the same lines are found once each"
)
_ONE_LINE = "`newest_lines(..., 1)` returns one line: its first is its last"

STORAGE = "core/storage.py"
CODEC = "core/codec.py"
STORE = "session/store.py"
_GC = "when and which generation is collected after a pause: the same objects are freed, sooner or later"
ENGINE = "watch/engine.py"
LOCKING = "core/locking.py"
CHECK = "tools/check.py"
TURNS = "history/turns.py"
USAGE = "history/usage.py"
ALL_SESSIONS = "transfer/all_sessions.py"
ASYNC_LOCKING = "core/async_locking.py"
SCANNER = "core/scanner.py"
UNDO = "core/undo_buffer.py"
_PIECE = "the size of each piece copied or read: the loop goes on until every byte is there, the same bytes"
_TO_THE_END = (
    "asks for more than is left: a removal always runs to the end of the file, which has no "
    "more bytes to give, the same bytes"
)
_GUESS = (
    "how many items the first read of a turn search asks for, and how fast it grows: a search "
    "reads on until it has the turns asked for (long turns are tested), the same turns"
)
_FIRST_LOOK = (
    "set again by the first look before it is read (a follower starts, and starts over, with a full read)"
)
_DIGEST = (
    "the digest only lets a full read skip the line-by-line comparison; when it cannot match, "
    "that comparison runs and gives the same changes (the quick path of appends is tested)"
)
_INLINE = (
    "where the session switches between working on the loop and in a worker thread: the same "
    "items either way (a read far beyond it is tested to leave the loop free)"
)
_TIMES_END = (
    "where the last append left the session only decides whether the next one re-checks the "
    "`.times` sidecar (one `fstat`): a wrong value costs a check, the records are the same"
)
_INLINE_READ = "if self._handle.size <= _INLINE_FILE_BYTES or (limit is not None and limit <= _INLINE_LIMIT):"
_ENDS_IN_NEWLINE = 'if not size or os.pread(fd, 1, size - 1) == b"\\n":'

EQUIVALENT: dict[tuple[str, str, str], str] = {
    # core/storage.py
    (STORAGE, "ReplaceFalseWithTrue", "TYPE_CHECKING = False"): _TYPE_ONLY,
    (STORAGE, "AddNot", "if TYPE_CHECKING:"): _TYPE_ONLY,
    (STORAGE, "AddNot", "if size is None:"): _SIZE_GIVEN,
    (STORAGE, "ReplaceComparisonOperator_Is_IsNot", "if size is None:"): _SIZE_GIVEN,
    (STORAGE, "NumberReplacer", 'if size and os.pread(fd, 1, size - 1) != b"\\n":'): (
        "asks for 2 bytes at the last byte: the file has only that one to give"
    ),
    (STORAGE, "NumberReplacer", _ENDS_IN_NEWLINE): _LAST_BYTE,
    (STORAGE, "ReplaceBinaryOperator_Sub_Add", _ENDS_IN_NEWLINE): _LAST_BYTE,
    (STORAGE, "NumberReplacer", "lines, _, _ = newest_lines(fd, size, 1)"): (
        "reads the newest two lines and keeps the last: the same item, one more line read"
    ),
    (STORAGE, "NumberReplacer", "offset, line = lines[-1]"): _ONE_LINE,
    (STORAGE, "ReplaceUnaryOperator_USub_Not", "offset, line = lines[-1]"): _ONE_LINE,
    (STORAGE, "ReplaceComparisonOperator_Lt_LtE", "if written < len(payload):"): (
        "after a whole write the rest is empty: the retry loop runs zero times"
    ),
    (STORAGE, "NumberReplacer", "write_at_end(temp_fd, payload, 0, durable=True)"): (
        "where a failed write of the temporary file is cut back to: the file is deleted right after"
    ),
    (STORAGE, "ExceptionReplacer", "except FileNotFoundError:"): (
        "the temporary file is gone only if the rename was done and `close` then failed, "
        "which no file system does without a patched interpreter"
    ),
    # core/codec.py
    (CODEC, "AddNot", "if TYPE_CHECKING:"): _TYPE_ONLY,
    (CODEC, "ReplaceFalseWithTrue", "TYPE_CHECKING = False"): _TYPE_ONLY,
    (CODEC, "NumberReplacer", "_DIGIT_MASK = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))"): (
        "the byte a non-digit becomes (31 or 33 for 32) is never searched for (the digit range "
        "itself is killed by a test)"
    ),
    (CODEC, "NumberReplacer", "_CHECK_PIECE = 16 * 1024"): (
        "the size of the pieces the digit check translates at a time: the overlap keeps runs "
        "across boundaries (tested at every offset around one), the same answer"
    ),
    (CODEC, "ReplaceComparisonOperator_LtE_Gt", "if size <= _CHECK_PIECE:"): (
        "small data then goes through the loop of pieces and big data through one translation: "
        "the same answer either way"
    ),
    (CODEC, "ReplaceFalseWithTrue", "def __init__(self, *, young_collection_after: bool = False) -> None:"): _GC,
    (CODEC, "AddNot", "if self._collect:"): _GC,
    (CODEC, "NumberReplacer", "item = items[0]"): "a list of one item: its first is its last",
    (CODEC, "NumberReplacer", "if type(items) is list and len(items) == 1 and type(items[0]) is dict:"): (
        "a list of one item: its first is its last"
    ),
    (CODEC, "ReplaceComparisonOperator_LtE_Lt", "if size <= _CHECK_PIECE:"): (
        "data of exactly one piece goes through the loop of pieces once: the same check"
    ),
    (CODEC, "NumberReplacer", "gc.collect(1)"): _GC,
    # session/store.py
    (STORE, "NumberReplacer", "_INLINE_FILE_BYTES = 64 * 1024"): _INLINE,
    (STORE, "ReplaceBinaryOperator_Mul_Div", "_INLINE_FILE_BYTES = 64 * 1024"): _INLINE,
    (STORE, "NumberReplacer", "_INLINE_PAYLOAD_BYTES = 256 * 1024"): _INLINE,
    (STORE, "NumberReplacer", "_INLINE_LIMIT = 100"): _INLINE,
    (STORE, "ReplaceComparisonOperator_LtE_Lt", _INLINE_READ): _INLINE,
    # Both `<=` made `>`: the file-size one sends a big read to the loop (killed by a test); the
    # limit one only reads a long limited read on the loop, which costs what the limit asks.
    (STORE, "ReplaceComparisonOperator_LtE_Gt", _INLINE_READ): _INLINE,
    (STORE, "ReplaceOrWithAnd", _INLINE_READ): _INLINE,
    (STORE, "ReplaceComparisonOperator_Gt_GtE", "len(payload) > _INLINE_PAYLOAD_BYTES"): _INLINE,
    (STORE, "NumberReplacer", 'or (size and os.pread(fd, 1, size - 1) != b"\\n")'): (
        "asks for 2 bytes at the last byte: the file has only that one to give"
    ),
    (STORE, "ReplaceBinaryOperator_Add_Sub", "times.sync_and_write, fd, size, records, size + len(payload)"): _TIMES_END,
    (STORE, "ReplaceBinaryOperator_Add_Sub", "times.append_records(records, size, size + len(payload))"): _TIMES_END,
    (STORE, "ReplaceBinaryOperator_Add_Sub", "self._times.append_records(records, size, size + len(payload))"): _TIMES_END,
    (STORE, "NumberReplacer", "await asyncio.sleep(0)"): (
        "`sleep(-1)` yields exactly as `sleep(0)` does (`sleep(1)` is killed by a test)"
    ),
    (STORE, "NumberReplacer", "if limit == 0:"): (
        "`get_items_sync(0)` then reads under the lock and returns the newest 0 items: `[]` as before"
    ),
    # watch/engine.py
    (ENGINE, "NumberReplacer", "self._consumed = 0"): _FIRST_LOOK,
    (ENGINE, "NumberReplacer", "self._newlines = 0"): _FIRST_LOOK,
    (ENGINE, "NumberReplacer", "self._consumed = self._newlines = 0"): _FIRST_LOOK,
    (ENGINE, "NumberReplacer", "self._digest = hashlib.blake2b(digest_size=16)"): _FIRST_LOOK,
    (ENGINE, "NumberReplacer", "return hashlib.blake2b(prefix, digest_size=16).digest() == self._digest.digest()"): _DIGEST,
    (ENGINE, "NumberReplacer", "self._digest = hashlib.blake2b(data[: scan.consumed], digest_size=16)"): _DIGEST,
    (ENGINE, "ReplaceBinaryOperator_Sub_Add", "self._digest.update(data[consumed - offset : scan.consumed - offset])"): _DIGEST,
    (ENGINE, "ReplaceComparisonOperator_Eq_NotEq", "if same_file and len(prefix) == self._consumed and self._same_prefix(prefix):"): _DIGEST,
    (ENGINE, "NumberReplacer", 'if start == "now" or start == 0:'): (
        "`start=0` then takes the newest 0 lines, and `start=-1` none either: `[]` both ways"
    ),
    # core/locking.py
    (LOCKING, "NumberReplacer", "TOKENS = itertools.count(1)"): (
        "tokens are only compared with each other and with 0 (no holder): any start above 0 works"
    ),
    (LOCKING, "NumberReplacer", "self._holder_thread = 0"): (
        "no thread's ident is 0 or -1: either value means the lock is with no thread of this process"
    ),
    (LOCKING, "ReplaceFalseWithTrue", "self._reopen = False"): (
        "only makes the next release close the descriptor, reopened at the next use: slower, the same file"
    ),
    (LOCKING, "ReplaceComparisonOperator_LtE_Lt", "if remaining <= 0:"): (
        "with exactly 0 s left it sleeps 0 s and tries once more: the same answer a moment later"
    ),
    (LOCKING, "ReplaceAndWithOr", "if not self._holder and (self.fd is None or (write and not self._writable)):"): _AHEAD,
    (LOCKING, "ReplaceUnaryOperator_Delete_Not", "if not self._holder and (self.fd is None or (write and not self._writable)):"): _AHEAD,
    (LOCKING, "ReplaceTrueWithFalse", "def __init__(self, path: str | PathLike[str], *, durable: bool = True) -> None:"): (
        "every caller passes `durable`: the default serves the docstring's example"
    ),
    (LOCKING, "ReplaceFalseWithTrue", "self._writable = False"): _BEFORE_OPEN,
    (LOCKING, "NumberReplacer", "self._identity = (0, 0)"): _BEFORE_OPEN,
    (LOCKING, "ReplaceBinaryOperator_Sub_Add", "await asyncio.sleep(max(0.0, min(delay, deadline - time.monotonic())))"): (
        "the last sleep before the deadline lasts its whole backoff step (at most 5 ms) instead of "
        "what is left: the same attempts and answer, at most 5 ms later"
    ),
    (LOCKING, "ReplaceFalseWithTrue", "self.folder_unsynced = False"): (
        "the first `_open` sets it before any write can read it (the reset in `sync_folder_once` "
        "is killed by the fsync counts)"
    ),
    (LOCKING, "NumberReplacer", "await asyncio.sleep(max(0.0, min(delay, deadline - time.monotonic())))"): (
        "`-1.0`: `asyncio.sleep` returns at once for any delay up to 0, as for 0 (`1.0` is killed "
        "by the count of attempts)"
    ),
    (LOCKING, "NumberReplacer", "self.size = 0"): (
        "read only after a lock that found the file, which sets it (a missing file gives `MISSING`, "
        "and no caller reads the size then)"
    ),
    (LOCKING, "ReplaceTrueWithFalse", "self._reopen = True"): (
        "`replaced()` only saves the next lock a step: without it that lock finds the path is "
        "another inode (its `stat`), unlocks and reopens; the same file (the `close()` one is tested)"
    ),
    (LOCKING, "ExceptionReplacer", "except OSError:"): (
        "closing a descriptor the handle owns and still has open does not fail (in a forked "
        "child, in `__del__`): the guards are for a descriptor someone else closed already"
    ),
    (LOCKING, "ReplaceComparisonOperator_GtE_Gt", "if fd != BUSY or time.monotonic() >= deadline:"): (
        "exactly at the deadline it tries once more at once: the same answer a moment later"
    ),
    (LOCKING, "AddNot", "if TYPE_CHECKING:"): _TYPE_ONLY,
    (LOCKING, "ReplaceFalseWithTrue", "TYPE_CHECKING = False"): _TYPE_ONLY,
    (LOCKING, "NumberReplacer", "for _ in range(100):"): (
        "how often a lock retries when the file is replaced under it each time: 99 or 101 "
        "replacements in a row never happen outside a test that does only that"
    ),
    (LOCKING, "NumberReplacer", "self._token = 0"): (
        "the token an async block starts with is replaced by `next(TOKENS)` before any use"
    ),
    # tools/check.py
    (CHECK, "ExceptionReplacer", "except FileNotFoundError:"): (
        "only a sidecar another process removed between the listing and the `unlink`: a race "
        "no test can time without patching `os`"
    ),
    (CHECK, "NumberReplacer", "return sorted(problems, key=lambda problem: problem.line or 0)"): (
        "lines count from 1: a problem without a line sorts first with 0 or -1"
    ),
    (CHECK, "ReplaceComparisonOperator_Gt_GtE", 'if line.count(b"[") + line.count(b"{") > codec.MAX_DEPTH:'): (
        "the bracket count only decides whether to walk the item: one more line walked, the same answer"
    ),
    (CHECK, "ReplaceAndWithOr", "if fix and any(problem.fixable and not problem.fixed for problem in problems if problem.line):"): (
        "with nothing fixable the replay fix drops nothing and writes nothing (it compares the "
        "encodings of the same items): one more locked read, the same problems and file"
    ),
    (CHECK, "ReplaceContinueWithBreak", "continue"): (
        "the `continue`s after `FileNotFoundError`: only a file another process removed between the "
        "listing and the `lstat`/`unlink`, a race no test can time without patching `os` (the "
        "other `continue`s are killed by tests)"
    ),
    # core/codec.py
    (CODEC, "AddNot", "if size <= _CHECK_PIECE:"): (
        "a small block checked in pieces is one piece; a big one checked whole finds the same runs: "
        "only the cache-friendly split differs"
    ),
    (CODEC, "NumberReplacer", "overlap = len(_LONG_DIGIT_RUN) - 1"): (
        "a wider overlap checks a few bytes twice: the same runs found (the narrower one is killed)"
    ),
    (CODEC, "ReplaceBinaryOperator_Sub_Add", "overlap = len(_LONG_DIGIT_RUN) - 1"): (
        "a wider overlap checks a few bytes twice: the same runs found"
    ),
    (CODEC, "ReplaceContinueWithBreak", "continue"): (
        "`depth_of`'s: only the value itself can be a scalar (children are pushed only if "
        "containers), so a scalar popped is the last and `break` ends the loop as `continue` does "
        "(`_walk`'s is killed by tests)"
    ),
    (CODEC, "ReplaceFalseWithTrue", "parts.append(json.dumps(current, ensure_ascii=False, default=repr))"): (
        "only integers beyond 64 bits reach `json.dumps` (a reader returns nothing else orjson "
        "cannot write): no text to escape"
    ),
    # history/turns.py
    (TURNS, "NumberReplacer", "_FIRST_GUESS = 8"): _GUESS,
    (TURNS, "NumberReplacer", "wanted *= 4"): _GUESS,
    (TURNS, "NumberReplacer", 'return (type(self), (self.path, self.count, self.reason.split("cannot ", 1)[1]))'): (
        "the message holds `cannot ` once: splitting at most twice gives the same second part"
    ),
    (TURNS, "NumberReplacer", "if turns <= 0 or size == 0:"): (
        "the empty file's shortcut: without it the read finds no item and returns the same `[]`; "
        "a one-byte file holds no item either (the smallest, `{}`, has two)"
    ),
    (TURNS, "NumberReplacer", "if size == 0:"): (
        "the empty file's shortcut: without it the scan finds no user message and raises the same "
        "`TooFewTurnsError` with 0 turns; a one-byte file holds no item either"
    ),
    (TURNS, "ReplaceComparisonOperator_GtE_Gt", "if len(starts) >= turns or at_start:"): (
        "with exactly enough user messages it reads a bigger batch first: `starts[-turns]` is the "
        "same message, the same truncation"
    ),
    # history/usage.py (the 0 -> 1/-1 swaps on these lines are killed by tests)
    (USAGE, "NumberReplacer", "counters = {name: _int(get(name, 0)) for name in COUNTERS[:4]}"): (
        "`COUNTERS[:5]` also reads `cached_tokens`, which the next line overwrites from its details"
    ),
    (USAGE, "NumberReplacer", "if recorded is None or any(total.get(name, 0) < recorded.get(name, 0) for name in COUNTERS):"): (
        "a recorded counter that is missing read as -1: the comparison changes only for a negative "
        "total, and counters are never negative"
    ),
    (USAGE, "ReplaceAndWithOr", "if entry is not None and entry[0] is dead:"): (
        "CPython calls a weak reference's callback as the last reference goes, so the entry's "
        "reference is always the dead one: no other object can take the id before"
    ),
    # transfer/all_sessions.py
    (ALL_SESSIONS, "NumberReplacer", "CONCURRENCY = 8"): _SPLIT,
    (ALL_SESSIONS, "NumberReplacer", "lanes = max(1, concurrency // 2)"): _SPLIT,
    (ALL_SESSIONS, "ReplaceBinaryOperator_FloorDiv_Mul", "lanes = max(1, concurrency // 2)"): _SPLIT,
    (ALL_SESSIONS, "NumberReplacer", "size = max(1, min(sql_store.BATCH_SESSIONS, -(-len(ids) // lanes)))"): _SPLIT,
    (ALL_SESSIONS, "ReplaceUnaryOperator_USub_Invert", "size = max(1, min(sql_store.BATCH_SESSIONS, -(-len(ids) // lanes)))"): _SPLIT,
    (ALL_SESSIONS, "ReplaceUnaryOperator_USub_Not", "size = max(1, min(sql_store.BATCH_SESSIONS, -(-len(ids) // lanes)))"): _SPLIT,
    (ALL_SESSIONS, "ReplaceUnaryOperator_Delete_USub", "size = max(1, min(sql_store.BATCH_SESSIONS, -(-len(ids) // lanes)))"): _SPLIT,
    (ALL_SESSIONS, "NumberReplacer", "semaphore = asyncio.Semaphore(max(1, concurrency))"): _SPLIT,
    (ALL_SESSIONS, "ReplaceUnaryOperator_USub_UAdd", "size = max(1, min(sql_store.BATCH_SESSIONS, -(-len(ids) // lanes)))"): _SPLIT,
    (ALL_SESSIONS, "NumberReplacer", "return (await sql_store.export_batch(backend.handle, [job], replace=replace))[0]"): (
        "a batch of one job returns one outcome: its first is its last"
    ),
    (ALL_SESSIONS, "ReplaceFalseWithTrue", "backend: Backend, job: sql_store.Job, *, replace: bool = False, maybe_there: bool = True"): (
        "every caller passes `replace`: the default is never used"
    ),
    (ALL_SESSIONS, "ReplaceComparisonOperator_Eq_NotEq", 'there = set(await backend.session_ids()) if backend.flavour == "redis" else None'): _THERE,
    (ALL_SESSIONS, "AddNot", 'there = set(await backend.session_ids()) if backend.flavour == "redis" else None'): _THERE,
    (ALL_SESSIONS, "ReplaceTrueWithFalse", "await asyncio.gather(*tasks, return_exceptions=True)"): (
        "the error that stopped the run is already set on its task, so this gather raises that "
        "same error at once; the cancelled tasks end as the loop runs them (a test drains them)"
    ),
    (ALL_SESSIONS, "ReplaceTrueWithFalse", "existed: bool = True,"): (
        "the one caller that leaves `existed` out (a single import) refuses an empty session "
        "first, and `existed` only decides an empty session's outcome"
    ),
    (ALL_SESSIONS, "ReplaceFalseWithTrue", "replace: bool = False,"): "every caller passes `replace`: the default is never used",
    (ALL_SESSIONS, "AddNot", "if sql_store.supported(backend.handle):"): (
        "PostgreSQL and SQLite then go through the SDK's own calls, which copy the same items and "
        "companion as the batch (tested on SQLite); the databases that need them do not run here"
    ),
    (ALL_SESSIONS, "ReplaceTrueWithFalse", "backend: Backend, job: sql_store.Job, *, replace: bool = False, maybe_there: bool = True"): (
        "`maybe_there=False` only skips Redis's quick first look: the look under WATCH that "
        "follows finds the same (one more round trip)"
    ),
    # core/async_locking.py
    (ASYNC_LOCKING, "NumberReplacer", "self._token = 0"): (
        "replaced by `next(TOKENS)` two lines below, before any use"
    ),
    (ASYNC_LOCKING, "AddNot", "if TYPE_CHECKING:"): _TYPE_ONLY,
    (ASYNC_LOCKING, "ReplaceFalseWithTrue", "TYPE_CHECKING = False"): _TYPE_ONLY,
    (ASYNC_LOCKING, "ReplaceTrueWithFalse", "self, handle: FileHandle, write: bool, create: bool, timeout: float, yield_first: bool = True"): (
        "every caller passes `yield_first`: the default is never used"
    ),
    (ASYNC_LOCKING, "ReplaceTrueWithFalse", "fd = handle.try_lock(self, token, self._write, True, threading.get_ident())"): (
        "the file was just created ahead: `create` matters only if it is deleted again at once, "
        "a race no test can time"
    ),
    (ASYNC_LOCKING, "ReplaceAndWithOr", "if isinstance(error, Exception) and not self._yield_first:"): (
        "one more yield to the loop before the error propagates: the other tasks run once more, "
        "the same error (a cancellation included)"
    ),
    (ASYNC_LOCKING, "ReplaceFalseWithTrue", "if claim.acquire(blocking=False):"): (
        "reached when the hand-over failed: the work was not queued, so `claim` is free and a "
        "blocking acquire returns at once; only a signal inside `submit` could differ, a race "
        "no test can time"
    ),
    (ASYNC_LOCKING, "ReplaceTrueWithFalse", "fd = await handle.lock_polling(self, token, self._write, True, self._timeout)"): (
        "the file was just created ahead: `create` matters only if it is deleted again while the "
        "lock is awaited, a race no test can time"
    ),
    # core/scanner.py
    (SCANNER, "ReplaceFalseWithTrue", "TYPE_CHECKING = False"): _TYPE_ONLY,
    (SCANNER, "AddNot", "if TYPE_CHECKING:"): _TYPE_ONLY,
    (SCANNER, "NumberReplacer", "if end < 0:"): _NEWLINE_AT_0,
    (SCANNER, "NumberReplacer", "position = end + 1"): _WORD_NEEDLE,
    (SCANNER, "ReplaceBinaryOperator_Add_Sub", "position = end + 1"): _WORD_NEEDLE,
    (SCANNER, "ReplaceComparisonOperator_Lt_LtE", "if end < 0:"): _NEWLINE_AT_0,
    # core/undo_buffer.py
    (UNDO, "ReplaceFalseWithTrue", "TYPE_CHECKING = False"): _TYPE_ONLY,
    (UNDO, "AddNot", "if TYPE_CHECKING:"): _TYPE_ONLY,
    (UNDO, "NumberReplacer", "IN_MEMORY = 1024 * 1024"): (
        "where removals stop being kept in memory and go to an unnamed file: both put back the "
        "same bytes (the spill itself is tested)"
    ),
    (UNDO, "NumberReplacer", "_CHUNK = 1024 * 1024"): _PIECE,
    (UNDO, "NumberReplacer", "count = min(_CHUNK * 64, length - copied)"): _PIECE,
    (UNDO, "NumberReplacer", "chunk = os.pread(fd, min(length, 1 << 30), start)"): _PIECE,
    (UNDO, "ReplaceBinaryOperator_Sub_Add", "count = min(_CHUNK * 64, length - copied)"): _TO_THE_END,
    (UNDO, "ReplaceBinaryOperator_Sub_Add", "chunk = os.pread(self._spill, min(_CHUNK, self._length - position), position)"): _TO_THE_END,
    (UNDO, "NumberReplacer", "return os.open(folder, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)"): (
        "the mode of an unnamed file never linked into the folder"
    ),
    (UNDO, "ReplaceBinaryOperator_BitOr_BitAnd", "return os.open(folder, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)"): (
        "without O_RDWR the unnamed file cannot be made and the removal is kept in memory: put back the same"
    ),
    (UNDO, "ReplaceBinaryOperator_Sub_Add", "done = os.pwrite(target, os.pread(source, min(_CHUNK, length - copied), start + copied), copied)"): (
        "a removal always runs to the end of the file: a piece asked too long reads only the bytes "
        "that are left, the same ones"
    ),
    (UNDO, "NumberReplacer", "if done == 0:"): (
        "`-1` (the one-byte case is killed by a test): a copy of nothing happens only if the file "
        "is shorter than the bytes to keep, which the lock held through the removal rules out"
    ),
    (UNDO, "ReplaceBreakWithContinue", "break"): (
        "a read of nothing happens only past the end of the file, which the removal's bounds "
        "(taken under the lock) rule out"
    ),
    (UNDO, "ExceptionReplacer", "except (AttributeError, OSError):"): (
        "reached only where O_TMPFILE is missing (macOS) or refused by the file system, not on the "
        "Linux file systems the tests run on"
    ),
}  # fmt: skip

"""``JSONLSession`` and the folder of sessions it lives in.

``store`` is the Agents SDK ``Session`` over one file; ``locked_operations`` is its internal
interface (locks, locked reads, rewrites), ``history_methods`` adds turns, lineage, usage and
paused runs to it, ``metadata_methods`` the title, tags and owner, ``timestamps`` when each
item was added, and ``routing`` one object serving many users; ``compaction`` holds the hooks
the SDK's compaction wrapper looks for; ``settings`` is the SDK's ``SessionSettings`` when the
SDK is loaded; ``folder`` lists, opens, deletes and forks the sessions of a directory
(``listing``: what a listing reports of each session, ``SessionInfo``; ``listing_cache``:
what a listing keeps between calls); ``parsing`` turns JSON Lines a person wrote into items (``jsonl-session
add -``, ``edit``).

Example:
    >>> from jsonl_session.session import JSONLSession, DEFAULT_DIRECTORY
"""

from ..core.deferred_imports import exported_on_first_use

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from ..core.names import DEFAULT_DIRECTORY
    from .store import Draft, JSONLSession

__all__ = ["DEFAULT_DIRECTORY", "Draft", "JSONLSession"]

__getattr__, __dir__ = exported_on_first_use(
    __name__, {"DEFAULT_DIRECTORY": "store", "Draft": "store", "JSONLSession": "store"}
)
del TYPE_CHECKING, exported_on_first_use

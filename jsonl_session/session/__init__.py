"""``JSONLSession`` and the folder of sessions it lives in.

``JSONLSession`` is one class whose methods live in sibling files: ``store``, the Agents SDK
``Session`` over one file, with the mixins ``history_methods`` (turns, lineage, usage, paused
runs), ``metadata_methods`` (title, tags, owner) and ``timestamps`` (when each item was added),
each over ``locked_operations`` (locks, locked reads, rewrites: what they share, and the
internal interface other modules use); ``routing`` lets one object serve many users;
``compaction`` holds the hooks the SDK's compaction wrapper looks for; ``settings`` is the
SDK's ``SessionSettings`` when the SDK is loaded; ``folder`` lists, opens, deletes and forks
the sessions of a directory (``listing``: what a listing reports of each session,
``SessionInfo``; ``listing_cache``: what a listing keeps between calls); ``parsing`` turns
JSON Lines a person wrote into items (``jsonl-session add -``, ``edit``).

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

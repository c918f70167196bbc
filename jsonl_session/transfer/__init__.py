"""Copy conversations between JSONL files and the Agents SDK's Redis and SQL sessions.

``backends`` opens the SDK's sessions by URL and copies one conversation between any two
sessions; ``folders`` copies every session of a folder, or of a backend, one at a time, all
or nothing per session.

Example:
    >>> from jsonl_session.transfer import copy_session, open_url
    >>> # await copy_session(JSONLSession("a"), open_url("redis://localhost:6379/0", "a"))
"""

from ..core.deferred_imports import exported_on_first_use

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up
if TYPE_CHECKING:
    from .backends import Backend, copy_session, open_backend, open_url
    from .folders import Outcome, export_all, import_all

__all__ = ["Backend", "Outcome", "copy_session", "export_all", "import_all", "open_backend", "open_url"]

__getattr__, __dir__ = exported_on_first_use(
    __name__,
    {
        "Backend": "backends",
        "Outcome": "folders",
        "copy_session": "backends",
        "export_all": "folders",
        "import_all": "folders",
        "open_backend": "backends",
        "open_url": "backends",
    },
)
del TYPE_CHECKING, exported_on_first_use

"""The surviving mutants no test can kill, each with the one-line reason (``benchmarks/mutation.py``).

A survivor is named by its module, the cosmic-ray operator and the line it changed (stripped),
not a line number: edits above it do not orphan its reason. A reason says why the mutant
behaves like the real code (the same bytes, the same answers), or why the difference cannot be
observed without patching the interpreter. Anything a test *can* tell apart gets a test instead.
"""

from __future__ import annotations

_SIZE_GIVEN = "the size the caller passes is the file's size under the lock: `fstat` gives the same"
_TYPE_ONLY = "imports names used only in annotations at run time too: the same behaviour, a slower start"

EQUIVALENT: dict[tuple[str, str, str], str] = {}

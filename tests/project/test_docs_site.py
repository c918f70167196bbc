"""The documentation site builds with ``mkdocs build --strict``.

``mkdocs.yml`` turns every link, anchor and omitted-page check into a warning, and ``--strict``
turns a warning into a failure: a page that links to a moved file or a missing heading, a page
left out of the navigation, or an API reference entry (mkdocstrings) naming something that no
longer exists fails this test, and so CI. The site is built into a temporary folder, never into
the checkout's ``site/``.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None,
    reason="mkdocs is not installed (it comes with the test extra: pip install -e '.[test]')",
)
def test_the_docs_site_builds_with_no_warning(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{report}"
    assert (site / "index.html").is_file(), report
    assert (site / "api" / "index.html").is_file(), report  # the API reference was generated

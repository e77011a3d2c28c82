"""Every relative link and image in the README, the CHANGELOG, docs/ and benchmarks/README.md names a file that
exists: a guide that moved or a screenshot left out is found here, not by a reader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md",
                *(ROOT / "docs").rglob("*.md")])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code blocks are not links
    return [target for target in LINK.findall(text)
            if not re.match(r"[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_a_file_that_exists(page):
    missing = [target for target in relative_links(page)
               if not (page.parent / target.split("#", 1)[0]).exists()]
    assert missing == [], f"{page.relative_to(ROOT)}: {missing}"


def test_the_links_are_read():
    assert "../images/mlflow_refresh_run.png" in relative_links(ROOT / "docs" / "guides" / "scheduling.md")
    assert "docs/guides/configuration.md" in relative_links(ROOT / "README.md")

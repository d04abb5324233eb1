"""The docs point at what exists: every relative link of README.md, docs/*.md and scripts/experiments/README.md
resolves to a file or folder of this checkout (and a link's #anchor to a heading of the page it names), and
every path in backquotes that looks like one of the repository's (docs/..., scripts/..., tests/data/...,
suites/..., examples/..., specs/...) names a file or folder that is there. A path with a glob (`*`) or a brace
list (`{1,2}`) must match at least one; a placeholder (`YYYY`, `...`) is not a path.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from helpers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "scripts" / "experiments" / "README.md"]
# The folders a path in backquotes must start with to be taken for a repository path (from the checkout's root).
PREFIXES = ("docs/", "scripts/", "tests/data/", "suites/", "examples/", "specs/")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(p) for p in PREFIXES) + r")[\w./*?{},+-]*)")
# In a page of docs/, a path in backquotes that starts with one of these is the page's own (relative to docs/).
LOCAL = re.compile(r"(?<![\w./-])((?:results|images)/[\w./*?{},+-]*)")
PLACEHOLDER = re.compile(r"YYYY|\.\.\.")


def prose(text: str) -> str:
    """`text` without its fenced code blocks (their lines are commands and output, not the page's links)."""
    return re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = text.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", prose(page.read_text()), re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def expand(path: str) -> list[str]:
    """`path` with its brace lists expanded (`a{1,2}b` -> a1b, a2b), as the shell would."""
    parts = re.split(r"\{([^{}]*)\}", path)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def exists(path: str) -> bool:
    if any(ch in path for ch in "*?"):
        return any(ROOT.glob(path.rstrip("/")))
    return (ROOT / path).exists()


def links(page: Path) -> list[str]:
    text = CODE_SPAN.sub("", prose(page.read_text()))
    return [a or b for a, b in LINK.findall(text)]


def code_paths(page: Path) -> list[str]:
    """Each path in the page's backquotes (inline spans and fenced blocks alike) that starts with a PREFIX, from
    the checkout's root; in a page of docs/, also an inline `results/...` or `images/...` (the page's own)."""
    text = page.read_text()
    inline = [m.group(2) for m in CODE_SPAN.finditer(prose(text))]
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    found = [p for span in inline + fenced for p in PATH.findall(span)]
    if page.parent.name == "docs":
        found += ["docs/" + p for span in inline for p in LOCAL.findall(span)]
    return [p.rstrip(".,;:") for p in found if not PLACEHOLDER.search(p)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    bad = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        where, _, anchor = target.partition("#")
        path = (page.parent / where).resolve() if where else page
        if not path.exists():
            bad.append(f"{target}: no such file or folder")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            bad.append(f"{target}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert bad == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_in_backquotes_exists(page: Path) -> None:
    bad = sorted({p for p in code_paths(page) if not all(exists(x) for x in expand(p))})
    assert bad == []


def test_the_checks_see_links_and_paths() -> None:
    """The patterns find what the pages hold (a regex that matched nothing would pass every page)."""
    readme = ROOT / "README.md"
    assert "docs/api.md" in links(readme) and "scripts/gpu_check.sh" in code_paths(readme)
    assert expand("a{1,2}.txt") == ["a1.txt", "a2.txt"]
    assert slug("Issue 4: kernel times against `ncu` (H200)") == "issue-4-kernel-times-against-ncu-h200"
    assert not exists("docs/no-such-page.md") and exists("docs/images/*.png")

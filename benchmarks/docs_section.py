"""A benchmark's own section of docs/benchmarks.md, between `<!-- NAME:begin -->` and
`<!-- NAME:end -->`: rewritten by a rerun, other sections untouched."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def read_section(name: str) -> str | None:
    """The text between the markers, or None when the file or the section is absent."""
    if not DOCS.exists():
        return None
    begin, end = markers(name)
    m = re.search(re.escape(begin) + r"\n?(.*?)\n?" + re.escape(end), DOCS.read_text(), re.S)
    return m.group(1) if m else None


def write_section(name: str, body: str) -> None:
    """Replace (or append) section `name` with `body`."""
    begin, end = markers(name)
    section = f"{begin}\n{body.rstrip()}\n{end}"
    text = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    DOCS.write_text(text)

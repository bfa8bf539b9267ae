"""The manual's pages under docs/, read by the tests that keep them true to the code."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def page(name: str) -> str:
    """The text of docs/NAME.md."""
    return (DOCS / f"{name}.md").read_text()

"""The HTML viewer: one self-contained page (`casegate view`, and beside `check`'s report).

The page is opened from a CI artifact or an email attachment, so it loads nothing: its
style, its script and its data are inline. Model output is untrusted, and the page is
built so none of it can run:

- the page is rendered by jinja2 with autoescaping on;
- the data is a `<script type="application/json">` block whose `<`, `>`, `&` and every
  non-ASCII character are JSON escapes, so no output can close the block or open a comment;
- the script sets every value with textContent, never as HTML;
- a Content-Security-Policy allows only the page's own script and style, by their
  SHA-256 (computed here, from the exact text inlined), and no network at all.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from gate.deciding.compare import Comparison
from gate.deciding.rules import Verdict
from gate.files import OutputError, write_text
from gate.reporting import viewdata
from gate.reporting.charts import history_charts
from gate.results import RunResults

TEMPLATES = "templates"
#: how every page begins: what `write_page` may replace
SIGNATURE = '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'


@cache
def _asset(name: str) -> str:
    return resources.files("gate.reporting").joinpath(TEMPLATES, name).read_text("utf-8")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("gate.reporting", TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )


def embed_json(data: Any) -> str:
    """`data` as JSON that is safe inside a `<script>` element: it holds no `<`, `>` or
    `&` (no `</script>`, no `<!--`), and only ASCII (no U+2028/U+2029, no lone surrogate
    that UTF-8 could not write)."""
    dumped = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return dumped.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def source_hash(text: str) -> str:
    """The CSP source expression allowing exactly this inline script or style."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def policy(script: str, style: str) -> str:
    """No network, no plugin, no form, no base: only these two inline blocks and data: images."""
    return (
        f"default-src 'none'; script-src {source_hash(script)}; "
        f"style-src {source_hash(style)}; img-src data:; base-uri 'none'; form-action 'none'"
    )


def render(head: Mapping[str, Any], cases: list[dict[str, Any]], history: Any = None) -> str:
    """The page, from the head and cases of gate.reporting.viewdata and a history account
    (a HistoryNotes' `to_dict()`; None: no charts)."""
    script, style = _asset("viewer.js"), _asset("viewer.css")
    template = _environment().get_template("viewer.html.j2")
    return template.render(
        csp=policy(script, style),
        head=head,
        charts=history_charts(history),
        # Trusted: the package's own files, and JSON escaped above; inlined verbatim, so the
        # hashes in the policy are of exactly this text.
        style=Markup(style),  # noqa: S704
        script=Markup(script),  # noqa: S704
        data=Markup(embed_json({"head": head, "cases": cases})),  # noqa: S704
    )


def comparison_page(comparison: Comparison, verdict: Verdict) -> str:
    """The page for a comparison: the verdict on top, both sides of every case."""
    history = comparison.history.to_dict() if comparison.history is not None else None
    return render(
        viewdata.comparison_head(comparison, verdict),
        viewdata.comparison_cases(comparison),
        history,
    )


def run_page(results: RunResults, history: Any = None) -> str:
    """The page for one run, without a baseline: its summary and every case."""
    return render(viewdata.run_head(results), viewdata.run_cases(results), history)


def write_page(path: Path, page: str) -> None:
    """Written whole or not at all, every remembered secret masked (gate.files); never
    over a file that is not such a page (`--out casegate.yml` would lose the config)."""
    try:
        with path.open("rb") as stream:
            start = stream.read(len(SIGNATURE))
    except FileNotFoundError:
        start = None
    except OSError as exc:
        raise OutputError(f"{path}: cannot check what it holds ({exc.strerror or exc})") from None
    if start is not None and path.is_file() and start and start != SIGNATURE.encode():
        raise OutputError(
            f"{path}: exists and is not a casegate HTML page; casegate will not replace it: "
            "pick another path (--out PATH)"
        )
    write_text(path, page)

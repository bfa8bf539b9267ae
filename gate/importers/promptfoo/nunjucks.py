"""Templates: promptfoo's nunjucks in, casegate's Jinja2 out."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jinja2
import jinja2.meta
import jinja2.nodes
import jinja2.sandbox

from gate.errors import ConfigError
from gate.importers.promptfoo.common import NeedsPerson
from gate.importers.promptfoo.js import js_string
from gate.systems.templates import compile_template

#: For reading templates only (casegate renders with gate.systems.templates, StrictUndefined).
_JINJA = jinja2.sandbox.SandboxedEnvironment(autoescape=False, keep_trailing_newline=True)
TEMPLATE_SYNTAX = ("{{", "{%", "{#")


def jinja_literal(text: str) -> str:
    """A Jinja2 template that renders `text` exactly, whatever braces it holds."""
    return text.replace("{", '{{ "{" }}')


@dataclass
class Template:
    source: str
    names: set[str] = field(default_factory=set)  # top-level variables it reads
    needs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


#: `{% for a, b in x %}`: nunjucks iterates a mapping's pairs, Jinja2 needs `x.items()`
_PAIR_LOOP = re.compile(r"\{%(-?)\s*for\s+(\w+)\s*,\s*(\w+)\s+in\s+([A-Za-z_][\w.]*)\s*(-?)%\}")


def _pairs(match: re.Match[str]) -> str:
    left, key, value, source, right = match.groups()
    return (
        f"{{%{left} for {key}, {value} in ({source}.items() if {source} is mapping "
        f"else {source}) {right}%}}"
    )


def port_template(source: str, what: str) -> Template:
    """A promptfoo (nunjucks) template as a casegate (Jinja2) one, with what did not port."""
    ported = Template(source)
    try:
        tree = _JINJA.parse(source)
    except jinja2.TemplateSyntaxError as exc:
        ported.source = jinja_literal(source)
        ported.needs.append(
            f"{what} is not a Jinja2 template (line {exc.lineno}: {exc.message}); it is sent "
            "as written, braces and all, until a person ports it"
        )
        return ported
    filters = {node.name for node in tree.find_all(jinja2.nodes.Filter)}
    if "dump" in filters and "dump" not in _JINJA.filters:
        ported.source = re.sub(r"\|(\s*)dump\b", r"|\1tojson", source)
        ported.notes.append(
            f"{what}: nunjucks `dump` became Jinja2 `tojson` (which also writes <, >, & and ' "
            "as \\u003c, \\u003e, \\u0026, \\u0027)"
        )
        filters.discard("dump")
    if _PAIR_LOOP.search(ported.source):
        ported.source = _PAIR_LOOP.sub(_pairs, ported.source)
        ported.notes.append(
            f"{what}: nunjucks `for key, value in mapping` became Jinja2's `.items()` (a "
            "list of pairs is iterated as before)"
        )
    tests = {node.name for node in tree.find_all(jinja2.nodes.Test)}
    unknown = sorted((filters - set(_JINJA.filters)) | (tests - set(_JINJA.tests)))
    if not unknown:
        try:
            compile_template(ported.source)
        except ConfigError as exc:
            unknown = [str(exc)]
    if unknown:
        ported.source = jinja_literal(source)
        ported.needs.append(
            f"{what} uses nunjucks filters or tests Jinja2 lacks ({', '.join(unknown)}); it is "
            "sent as written, braces and all, until a person ports it"
        )
        return ported
    # The variables are read from the ported source: the compiler refuses unknown filters.
    ported.names = set(jinja2.meta.find_undeclared_variables(_JINJA.parse(ported.source)))
    if "env" in ported.names:
        ported.needs.append(
            f"{what} reads `env`: promptfoo fills it from the environment, casegate's template "
            "sees only the case input"
        )
    return ported


_REFERENCE = re.compile(r"\{\{\s*([A-Za-z_]\w*(?:\.\w+|\[\d+\])*)\s*\}\}")


def render_value(value: Any, variables: Mapping[str, Any]) -> Any:
    """An assertion value rendered over the test's vars, as promptfoo does (undefined is '').

    Only `{{ name }}`, `{{ a.b }}` and `{{ a[0] }}` are filled in: anything else in template
    syntax (filters, logic, arithmetic) is left to a person, so no value from the config is
    ever evaluated here.
    """
    if isinstance(value, list):
        return [render_value(item, variables) for item in value]
    if not isinstance(value, str) or not any(mark in value for mark in TEMPLATE_SYNTAX):
        return value
    if any(mark in _REFERENCE.sub("", value) for mark in TEMPLATE_SYNTAX):
        raise NeedsPerson("its value uses nunjucks beyond `{{ var }}`; port it by hand")
    return _REFERENCE.sub(lambda match: _lookup(variables, match.group(1)), value)


def _lookup(variables: Mapping[str, Any], path: str) -> str:
    current: Any = variables
    for part in re.findall(r"\w+", path):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return ""  # nunjucks renders what is undefined as nothing
    return "" if current is None else js_string(current)

"""JSON Schemas for `casegate.yml` and for case files, generated from the models that load them.

Editors validate and complete a file as it is typed when its first line names a schema
(`# yaml-language-server: $schema=…`, which `casegate init` writes). The schemas are built
from the same pydantic models `casegate validate` uses, so a key added to a model is in the
schema the next time it is generated; `schemas/` holds the published copies, and a test
holds them equal to what this module builds.

Three things the models say that pydantic's own schema does not:
- a field's `#:` comment is its description (what an editor shows on hover);
- a key that also takes a short form (`recordings: path`, `cases: one/glob`) takes it here
  too, since the loader widens it before the model sees it;
- `expect` names the checks casegate has, so a misspelt check is marked where it is typed.
"""

from __future__ import annotations

import argparse
import ast
import copy
import inspect
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic and the checks load only when a schema is built
    from pydantic import BaseModel

DRAFT = "https://json-schema.org/draft/2020-12/schema"
#: what each published schema describes, by its file name in `schemas/`
SCHEMA_FILES = {"config": "casegate.schema.json", "cases": "cases.schema.json"}

_STRING = {"type": "string"}
#: (model, field) → the short forms its "before" validator accepts beside the model's type
_SHORT_FORMS: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("Config", "cases"): [_STRING],
    ("Config", "recordings"): [_STRING],
    ("Config", "holdout"): [_STRING],
    ("GateConfig", "max_mean_score_drop"): [{"$ref": "#/$defs/ScoreDrop"}],
}


def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """Each field's `#:` comment lines in the model's source, joined: its description (a
    field a base class declares has the base's comment)."""
    found: dict[str, str] = {}
    for base in reversed(model.__mro__):
        if hasattr(base, "model_fields") and base.__module__.startswith("gate."):
            found.update(_own_comments(base))
    return found


def _own_comments(model: type) -> dict[str, str]:
    try:
        source = inspect.getsource(model)
    except (OSError, TypeError):  # a model built at run time has no source to read
        return {}
    lines = source.splitlines()
    found: dict[str, str] = {}
    for node in ast.parse(source).body[0].body:  # type: ignore[attr-defined]
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        comment: list[str] = []
        row = node.lineno - 2
        while row >= 0 and lines[row].strip().startswith("#:"):
            comment.insert(0, lines[row].strip()[2:].strip())
            row -= 1
        if comment:
            found[node.target.id] = " ".join(comment)
    return found


def _models(root: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The root model and every model its fields hold, by class name."""
    seen: dict[str, type[BaseModel]] = {}
    pending = [root]
    while pending:
        model = pending.pop()
        if model.__name__ in seen:
            continue
        seen[model.__name__] = model
        for info in model.model_fields.values():
            for arg in _types_in(info.annotation):
                if isinstance(arg, type) and hasattr(arg, "model_fields"):
                    pending.append(arg)
    return seen


def _types_in(annotation: Any) -> list[Any]:
    args = getattr(annotation, "__args__", None)
    if not args:
        return [annotation]
    return [found for arg in args for found in _types_in(arg)]


def _describe(schema: dict[str, Any], name: str, model: type[BaseModel]) -> None:
    properties = schema.get("properties", {})
    for field, text in field_comments(model).items():
        if field in properties:
            properties[field].setdefault("description", text)
    for (owner, short), forms in _SHORT_FORMS.items():
        if owner == name and short in properties:
            prop = properties[short]
            choices = prop.pop("anyOf", None) or [
                {k: prop.pop(k) for k in list(prop) if k not in ("description", "default")}
            ]
            prop["anyOf"] = [*forms, *choices]


def _expect_schema() -> dict[str, Any]:
    """`expect`: one property per check and modifier casegate knows, each with the first
    line of its factory's docstring; any other key is refused, as `validate` refuses it."""
    from gate import checks

    properties: dict[str, Any] = {}
    for name in sorted(checks.KNOWN_KEYS):
        factory = checks.REGISTRY.get(name)
        doc = inspect.getdoc(factory) if factory is not None else None
        first = doc.splitlines()[0] if doc else f"`{name}` (see docs/checks.md)"
        properties[name] = {"description": first}
    return {"type": "object", "properties": properties, "additionalProperties": False}


def _built(root: type[BaseModel], title: str) -> dict[str, Any]:
    schema = copy.deepcopy(root.model_json_schema(mode="validation"))
    models = _models(root)
    _describe(schema, root.__name__, root)
    for name, found in schema.get("$defs", {}).items():
        if name in models:
            _describe(found, name, models[name])
    return {"$schema": DRAFT, **schema, "title": title}


def _with_expect(model: dict[str, Any]) -> None:
    """The model's `expect` property, made to name the checks (edited in place)."""
    properties = model.get("properties", {})
    if "expect" in properties:
        described = properties["expect"].get("description")
        properties["expect"] = _expect_schema()
        if described:
            properties["expect"]["description"] = described


def config_schema() -> dict[str, Any]:
    """The schema of `casegate.yml` (and of every `casegate*.yml`)."""
    from gate.suite.config import Config

    schema = _built(Config, "casegate suite configuration (casegate.yml)")
    defaults = schema.get("$defs", {}).get("SuiteDefaults")
    if defaults is not None:
        _with_expect(defaults)
    return schema


def cases_schema() -> dict[str, Any]:
    """The schema of a case file: one case, or a list of cases."""
    from gate.suite.cases import Case

    case = _built(Case, "casegate case")
    _with_expect(case)
    defs = case.pop("$defs", {})
    case.pop("$schema")
    title = case.pop("title")
    return {
        "$schema": DRAFT,
        "title": "casegate case file: one case or a list of cases",
        "$defs": {**defs, "Case": {"title": title, **case}},
        "anyOf": [
            {"$ref": "#/$defs/Case"},
            {"type": "array", "items": {"$ref": "#/$defs/Case"}},
        ],
    }


def schema_of(kind: str) -> dict[str, Any]:
    return config_schema() if kind == "config" else cases_schema()


#: where the schemas of an Action reference are published: its repository's `schemas/`
_RAW = "https://raw.githubusercontent.com/{owner}/{repo}/{ref}/schemas/{file}"
_ACTION = re.compile(r"([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)(?:/[^@\s]*)?@([A-Za-z0-9_./-]+)")


def schema_url(action: str, kind: str, fallback: str) -> str:
    """The published schema for the casegate an Action reference (`OWNER/REPO@REF`) runs;
    a reference of another shape (`./`, `docker://…`) points at `fallback`'s."""
    match = _ACTION.fullmatch(action) or _ACTION.fullmatch(fallback)
    assert match is not None, fallback
    owner, repo, ref = match.groups()
    return _RAW.format(owner=owner, repo=repo, ref=ref, file=SCHEMA_FILES[kind])


def modeline(url: str) -> str:
    """The first line that tells yaml-language-server (VS Code's YAML extension and others)
    which schema a file follows."""
    return f"# yaml-language-server: $schema={url}\n"


def cmd_schema(args: argparse.Namespace) -> int:
    text = json.dumps(schema_of(args.kind), indent=2, ensure_ascii=False) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`casegate schema {config,cases} [--out PATH]`."""
    parser = commands.add_parser(
        "schema",
        help="print the JSON Schema of casegate.yml or of a case file (for editors)",
    )
    parser.add_argument("kind", choices=tuple(SCHEMA_FILES), help="which file's schema")
    parser.add_argument("--out", type=Path, help="write it here instead of printing it")
    parser.set_defaults(handler=cmd_schema)

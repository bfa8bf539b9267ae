"""MkDocs hook: the config and CLI references, generated at build time from the code.

`reference/config.md` is built from the JSON Schema of `casegate.yml`, which is itself
generated from the pydantic models `casegate validate` loads with (gate.suite.schema), and
`reference/cli.md` from the argparse parsers the `casegate` command runs. Neither page is
committed, so neither can drift from the code: a key or an option exists in the docs exactly
when it exists in the program.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from gate.cli import build_parser
from gate.suite.schema import cases_schema, config_schema

#: argparse wraps help to the terminal's width: fixed, so every build writes the same page
HELP_WIDTH = "96"


def _type_of(node: dict[str, Any]) -> str:
    """A JSON Schema fragment as a reader would say its type."""
    if "$ref" in node:
        return f"[{node['$ref'].rsplit('/', 1)[-1]}](#{node['$ref'].rsplit('/', 1)[-1].lower()})"
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " or ".join(f"`{json.dumps(value)}`" for value in node["enum"])
    if "anyOf" in node:
        return " or ".join(dict.fromkeys(_type_of(choice) for choice in node["anyOf"]))
    kind = node.get("type", "any")
    if kind == "array":
        return f"list of {_type_of(node.get('items', {}))}"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"mapping to {_type_of(node['additionalProperties'])}"
    return {"object": "mapping", "null": "null", "integer": "whole number"}.get(kind, kind)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(model: dict[str, Any]) -> list[str]:
    rows = ["| key | type | default | what it is |", "|---|---|---|---|"]
    required = set(model.get("required", []))
    for key, node in model.get("properties", {}).items():
        default = (
            "required"
            if key in required
            else f"`{json.dumps(node['default'])}`"
            if "default" in node
            else ""
        )
        rows.append(
            f"| `{key}` | {_cell(_type_of(node))} | {_cell(default)} "
            f"| {_cell(node.get('description', ''))} |"
        )
    return rows


def config_reference() -> str:
    schema = config_schema()
    lines = [
        "# Configuration reference",
        "",
        "Every key of `casegate.yml`, generated from the models `casegate validate` loads it",
        "with (the same ones `casegate schema config` turns into the editor schema). A key's",
        "description is the comment beside it in the code. The case format follows.",
        "",
        "## casegate.yml",
        "",
        *_table(schema),
    ]
    for name, model in sorted(schema.get("$defs", {}).items()):
        if model.get("properties"):
            lines += ["", f"## {name}", "", *_table(model)]
    case = cases_schema()["$defs"]["Case"]
    checks = case["properties"]["expect"]["properties"]
    lines += [
        "",
        "## A case",
        "",
        "A case file holds one case or a list of cases (`.yaml`/`.yml`), or one per line",
        "(`.jsonl`).",
        "",
        *_table(case),
        "",
        "## Checks",
        "",
        "The keys `expect` takes: every check casegate has, and the modifiers.",
        "",
        "| key | what it checks |",
        "|---|---|",
        *(f"| `{name}` | {_cell(node.get('description', ''))} |" for name, node in checks.items()),
    ]
    return "\n".join(lines) + "\n"


def _commands(
    parser: argparse.ArgumentParser, prefix: str
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(prefix, parser)]
    for action in parser._actions:  # argparse keeps its subparsers here, and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, f"{prefix} {name}")
    return found


def cli_reference() -> str:
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        parser = build_parser()
        lines = [
            "# Command-line reference",
            "",
            "Every `casegate` command with its options, as `casegate COMMAND --help` prints them",
            "(generated from the parsers the command runs).",
        ]
        for name, sub in _commands(parser, "casegate"):
            lines += ["", f"## `{name}`", "", "```text", sub.format_help().rstrip(), "```"]
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    return "\n".join(lines) + "\n"


PAGES = {"reference/config.md": config_reference, "reference/cli.md": cli_reference}


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, build in PAGES.items():
        files.append(File.generated(config, path, content=build()))
    return files

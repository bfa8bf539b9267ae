"""promptfoo's tests as casegate cases: defaultTest, vars and their combinations."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.importers.promptfoo.assertions import Context, map_assertion
from gate.importers.promptfoo.common import MAX_COMBINATIONS, NeedsPerson
from gate.importers.promptfoo.expect import Expect
from gate.importers.promptfoo.js import js_string, plain, shown_value
from gate.importers.promptfoo.prompts import CODE_SUFFIXES
from gate.importers.promptfoo.reading import (
    Folder,
    line_at,
    problem_at,
    resolve_ref,
)
from gate.importers.promptfoo.sensitive import MASK, names_secret
from gate.yamlfile import LineDict, printable


@dataclass
class Report:
    """What became of one promptfoo test, for MIGRATION.md."""

    number: int
    title: str
    where: str
    cases: list[str] = field(default_factory=list)
    mapped: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    assertions: int = 0
    assertions_mapped: int = 0
    skipped: list[str] = field(default_factory=list)
    became: str = ""  # the first case's `expect`, shown

    @property
    def mechanical(self) -> bool:
        return bool(self.cases) and not self.needs and not self.skipped


@dataclass
class Draft:
    id: str
    input: dict[str, Any]
    expect: dict[str, Any]
    extra: dict[str, Any]
    report: Report
    notes: list[str] = field(default_factory=list)
    #: what the defaultTest assertions alone became for this case
    inherited: dict[str, Any] = field(default_factory=dict)


_TEST_KEYS = {"description", "vars", "assert", "threshold", "metadata", "options", "weight"}
_HANDLED_OPTIONS = {
    "disableDefaultAsserts",
    "disableVarExpansion",
    "provider",
    "runSerially",
    "transform",
}


_TEST_SHAPES: dict[str, tuple[type, ...]] = {
    "vars": (dict, str),
    "assert": (list,),
    "options": (dict,),
    "metadata": (dict,),
}


def check_shape(test: Any, path: Path, what: str) -> None:
    """A test (or defaultTest) whose parts have the types promptfoo requires; else one line."""
    if not isinstance(test, dict):
        raise problem_at(path, line_at(test), f"{what} must be a mapping")
    for key, shapes in _TEST_SHAPES.items():
        value = test.get(key)
        if value is not None and not isinstance(value, shapes):
            names = " or ".join("a mapping" if s is dict else f"a {s.__name__}" for s in shapes)
            raise problem_at(path, line_at(test, key), f"{what}: {key} must be {names}")


def merge_default(test: Mapping[str, Any], default: Mapping[str, Any]) -> dict[str, Any]:
    """promptfoo's defaultTest merge: vars, metadata and options under the test's own."""
    merged: dict[str, Any] = {**default, **test}
    for key in ("vars", "metadata", "options"):
        inner = [part.get(key) for part in (default, test)]
        if all(isinstance(part, dict) or part is None for part in inner):
            merged[key] = {**(inner[0] or {}), **(inner[1] or {})}
    options = merged.get("options") or {}
    own = list(test.get("assert") or [])
    inherited = [] if options.get("disableDefaultAsserts") else list(default.get("assert") or [])
    merged["assert"] = [*inherited, *own]
    merged["_inherited"] = len(inherited)
    located_copy = LineDict(merged)  # keeps the test's lines for messages
    located_copy.line = line_at(test) or 0
    located_copy.key_lines = dict(getattr(test, "key_lines", {}))
    return located_copy


def _combinations(variables: Mapping[str, Any]) -> list[dict[str, Any]]:
    """promptfoo's generateVarCombinations: a var holding a list of strings runs once each."""
    keys = list(variables)
    choices = [
        variables[key]
        if isinstance(variables[key], list)
        and variables[key]
        and isinstance(variables[key][0], str)
        else [variables[key]]
        for key in keys
    ]
    if math.prod(len(choice) for choice in choices) > MAX_COMBINATIONS:
        return []
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*choices)]


def _prepared_vars(
    variables: Mapping[str, Any], folder: Folder, report: Report
) -> dict[str, Any] | None:
    """The vars as promptfoo renders them: files read, one trailing newline dropped, `{{x}}`
    references between vars resolved. None when a var needs a person."""
    prepared: dict[str, Any] = {}
    for key, value in variables.items():
        if names_secret(key) and value == MASK:
            dropped = (
                f"var `{printable(str(key))}`: its value was dropped (its name says it holds a "
                "secret, and a secret never goes into a casegate file); the case sends `***` "
                "until a person puts a test value there"
            )
            if dropped not in report.needs:
                report.needs.append(dropped)
        if isinstance(value, str) and value.startswith("file://"):
            media = media_kind(value)
            if media is not None:
                folder.inside(value, None, f"vars.{key}")
                report.skipped.append(
                    f"var `{printable(str(key))}` is {media} ({printable(value)}): casegate's "
                    "chat providers send text only (a case's `input_files` reach a python or "
                    "command system, which would attach the file itself), so this test was not "
                    "imported; the rest of the suite was"
                )
                return None
            path = folder.paths(value, None, f"vars.{key}")[0]
            if path.suffix in CODE_SUFFIXES:
                report.skipped.append(f"var `{key}` comes from {value}, which casegate cannot read")
                return None
            text = folder.text(path, folder.config)
            if path.suffix in (".yaml", ".yml"):
                text = json.dumps(plain(folder.parse(text, path)), ensure_ascii=False, default=str)
            value = text.strip()
        if isinstance(value, str):
            value = value.removesuffix("\n")
        elif isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            value = int(value)  # JavaScript prints 1.0 as "1"
        elif value is None:
            value = ""  # nunjucks prints null as nothing
        prepared[str(key)] = plain(value)
    _resolve_between(prepared)
    return prepared


#: what a var read from a file of these kinds holds: casegate's chat providers send text only
MEDIA = {
    "an image": (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".svg"),
    "audio": (".wav", ".mp3", ".m4a", ".ogg", ".flac", ".aac", ".opus", ".webm"),
    "a video": (".mp4", ".mov", ".avi", ".mkv"),
    "a PDF": (".pdf",),
}


def media_kind(reference: str) -> str | None:
    suffix = Path(reference.removeprefix("file://")).suffix.lower()
    return next((kind for kind, suffixes in MEDIA.items() if suffix in suffixes), None)


def _vars_files(
    reference: str | list[Any], path: Path, folder: Folder, report: Report
) -> dict[str, Any]:
    """`vars: file.yaml` (or a glob, or a list of them): promptfoo reads them from the test
    file's folder, merged in order; each must still lie inside the config's folder."""
    merged: dict[str, Any] = {}
    for entry in reference if isinstance(reference, list) else [reference]:
        if not isinstance(entry, str):
            raise problem_at(path, None, f"test {report.number}: vars must be a mapping or files")
        for file in folder.paths(entry, None, f"test {report.number} vars", base=path.parent):
            document = folder.parse(folder.text(file, folder.config), file)
            if not isinstance(document, dict):
                raise problem_at(file, 1, f"test {report.number}: vars file is not a mapping")
            merged.update(document)
    return merged


def _resolve_between(variables: dict[str, Any]) -> None:
    """promptfoo's resolveVariables: `{{name}}` inside a var, up to five rounds."""
    reference = re.compile(r"\{\{\s*(\w+)\s*\}\}", re.ASCII)
    for _ in range(5):
        changed = False
        for key, value in variables.items():
            match = reference.search(value) if isinstance(value, str) else None
            if match and match.group(1) in variables:
                replacement = js_string(variables[match.group(1)])
                variables[key] = value.replace(match.group(0), replacement, 1)
                changed = True
        if not changed:
            return


def _tags(metadata: Any, report: Report) -> list[str]:
    tags: list[str] = []
    for key, value in (metadata or {}).items() if isinstance(metadata, dict) else ():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if names_secret(key) and item == MASK:
                report.notes.append(f"metadata `{key}` not carried over (it held a secret)")
            elif isinstance(item, dict | list):
                report.notes.append(f"metadata `{key}` not carried over (not text)")
            elif key == "tags":
                tags.append(js_string(item))
            else:
                tags.append(f"{key}={js_string(item)}")
    return list(dict.fromkeys(tags))


def _test_needs(test: Mapping[str, Any], report: Report, context: Context) -> None:
    options: dict[str, Any] = test["options"] if isinstance(test.get("options"), dict) else {}
    if test.get("threshold") is not None:
        report.needs.append(
            f"`threshold: {js_string(test['threshold'])}`: promptfoo passes the test when the "
            "weighted score of its assertions reaches it; casegate passes a case when every "
            "check passes"
        )
    if test.get("provider") is not None:
        report.needs.append(
            f"the test runs its own provider {shown_value(test['provider'], 80)}; "
            "casegate runs one system per config"
        )
    if options.get("provider") is not None:
        context.judges.append(options["provider"])
    if options.get("transform") is not None:
        context.transform = str(options["transform"])
    for key in sorted(set(options) - _HANDLED_OPTIONS):
        report.needs.append(
            f"`options.{key}` {shown_value(options[key], 80)} not carried over (casegate has none)"
        )
    for key in sorted(set(test) - _TEST_KEYS - {"_inherited"}):
        report.notes.append(f"`{key}` not carried over")


def _assertions(test: Mapping[str, Any], path: Path, root: Any) -> Iterator[tuple[Any, bool]]:
    """(assertion, inherited from defaultTest), `$ref`s resolved, plain assert-sets flattened."""
    inherited = int(test.get("_inherited", 0))
    for index, raw in enumerate(test.get("assert") or []):
        assertion = resolve_ref(raw, root, path)
        if (
            isinstance(assertion, dict)
            and assertion.get("type") == "assert-set"
            and assertion.get("threshold") is None
            and isinstance(assertion.get("assert"), list)
        ):
            # Without a threshold every assertion of the set must pass: the case's own rule.
            for inner in assertion["assert"]:
                yield resolve_ref(inner, root, path), index < inherited
        else:
            yield assertion, index < inherited


#: the tag of a case written for a test whose output promptfoo left for a person to read
DRAFT_TAG = "draft"


def _inherited_expect(assertions: list[tuple[Any, bool]], context: Context) -> dict[str, Any]:
    """What the defaultTest assertions alone become for this case (its `defaults:` part)."""
    expect = Expect()
    for assertion, inherited in assertions:
        if not inherited:
            continue
        context.inherited = True
        try:
            map_assertion(assertion, expect, context)
        except NeedsPerson as exc:
            if len(exc.args) > 1:
                expect.custom.append(exc.args[1])
    return expect.build()[0]


def _contexts(variables: Mapping[str, Any], expect: Mapping[str, Any]) -> list[str] | None:
    """promptfoo's `context` var as the case input's `contexts`, for the RAG checks."""
    if not {"faithfulness", "context_recall", "context_precision"} & set(expect):
        return None
    context = variables.get("context")
    if isinstance(context, str):
        return [context]
    if isinstance(context, list) and all(isinstance(item, str) for item in context):
        return list(context)
    return None


def draft_cases(
    test: Mapping[str, Any],
    report: Report,
    context: Context,
    path: Path,
    root: Any,
    provenance: str,
) -> list[Draft]:
    _test_needs(test, report, context)
    variables = test.get("vars") or {}
    if isinstance(variables, str | list):
        variables = _vars_files(variables, path, context.folder, report)
    if not isinstance(variables, dict):
        raise problem_at(
            path, line_at(test, "vars"), f"test {report.number}: vars must be a mapping"
        )
    assertions = list(_assertions(test, path, root))
    for assertion, _ in assertions:
        if not isinstance(assertion, dict) or not isinstance(assertion.get("type"), str):
            raise problem_at(
                path,
                line_at(assertion) or line_at(test, "assert"),
                f"test {report.number}: an assertion must be a mapping with a `type`",
            )
    extra: dict[str, Any] = {"provenance": provenance}
    if isinstance(test.get("description"), str) and test["description"].strip():
        extra["note"] = test["description"].strip()
    tags = _tags(test.get("metadata"), report)
    if tags:
        extra["tags"] = tags
    weight = test.get("weight")
    if isinstance(weight, int | float) and not isinstance(weight, bool) and 0 < weight < math.inf:
        extra["weight"] = weight
    drafts: list[Draft] = []
    options: Mapping[str, Any] = test["options"] if isinstance(test.get("options"), dict) else {}
    combos = [dict(variables)] if options.get("disableVarExpansion") else _combinations(variables)
    if not combos:
        report.skipped.append(
            f"its array vars make more than {MAX_COMBINATIONS:,} combinations; write the cases "
            "you want to keep by hand"
        )
        return []
    for number, combo in enumerate(combos, start=1):
        prepared = _prepared_vars(combo, context.folder, report)
        if prepared is None:
            return []
        context.variables = prepared
        expect = Expect()
        described: list[str] = []
        needs: list[str] = []
        mapped = 0
        for assertion, inherited in assertions:
            origin = " (from defaultTest)" if inherited else ""
            context.inherited = inherited
            try:
                described.append(map_assertion(assertion, expect, context) + origin)
                mapped += 1
            except NeedsPerson as exc:
                needs.append(f"{exc.args[0]}{origin}; original: {shown_value(assertion)}")
                if len(exc.args) > 1:
                    expect.custom.append(exc.args[1])
        built, notes = expect.build()
        default_part = _inherited_expect(assertions, context) if test.get("_inherited") else {}
        if number == 1:
            report.assertions, report.assertions_mapped = len(assertions), mapped
            report.mapped.extend(described)
            report.needs.extend(needs)
            report.notes.extend(notes)
        own_extra = extra
        if not built:
            # promptfoo shows such an output for a person to read (or judges it with
            # something casegate lacks): a draft case that fails until a person gives it a check
            built = {"check": context.stubs.draft()}
            own_extra = {**extra, "tags": [*extra.get("tags", []), DRAFT_TAG]}
            if number == 1:
                report.needs.append(
                    "a draft case: "
                    + (
                        "no assertion became a check"
                        if assertions
                        else "the test has no assertion (promptfoo shows its output for a person "
                        "to read)"
                    )
                    + f"; its check `{built['check']}` fails until a person writes one "
                    f"(tag `{DRAFT_TAG}`)"
                )
        contexts = _contexts(prepared, built)
        if contexts is not None:
            prepared = {**prepared, "contexts": contexts}
        if number == 1:
            report.became = shown_value(built, 600)
        drafts.append(Draft("", prepared, built, own_extra, report, inherited=default_part))
        if len(combos) > 1 and number == 1:
            report.notes.append(f"its array vars run as {len(combos)} cases, one per combination")
    return drafts

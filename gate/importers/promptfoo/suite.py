"""The whole import: read the config, map every part, validate, then write."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.errors import SystemCallError
from gate.importers.promptfoo.assertions import Context, Stubs
from gate.importers.promptfoo.cases import (
    DRAFT_TAG,
    Draft,
    Report,
    check_shape,
    draft_cases,
    merge_default,
)
from gate.importers.promptfoo.common import JUDGE_STUB, SEMANTICS, PromptfooError
from gate.importers.promptfoo.js import slug_of
from gate.importers.promptfoo.nunjucks import Template
from gate.importers.promptfoo.prompts import Prompt, read_prompts
from gate.importers.promptfoo.providers import (
    Pin,
    Provider,
    classify_provider,
    connection,
    environment_endpoints,
    key_placeholder,
    read_providers,
)
from gate.importers.promptfoo.reading import (
    Folder,
    line_at,
    problem_at,
    resolve_ref,
)
from gate.importers.promptfoo.scores import build_problem, service_pins, uses_judge
from gate.importers.promptfoo.sensitive import Endpoint
from gate.importers.promptfoo.splitting import split_defaults
from gate.importers.promptfoo.tables import tests_in_csv, tests_in_xlsx
from gate.importers.promptfoo.withheld import withheld
from gate.importers.promptfoo.writing import (
    Variant,
    dump_yaml,
    migration_notes,
    suite_files,
    write_all,
)
from gate.suite.cases import MAX_ID_LENGTH, Case
from gate.systems.templates import render
from gate.yamlfile import YamlSyntaxError, load_yaml, printable


@dataclass
class Outcome:
    """What an import wrote and how much of the suite mapped mechanically."""

    out: Path
    written: list[Path]
    tests: int
    tests_mapped: int
    cases: int
    assertions: int
    assertions_mapped: int
    #: the providers' settings (config keys, options, endpoints); an endpoint or a secret
    #: is never mapped
    settings: int = 0
    settings_mapped: int = 0
    #: said on stderr as the import ends: what was dropped or left out, never a value
    warnings: list[str] = field(default_factory=list)
    #: cases written for tests with no check (tagged `draft`), which fail until given one
    drafts: int = 0

    def summary_line(self) -> str:
        return (
            f"imported {self.tests} promptfoo test(s) as {self.cases} case(s) into {self.out}, "
            f"following {SEMANTICS}: {share(self.assertions_mapped, self.assertions)} "
            f"assertions and {share(self.tests_mapped, self.tests)} tests mapped mechanically, "
            f"{share(self.settings_mapped, self.settings)} provider settings (never an endpoint "
            f"or a secret); what needs a person is listed in {self.out / 'MIGRATION.md'}"
        )


def share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({part / whole:.0%})" if whole else "0 of 0"


def _load_tests(config: Mapping[str, Any], folder: Folder) -> list[tuple[Any, Path, Any]]:
    """(test, the file it came from, that file's document) for every test."""
    raw = config.get("tests")
    line = line_at(config, "tests")
    if raw is None:
        return []
    entries = raw if isinstance(raw, list) else [raw]
    tests: list[tuple[Any, Path, Any]] = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str) and "vars" not in entry:
            entry = entry["path"]  # `{path, config}`: a generator's file and its options
        if isinstance(entry, str) and re.match(r"(?i)(huggingface|https?)://", entry):
            raise problem_at(
                folder.config,
                line,
                f"tests: {entry[:120]!r} is a remote dataset, and casegate import reads local "
                "files only: save its rows as CSV or JSONL beside the config and name that file",
            )
        if isinstance(entry, str) and re.search(r"\.(py|[cm]?[jt]s)(:\w+)?$", entry):
            raise problem_at(
                folder.config,
                line,
                f"tests: {entry[:120]!r} is a program that generates the tests, and casegate "
                "never runs a config's code: run it, save its tests as YAML and name that file",
            )
        if isinstance(entry, str):
            entry, _, sheet = entry.partition("#") if ".xlsx#" in entry else (entry, "", "")
            for path in folder.paths(entry, line, "tests"):
                tests.extend(_tests_in_file(path, folder, line, sheet or None))
        elif isinstance(entry, dict):
            tests.append((entry, folder.config, config))
        else:
            raise problem_at(folder.config, line, "tests must be test mappings or file references")
    return tests


def _tests_in_file(
    path: Path, folder: Folder, line: int | None, sheet: str | None = None
) -> list[tuple[Any, Path, Any]]:
    if path.suffix == ".csv":
        return [(test, path, test) for test in tests_in_csv(path, folder, folder.config, line)]
    if path.suffix == ".xlsx":
        return [(test, path, test) for test in tests_in_xlsx(path, sheet, path)]
    if path.suffix not in (".yaml", ".yml", ".json", ".jsonl"):
        raise problem_at(
            folder.config,
            line,
            f"tests: {path.name}: only CSV, XLSX, YAML, JSON and JSONL test files are imported "
            + (
                "(save the sheet as .xlsx or CSV: casegate reads no older spreadsheet format)"
                if path.suffix in (".xls", ".ods")
                else "(tests a program generates need a person: run it, save its tests as YAML)"
            ),
        )
    text = folder.text(path, folder.config, line)
    if path.suffix == ".jsonl":
        rows = [
            folder.parse(row, path.with_suffix(".json"), path)
            for row in text.splitlines()
            if row.strip()
        ]
        return [(row, path, row) for row in rows]
    document = folder.parse(text, path)
    items = document if isinstance(document, list) else [document]
    return [(item, path, document) for item in items]


def _where(path: Path, folder: Folder, line: int | None) -> str:
    shown = (
        path.resolve().relative_to(folder.root)
        if path.resolve().is_relative_to(folder.root)
        else path
    )
    return f"{shown}:{line}" if line else str(shown)


def _unique_id(base: str, taken: set[str]) -> str:
    base = base[: MAX_ID_LENGTH - 8] or "test"
    candidate, counter = base, 1
    while candidate in taken:
        counter += 1
        candidate = f"{base}-{counter}"
    taken.add(candidate)
    return candidate


def _validated(draft: Draft, templates: Sequence[Template]) -> str | None:
    """Why casegate would refuse this case (or fail to render its message), else None."""
    record = {"id": draft.id, "input": draft.input, "expect": draft.expect, **draft.extra}
    try:
        loaded = load_yaml(dump_yaml(record))
        case = Case.model_validate(loaded)
    except (YamlSyntaxError, ValueError) as exc:
        return " ".join(str(exc).split())[:300]
    problem = build_problem(case.expect)
    if problem:
        return " ".join(problem.split())[:300]
    if "messages" in case.input:
        return "a var named `messages` would be sent as the whole conversation in casegate"
    for template in templates:
        try:
            render(template.source, case.id, case.input)
        except SystemCallError as exc:
            return str(exc)
    return None


def _fill_missing(draft: Draft, templates: Sequence[Template]) -> None:
    """A var the template reads but the test lacks renders as nothing in promptfoo."""
    missing = sorted({n for t in templates for n in t.names} - set(draft.input) - {"env"})
    for name in missing:
        draft.input[name] = ""
    if missing:
        draft.notes.append(
            f"`{draft.id}`: {', '.join(missing)} set to '' (promptfoo renders a missing var as "
            "nothing; casegate refuses it)"
        )


def _variants(providers: Sequence[Provider], prompts: Sequence[Prompt]) -> list[Variant]:
    variants: list[Variant] = []
    taken: set[str] = set()
    for provider in providers:
        chosen = [
            prompt
            for prompt in prompts
            if provider.prompts is None
            or any(prompt.label == p or prompt.label.startswith(f"{p}:") for p in provider.prompts)
        ] or list(prompts)
        for prompt in chosen:
            if not variants:
                name = "casegate.yml"
            else:
                middle = provider.label + (
                    "" if len(prompts) == 1 else "." + (slug_of(prompt.label, 40) or "prompt")
                )
                name = f"casegate.{middle}.yml"
                counter = 1
                while name in taken:
                    counter += 1
                    name = f"casegate.{middle}-{counter}.yml"
            taken.add(name)
            variants.append(Variant(provider, prompt, name))
    return variants


def _judge_pin(candidates: Sequence[Any], notes: list[str], inherited: Sequence[Endpoint]) -> Pin:
    """promptfoo's first grader casegate has an adapter for, else a stub pin; the grader's
    endpoints (and the `env:` ones that reach it) are left out, as a system's are."""
    settings: dict[str, Any] = {**JUDGE_STUB}
    config: Mapping[str, Any] = {}
    for candidate in candidates:
        provider_id = candidate if isinstance(candidate, str) else None
        if isinstance(candidate, dict) and isinstance(candidate.get("id"), str):
            provider_id = candidate["id"]
        classified = classify_provider(provider_id) if provider_id else None
        if classified:
            kind, api, model = classified
            notes.append(f"the judge is pinned to promptfoo's grader `{provider_id}`")
            settings = {"provider": kind, "model": model, "prompt_version": 1}
            if api == "responses":
                settings["api"] = api
            if isinstance(candidate, dict) and isinstance(candidate.get("config"), dict):
                config = candidate["config"]
            break
    endpoints, host = connection(str(settings["provider"]), config, inherited)
    pin = Pin({**settings, "temperature": 0}, endpoints, host)
    if host is not None:
        pin.settings["api_key_env"] = key_placeholder(host)
    return pin


def _suite_name(config: Mapping[str, Any], path: Path) -> str:
    description = config.get("description")
    name = slug_of(description, 60) if isinstance(description, str) else ""
    name = name.lstrip("-._") or slug_of(path.resolve().parent.name, 60).lstrip("-._")
    return name or "promptfoo"


def _config_problems(config: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(needs a person, notes) for the config's top-level keys casegate does not take."""
    needs, notes = [], []
    repeat = _repeat(config)
    if repeat:
        notes.append(
            f"`repeat: {repeat}` became `samples: {repeat}`: promptfoo counts each run on its "
            f"own, casegate passes a case when its {repeat} samples pass (`min_pass_rate`)"
        )
    for key, why in (
        ("scenarios", "scenarios (vars × tests) are not imported"),
        ("nunjucksFilters", "custom nunjucks filters are code casegate does not run"),
        ("extensions", "extension hooks are code casegate does not run"),
        ("redteam", "red-team generation is not imported"),
    ):
        if config.get(key) is not None:
            needs.append(f"`{key}`: {why}")
    for key, why in (
        ("derivedMetrics", "casegate reports pass rates, not derived metrics"),
        ("env", "its values are not copied; set the environment where casegate runs"),
        ("outputPath", "casegate writes its results under .casegate/"),
    ):
        if config.get(key) is not None:
            notes.append(f"`{key}` not carried over: {why}")
    return needs, notes


def _repeat(config: Mapping[str, Any]) -> int | None:
    for block in ("evaluateOptions", "commandLineOptions"):
        options = config.get(block)
        repeat = options.get("repeat") if isinstance(options, dict) else None
        if isinstance(repeat, int) and not isinstance(repeat, bool) and 1 < repeat <= 1000:
            return repeat
    return None


def import_promptfoo(config_path: Path, out: Path) -> Outcome:
    """Read a promptfoo config, write the casegate suite into `out`; PromptfooError or
    ConfigError (a file that exists) before anything is written."""
    folder = Folder(config_path)
    if not config_path.is_file():
        raise PromptfooError(f"{config_path}: no such promptfoo config file")
    document = folder.parse(folder.text(config_path), config_path)
    if not isinstance(document, dict):
        raise problem_at(
            config_path, 1, "a promptfoo config is a mapping (prompts, providers, tests)"
        )
    prompts = read_prompts(document, folder)
    inherited = environment_endpoints(document.get("env"))
    providers = read_providers(document, folder, inherited)
    variants = _variants(providers, prompts)
    suite = _suite_name(document, config_path)
    default = resolve_ref(document.get("defaultTest") or {}, document, config_path)
    if isinstance(default, str):
        default = folder.document(default, line_at(document, "defaultTest"), "defaultTest")
    check_shape(default, config_path, "defaultTest")

    stubs = Stubs()
    judges: list[Any] = []
    reports: list[Report] = []
    drafts: list[Draft] = []
    taken: set[str] = set()
    templates = [variant.prompt.message for variant in variants]
    for number, (test, path, root) in enumerate(_load_tests(document, folder), start=1):
        test = resolve_ref(test, root, path)
        check_shape(test, path, f"test {number}")
        where = _where(path, folder, line_at(test))
        title = str(test.get("description") or f"test {number}")
        report = Report(number, printable(title), where)
        reports.append(report)
        base = slug_of(test["description"], 120) if isinstance(test.get("description"), str) else ""
        base = base or f"test-{number}"
        context = Context(
            folder,
            f"test {number}" + (f" ({printable(title)})" if test.get("description") else ""),
            base,
            stubs,
            judges,
            declares_tools=all(variant.provider.system.get("tools") for variant in variants),
        )
        merged = merge_default(test, default)
        new = draft_cases(
            merged, report, context, path, root, f"promptfoo {config_path.name}, test {number}"
        )
        for index, draft in enumerate(new, start=1):
            draft.id = _unique_id(base if len(new) == 1 else f"{base}-{index}", taken)
            _fill_missing(draft, templates)
            problem = _validated(draft, templates)
            if problem:
                report.skipped.append(f"case `{draft.id}` not written: {problem}")
                continue
            report.cases.append(draft.id)
            report.notes.extend(draft.notes)
            drafts.append(draft)
    if not drafts:
        reasons = "; ".join(dict.fromkeys(s for r in reports for s in r.skipped)) or "it has none"
        raise problem_at(
            config_path, line_at(document, "tests"), f"no test became a case ({reasons[:300]})"
        )

    suite_needs, suite_notes = _config_problems(document)
    draft_count = sum(DRAFT_TAG in draft.extra.get("tags", ()) for draft in drafts)
    if draft_count:
        suite_needs.append(
            f"{draft_count} draft case(s), tagged `{DRAFT_TAG}`: promptfoo ran their tests with "
            "no check casegate could take (most often none at all, for a person to read the "
            "output). Each fails until a person writes its `expect`; `--tag "
            f"{DRAFT_TAG}` picks them, `--tag '!{DRAFT_TAG}'` leaves them out until then"
        )
    judged = any(uses_judge(draft.expect) for draft in drafts)
    pin = _judge_pin(judges, suite_notes, inherited) if judged else None
    services = service_pins([draft.expect for draft in drafts])
    defaults = split_defaults(drafts, suite_notes)
    reached = [e for p in providers for e in p.endpoints] + (pin.endpoints if pin else [])
    loose = [endpoint for endpoint in inherited if endpoint not in reached]
    files = suite_files(
        suite,
        variants,
        drafts,
        stubs.stubs,
        pin,
        _repeat(document),
        config_path,
        services,
        folder.scrubber,
        loose,
        defaults,
    )
    left_out = withheld(variants, pin, inherited, loose, folder.scrubber)
    files["MIGRATION.md"] = migration_notes(
        config_path,
        suite,
        variants,
        reports,
        stubs.stubs,
        pin,
        suite_needs,
        suite_notes,
        default,
        sorted(files),
        left_out.migration_lines(),
        (left_out.settings_mapped, left_out.settings),
    )
    files["MIGRATION.md"] = folder.scrubber.mask_text(files["MIGRATION.md"])
    written = write_all(out, files)
    outcome = Outcome(
        out,
        written,
        tests=len(reports),
        tests_mapped=sum(r.mechanical for r in reports),
        cases=len(drafts),
        assertions=sum(r.assertions for r in reports),
        assertions_mapped=sum(r.assertions_mapped for r in reports),
        settings=left_out.settings,
        settings_mapped=left_out.settings_mapped,
        warnings=[folder.scrubber.mask_text(line) for line in left_out.warnings()],
        drafts=draft_count,
    )
    for warning in outcome.warnings:  # as gate.suite.project does: the command prints the rest
        print(f"casegate: warning: {warning}", file=sys.stderr)
    return outcome

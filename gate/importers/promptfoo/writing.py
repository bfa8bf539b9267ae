"""What the import writes: configs, cases, stubs and MIGRATION.md."""

from __future__ import annotations

import datetime as dt
import json
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gate.files import write_new_files
from gate.importers.promptfoo.assertions import Stub
from gate.importers.promptfoo.cases import Draft, Report
from gate.importers.promptfoo.common import (
    CHECKS_MODULE,
    CONTAINS_LIST_PARSING,
    SEMANTICS,
    SYSTEMS_MODULE,
)
from gate.importers.promptfoo.js import inline_code, plain
from gate.importers.promptfoo.prompts import Prompt
from gate.importers.promptfoo.providers import (
    DEFAULT_KEY_ENV,
    Pin,
    Provider,
    config_endpoint,
    foreign_host,
    key_placeholder,
    system_problems,
)
from gate.importers.promptfoo.reading import YAML_TAG
from gate.importers.promptfoo.sensitive import (
    Endpoint,
    Scrubber,
    names_endpoint,
    names_secret,
    names_variable,
)
from gate.importers.promptfoo.stubfiles import SYSTEMS_MODULE_TEXT, checks_module
from gate.suite.judgepin import model_family
from gate.yamlfile import printable


@dataclass
class Variant:
    provider: Provider
    prompt: Prompt
    config_name: str
    prompt_file: str | None = None
    notes: list[str] = field(default_factory=list)
    #: the system's endpoints: the provider's, and any in the prompt's config
    endpoints: list[Endpoint] = field(default_factory=list)
    foreign_host: str | None = None


class SuiteDumper(yaml.SafeDumper):
    """Multi-line text as `|` blocks, so prompts and rubrics stay readable in review."""


def represent_text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    return dumper.represent_scalar(YAML_TAG + "str", data, style="|" if "\n" in data else None)


SuiteDumper.add_representer(str, represent_text)


def dump_yaml(data: Any) -> str:
    return yaml.dump(
        plain(data), Dumper=SuiteDumper, sort_keys=False, allow_unicode=True, width=100
    )


def suite_files(
    suite: str,
    variants: Sequence[Variant],
    drafts: Sequence[Draft],
    stubs: Sequence[Stub],
    pin: Pin | None,
    samples: int | None,
    config_path: Path,
    services: Mapping[str, Any],
    scrubber: Scrubber,
    loose: Sequence[Endpoint] = (),
    defaults: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """Every file but MIGRATION.md; any remembered secret value masked in all of them.
    `loose`: endpoints that reach no system, commented out at the end of `casegate.yml`."""
    files: dict[str, str] = {}
    cases_file = f"cases/{suite}.yaml"
    prompt_files: dict[str, str] = {}  # system prompt text → its file
    for variant in variants:
        system = variant.prompt.system
        if system is not None and system not in prompt_files:
            name = suite if not prompt_files else f"{suite}-{len(prompt_files) + 1}"
            prompt_files[system] = f"prompts/{name}.md"
        variant.prompt_file = prompt_files.get(system) if system is not None else None
        files[variant.config_name] = _config_text(
            suite, variant, cases_file, pin, samples, config_path, services, scrubber, defaults
        )
    if loose:
        files["casegate.yml"] += _commented_endpoints(loose, None, None, known=False, indent="")
    for text, name in prompt_files.items():
        text = scrubber.mask_text(text)
        files[name] = text if text.endswith("\n") else text + "\n"
    records = [
        {"id": d.id, "input": d.input, **({"expect": d.expect} if d.expect else {}), **d.extra}
        for d in drafts
    ]
    files[cases_file] = (
        f"# Imported from promptfoo ({config_path.name}) by `casegate import promptfoo`, "
        f"following {SEMANTICS}.\n# MIGRATION.md says, per test, what was mapped and what "
        "needs a person.\n" + dump_yaml(scrubber.mask(records))
    )
    if stubs:
        files[f"{CHECKS_MODULE}.py"] = scrubber.mask_text(checks_module(stubs))
    if any(not variant.provider.known for variant in variants):
        files[f"{SYSTEMS_MODULE}.py"] = SYSTEMS_MODULE_TEXT
    return files


def _config_text(
    suite: str,
    variant: Variant,
    cases_file: str,
    pin: Pin | None,
    samples: int | None,
    config_path: Path,
    services: Mapping[str, Any],
    scrubber: Scrubber,
    defaults: Mapping[str, Any] | None = None,
) -> str:
    provider, prompt = variant.provider, variant.prompt
    system: dict[str, Any] = {"name": provider.label, **provider.system}
    variant.endpoints = list(provider.endpoints)
    variant.foreign_host = provider.foreign_host
    if prompt.params and provider.known:
        merged = {**system.get("params", {})}
        for key, value in prompt.params.items():
            if names_secret(key) and not names_variable(key, value):
                variant.notes.append(
                    f"the prompt's config `{key}` not copied (its name says it holds a secret)"
                )
            elif names_endpoint(key, value):
                variant.endpoints.append(config_endpoint(str(key), value, "prompt.config."))
            elif system_problems({**provider.system, "params": {key: plain(value)}}):
                variant.notes.append(f"the prompt's config `{key}` not carried over")
            else:
                merged[key] = plain(value)
        system["params"] = merged
        if variant.foreign_host is None:
            variant.foreign_host = foreign_host(str(provider.system["provider"]), variant.endpoints)
            if variant.foreign_host is not None:
                system["api_key_env"] = key_placeholder(variant.foreign_host)
    elif prompt.params:
        variant.notes.append("the prompt's config is not carried over to a stub system")
    if not system.get("params"):
        system.pop("params", None)
    if variant.prompt_file:
        system["prompt_file"] = variant.prompt_file
    system["message"] = prompt.message.source
    data: dict[str, Any] = {"suite": suite, "cases": cases_file}
    rest: dict[str, Any] = {"samples": samples} if samples else {}
    if defaults:
        rest["defaults"] = {"expect": dict(defaults)}
    rest.update(
        {
            "mode": "replay",
            "recordings": f"recordings/{suite}",
            "baseline": f"baselines/{suite}.json",
        }
    )
    header = (
        f"# Imported from promptfoo ({config_path.name}) by `casegate import promptfoo`, "
        f"following {SEMANTICS}.\n"
        f"# Provider `{printable(provider.id)}`, prompt {printable(prompt.label)!r}. "
        "MIGRATION.md lists what still needs a person.\n"
    )
    kind: str | None = str(provider.system["provider"]) if provider.known else None
    text = (
        header
        + dump_yaml(scrubber.mask(data))
        + dump_yaml(scrubber.mask({"system": system}))
        + _commented_endpoints(variant.endpoints, kind, variant.foreign_host, provider.known)
        + dump_yaml(rest)
    )
    if pin is not None:
        settings = dict(pin.settings)
        if _judges_itself(settings, system):
            # promptfoo grades with the model under test by default; casegate refuses that
            # unless it is allowed, so the import says so where a person will see it.
            settings["allow_self_judge"] = True
            text += (
                "# promptfoo graded with the model under test. casegate refuses a judge that is "
                "the system's\n# model unless allow_self_judge says so: pin another model and "
                "remove that key.\n"
            )
        text += (
            "# The judge for the cases that came from llm-rubric: pin the judge you trust (a "
            "dated model id)\n# and calibrate it (casegate judge calibrate LABELS.jsonl) before "
            "trusting those cases.\n"
            + dump_yaml({"judge": settings})
            + _commented_endpoints(
                pin.endpoints, str(pin.settings["provider"]), pin.foreign_host, known=True
            )
        )
    if services:
        text += (
            "# What `similar` and `moderation` measure with: promptfoo's default models. "
            "Record their\n# answers (casegate record) so replay stays offline.\n"
            + dump_yaml(dict(services))
        )
    return text


def _judges_itself(judge: dict[str, Any], system: dict[str, Any]) -> bool:
    judged, answered = judge.get("model"), system.get("model")
    return (
        isinstance(judged, str)
        and isinstance(answered, str)
        and model_family(judged) == model_family(answered)
    )


def _commented_endpoints(
    endpoints: Sequence[Endpoint],
    kind: str | None,
    host: str | None,
    known: bool,
    indent: str = "  ",
) -> str:
    """The endpoints as comments, inside the mapping just written (`indent`), or at the end
    of the file (no indent: endpoints of promptfoo's `env:` that reach no system here)."""
    if not endpoints:
        return ""
    if host is not None and kind is not None:
        intro = (
            f"promptfoo sent these requests to {host}, not {kind}'s own host. Nothing below "
            f"is used: to keep it, set api_key_env to a variable holding the key for that "
            f"host, chosen deliberately (never {DEFAULT_KEY_ENV[kind]}), then uncomment it."
        )
    elif known:
        intro = (
            "promptfoo's endpoints, not copied (MIGRATION.md). Requests go to the provider's "
            "own host; uncomment only what you mean to keep."
        )
    elif indent:
        intro = (
            "promptfoo's endpoints, not copied into promptfoo_config (MIGRATION.md): where "
            "the requests went, for whoever writes the system."
        )
    else:
        intro = "promptfoo's `env:` endpoints that reach no system here, not copied (MIGRATION.md)."
    lines = [f"{indent}# {line}" for line in textwrap.wrap(intro, 94)]
    for endpoint in endpoints:
        source = printable(endpoint.path)
        if endpoint.setting is not None:
            line = _yaml_line(endpoint.setting, endpoint.shown)
            lines.append(f"{indent}# {line}  # promptfoo's {source}")
        else:
            lines.append(
                f"{indent}# promptfoo's {source}: {endpoint.shown} (casegate has no such setting)"
            )
    return "\n".join(lines) + "\n"


def _yaml_line(key: str, value: str) -> str:
    """`key: value` as one line of YAML, quoted where YAML needs it."""
    text = yaml.safe_dump({key: value}, width=2**31, allow_unicode=True).strip()
    return text if "\n" not in text else f"{key}: {json.dumps(value)}"


def migration_notes(
    config_path: Path,
    suite: str,
    variants: Sequence[Variant],
    reports: Sequence[Report],
    stubs: Sequence[Stub],
    pin: Pin | None,
    suite_needs: Sequence[str],
    suite_notes: Sequence[str],
    default: Mapping[str, Any],
    written: Sequence[str],
    left_out: Sequence[str],
    settings: tuple[int, int],
) -> str:
    """MIGRATION.md. `left_out`: the secrets and endpoints not copied (withheld.py);
    `settings`: (mapped, all) of the providers' settings."""
    assertions = sum(r.assertions for r in reports)
    mapped = sum(r.assertions_mapped for r in reports)
    tests_mapped = sum(r.mechanical for r in reports)
    cases = sum(len(r.cases) for r in reports)
    out = [
        "# Migration from promptfoo",
        "",
        f"Imported from `{config_path.name}` by `casegate import promptfoo` on "
        f"{dt.date.today().isoformat()}, following the semantics of **{SEMANTICS}** "
        "(its documentation and assertion code).",
        "",
        CONTAINS_LIST_PARSING,
        "",
        f"**{mapped} of {assertions} assertions and {tests_mapped} of {len(reports)} tests "
        f"were mapped mechanically**, and **{settings[0]} of {settings[1]} provider settings**; "
        f"{len(reports)} test(s) became {cases} case(s). A test counts as mapped when every "
        "assertion and setting it has became casegate checks; a provider setting, when it "
        "became a setting of the casegate system. An endpoint or a secret never does: an "
        "endpoint is written commented out, a secret nowhere.",
        "",
        "## Written",
        "",
        *[f"- `{name}`" for name in written],
        "",
    ]
    if left_out:
        out += ["## Secrets and endpoints", "", *[f"- {line}" for line in left_out], ""]
    out += ["## The suite", ""]
    suite_lines = [f"- {line}" for line in _suite_lines(variants, default, pin, stubs)]
    suite_lines += [f"- **needs a person**: {line}" for line in suite_needs]
    suite_lines += [f"- {line}" for line in suite_notes]
    out += [*suite_lines, "", "## Per test", ""]
    for report in reports:
        cases_text = ", ".join(f"`{c}`" for c in report.cases) or "no case"
        out += [f"### {report.number}. {_md(report.title)} ({report.where}) → {cases_text}", ""]
        out += [f"- mapped: {line}" for line in report.mapped]
        out += [f"- **needs a person**: {printable(line)}" for line in report.needs]
        out += [f"- **not written**: {printable(line)}" for line in report.skipped]
        out += [f"- note: {printable(line)}" for line in dict.fromkeys(report.notes)]
        if report.became:
            out.append(f"- casegate checks (`expect`): {report.became}")
        out.append("")
    return "\n".join(out)


def _suite_lines(
    variants: Sequence[Variant],
    default: Mapping[str, Any],
    pin: Pin | None,
    stubs: Sequence[Stub],
) -> Iterable[str]:
    if len(variants) > 1:
        yield (
            f"promptfoo compares {len(variants)} provider/prompt pairs side by side; casegate "
            "runs one system per config: `casegate.yml` holds the first, and each other one "
            "has its own config over the same cases (`casegate run -c casegate.<name>.yml`; "
            "compare two runs with `casegate compare`)"
        )
    told: set[int] = set()  # a provider's own problems are said once, at its first config
    for variant in variants:
        provider, prompt = variant.provider, variant.prompt
        first = id(provider) not in told
        told.add(id(provider))
        yield (
            f"`{variant.config_name}`: provider {inline_code(printable(provider.id))}"
            + (f", system prompt `{variant.prompt_file}`" if variant.prompt_file else "")
            + f", message from prompt {inline_code(printable(prompt.label))}"
        )
        needs = [*(provider.needs if first else []), *prompt.needs, *prompt.message.needs]
        for line in needs:
            yield f"**needs a person** (`{variant.config_name}`): {printable(line)}"
        own = provider.notes if first else []
        notes = [*own, *prompt.notes, *prompt.message.notes, *variant.notes]
        for line in dict.fromkeys(notes):
            yield f"`{variant.config_name}`: {printable(line)}"
    if any("tools" in variant.provider.system for variant in variants):
        yield (
            "**needs a person**: the provider declares tools. When the model calls one, "
            "promptfoo's output is the tool calls as JSON, while casegate's output text is the "
            "message text and the calls are judged by `tool_called`, `tool_sequence` and "
            "`tool_args`: review the text assertions of tests that expect a tool call"
        )
    if default.get("vars"):
        yield (
            "`defaultTest`: its vars were written into every case's input (casegate's "
            "`defaults:` holds checks, tags and samples, not input)"
        )
    if pin is not None:
        yield (
            f"**needs a person**: the judge pin ({pin.settings['provider']} "
            f"{pin.settings['model']}) in every config is a starting point: pin the judge you "
            "trust and calibrate it "
            "(`casegate judge calibrate`) before trusting the llm-rubric cases"
        )
    if stubs:
        yield (
            f"**needs a person**: `{CHECKS_MODULE}.py` holds {len(stubs)} stub check(s), one per "
            "`javascript`/`python` assertion, each failing until ported"
        )


def _md(text: str) -> str:
    return re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", printable(text))


def write_all(out: Path, files: Mapping[str, str]) -> list[Path]:
    """Write every file or none: an existing one is never replaced (ConfigError naming it)."""
    return write_new_files(
        {out / name: text for name, text in files.items()},
        refusal=[
            "{path}: already exists; casegate import writes nothing over it",
            "import into an empty folder (--out DIR), or move those files aside",
        ],
    )

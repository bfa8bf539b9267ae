"""Held-out cases, built from the sealed YAML as readable cases are from their files.

A problem is counted, never described: the message that names a case's file and
line for a readable case would, here, show a held-out case. So the owner of the
slice learns how many cases do not load and why in kind ("no longer validate"),
and `casegate holdout reveal` is the way to look at them.

The slice takes built-in checks only: a custom `check` is the suite's own code,
which would see held-out inputs and outputs in a process that writes the log; a
pairwise judge needs the baseline's outputs, which no results file keeps for them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gate import checks
from gate.checks.graded import pairwise_rubric
from gate.holdout.keys import HoldoutError
from gate.suite.cases import Case, attach_input_files
from gate.suite.config import LoadedConfig
from gate.suite.defaults import merge
from gate.yamlfile import YamlSyntaxError, load_yaml

CUSTOM_CHECK = (
    "use a custom check (`check`): that is the suite's own code, which would see held-out "
    "inputs and outputs; the slice takes built-in checks only"
)
PAIRWISE = (
    "use a pairwise judge, which compares with the baseline's outputs; no results file keeps "
    "them for held-out cases"
)


def refusal(expect: Mapping[str, Any]) -> str | None:
    """Why a case cannot be held out (None: it can)."""
    if checks.custom_specs(expect):
        return CUSTOM_CHECK
    if pairwise_rubric(expect) is not None:
        return PAIRWISE
    return None


def build_case(text: str, loaded: LoadedConfig) -> Case | str:
    """One held-out case, or what is wrong with it (in kind, naming nothing of it)."""
    try:
        raw = load_yaml(text)
    except YamlSyntaxError:
        return "are not valid YAML"
    if not isinstance(raw, dict):
        return "are not a case mapping"
    merged = merge(raw, loaded.config.defaults)
    if merged.stray_nulls:
        return "remove a check with null that `defaults.expect` does not set"
    try:
        case = Case.model_validate(merged.record)
    except ValidationError:
        return "no longer validate as a case"
    try:
        case._judges = checks.build(case.expect)
    except checks.CheckSpecError:
        return "have a check this casegate refuses"
    refused = refusal(case.expect)
    if refused is not None:
        return refused
    if attach_input_files(case, loaded.root):
        return "name an input file that is missing, unreadable or refused"
    case._from_defaults = merged.from_defaults
    return case


def load_slice_cases(texts: Sequence[str], loaded: LoadedConfig, shown: str) -> list[Case]:
    """Every held-out case, sorted by id; a HoldoutError counting the problems by kind."""
    problems: Counter[str] = Counter()
    cases: list[Case] = []
    seen: set[str] = set()
    for text in texts:
        built = build_case(text, loaded)
        if isinstance(built, str):
            problems[built] += 1
        elif built.id in seen:
            problems["share their id with another held-out case"] += 1
        else:
            seen.add(built.id)
            cases.append(built)
    if problems:
        raise HoldoutError(
            [
                f"{shown}: {count} of {len(texts)} held-out case(s) {kind} (which ones is not "
                "shown: it would show them)"
                for kind, count in sorted(problems.items())
            ]
            + [
                "a holder of the key sees them with `casegate holdout reveal --yes` in a scratch "
                "copy of the repository, fixes them there, and adds them back"
            ]
        )
    cases.sort(key=lambda case: case.id)
    return cases

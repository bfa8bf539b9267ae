"""User-written checks, named `module:function` in a case."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gate import usercode
from gate.checks.base import (
    CheckSpecError,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    describe,
    short,
    string_list,
)

# --- user-written checks ------------------------------------------------------


def custom_specs(expect: Mapping[str, Any]) -> list[str]:
    """The `module:function` specs a case's `check:` names (its user code)."""
    if "check" not in expect:
        return []
    return string_list("check", expect["check"])


def custom(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    # Only the spec is read here: loading cases never imports user code. The run
    # imports every custom check up front (gate.usercode.prepare_check).
    specs = string_list(name, arg)
    for spec in specs:
        try:
            usercode.parse_spec(spec, "check")
        except usercode.UserCodeError as exc:
            raise CheckSpecError(str(exc)) from None

    def judge(subject: Subject) -> Verdict:
        for spec in specs:
            try:
                function = usercode.check_function(spec)
            except KeyError:
                return Verdict(name, False, f"{spec} was not imported before the run")
            try:
                outcome = function(subject.text, subject.case)
            except Exception as exc:
                return Verdict(
                    name, False, f"{spec} raised {type(exc).__name__}: {short(str(exc))}"
                )
            if isinstance(outcome, tuple) and len(outcome) == 2:
                ok, reason = bool(outcome[0]), str(outcome[1])
            elif isinstance(outcome, bool):
                ok, reason = outcome, ""
            else:
                return Verdict(
                    name,
                    False,
                    f"{spec} returned {describe(outcome)}, not a bool or (bool, reason)",
                )
            if not ok:
                return Verdict(name, False, reason or f"{spec} returned False")
        return Verdict(name, True)

    return judge

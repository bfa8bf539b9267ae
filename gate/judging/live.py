"""A live run's system, judge and instruments, ready to call: every problem that would fail
a request found before the first paid one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gate import checks, systems
from gate.errors import ConfigError
from gate.judging.judge import Grader
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig


def preflight(loaded: LoadedConfig, cases: Sequence[Case], system: dict[str, Any]) -> None:
    """Everything that would fail per request, found before the first paid call."""
    from gate.systems.templates import (
        check_templates,  # Jinja2: only a run that makes calls loads it
    )

    check_templates(loaded, cases)
    problems = systems.preflight(system, cases)
    if checks.declared_tools(system) is None:
        problems.extend(
            f"{case.source}:{case.line}: case {case.id!r} uses tool_args_valid, but the system "
            "declares no tools: add `tools:` with their `parameters` to the system, or use "
            "tool_args_schema"
            for case in cases
            if "tool_args_valid" in case.expect
        )
    if problems:
        raise ConfigError(problems)


def start_live(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    resolved: dict[str, Any],
    grader: Grader | None,
    services: Any,
) -> systems.System:
    """The system (and judge, services) ready to call: problems found before a paid call."""
    preflight(loaded, cases, resolved)
    system = systems.create(resolved, loaded.root, {"config": loaded})
    if grader is not None:
        grader.prepare()
    if services is not None:
        services.prepare()
    return system

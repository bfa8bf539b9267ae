"""The user-turn template: Jinja2 with StrictUndefined over the case input."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import jinja2
import jinja2.sandbox

from gate.errors import ConfigError, SystemCallError

if TYPE_CHECKING:
    from gate.suite.cases import Case
    from gate.suite.config import LoadedConfig

# The template comes from the config, which a pull request can edit: sandboxed, so it
# can reach neither Python's internals (`''.__class__…`) nor a billion-item range.
# The rendered text is a chat message, not HTML: escaping would corrupt it.
_ENVIRONMENT = jinja2.sandbox.SandboxedEnvironment(
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    keep_trailing_newline=True,
)


@lru_cache(maxsize=32)
def compile_template(source: str) -> jinja2.Template:
    try:
        return _ENVIRONMENT.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(
            f"system.message: template syntax error on line {exc.lineno}: {exc.message}"
        ) from None
    except RecursionError:  # the parser recurses into nested expressions
        raise ConfigError("system.message: the template nests its expressions too deeply") from None


def render(source: str, case_id: str, case_input: Mapping[str, Any]) -> str:
    """Render the template; a missing variable names the case and the variable."""
    try:
        return compile_template(source).render(**case_input)
    except jinja2.UndefinedError as exc:
        raise SystemCallError(
            f"case {case_id!r}: system.message uses a variable the input lacks ({exc.message})"
        ) from None
    except Exception as exc:  # the template is the user's code: `{{ question + 1 }}` on text
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise SystemCallError(f"case {case_id!r}: system.message failed ({detail})") from None


def check_templates(loaded: LoadedConfig, cases: Sequence[Case]) -> None:
    """Render the message template over every case that has no `messages` of its own."""
    source = loaded.config.system.message
    if source is None:
        return
    compile_template(source)
    problems = []
    for case in cases:
        if "messages" in case.input:
            continue
        try:
            render(source, case.id, case.input)
        except SystemCallError as exc:
            problems.append(f"{case.source}:{case.line}: {exc}")
    if problems:
        raise ConfigError(problems)

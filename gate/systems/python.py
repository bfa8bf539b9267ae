"""`provider: python` — a callable `module:function(input, system)` in the user's code."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from gate.errors import SystemCallError
from gate.outputs import Output
from gate.systems import Provider
from gate.usercode import load_callable

_OUTPUT_KEYS = {
    "text",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "raw",
    "model",
    "tool_calls",
    "stop_reason",
    "contexts",
}


def output_from_value(value: Any, what: str) -> Output:
    """A string, or a dict with `text` and optional usage, becomes an Output."""
    if isinstance(value, str):
        return Output(text=value)
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        unknown = set(value) - _OUTPUT_KEYS
        if unknown:
            raise SystemCallError(f"{what} returned unknown key(s) {sorted(unknown)}")
        try:
            return Output.model_validate(dict(value))
        except ValidationError as exc:
            raise SystemCallError(
                f"{what} returned an invalid output: {exc.errors()[0]['msg']}"
            ) from None
    raise SystemCallError(
        f"{what} returned {type(value).__name__}; expected a string or a dict with 'text'"
    )


def call_with_timeout(function: Callable[[], Any], timeout_s: float) -> Any:
    """Run `function` in a daemon thread; a call past the deadline is abandoned."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise SystemCallError(f"timed out after {timeout_s:g}s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


class PythonSystem(Provider):
    name: ClassVar[str] = "python"
    passes_extra_keys: ClassVar[bool] = True
    requires: ClassVar[tuple[str, ...]] = ("target",)

    def __init__(self, system: dict[str, Any], root: Path, context: Mapping[str, Any]) -> None:
        self.system = system
        self.timeout_s = float(system.get("timeout_s", 60))
        self.function = load_callable(system["target"], "system.target", root)

    def complete(self, case_id: str, case_input: Mapping[str, Any]) -> Output:
        started = time.perf_counter()
        try:
            value = call_with_timeout(
                lambda: self.function(dict(case_input), dict(self.system)), self.timeout_s
            )
        except SystemCallError:
            raise
        except Exception as exc:
            raise SystemCallError(f"{type(exc).__name__}: {exc}") from exc
        output = output_from_value(value, self.system["target"])
        if output.latency_ms is None:
            output.latency_ms = round((time.perf_counter() - started) * 1000, 3)
        return output

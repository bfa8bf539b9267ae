"""`provider: command` — any program: the request as JSON on stdin, the output on stdout."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from gate.errors import SystemCallError
from gate.outputs import Output
from gate.systems import Provider


class CommandSystem(Provider):
    name: ClassVar[str] = "command"
    passes_extra_keys: ClassVar[bool] = True
    requires: ClassVar[tuple[str, ...]] = ("command",)

    def __init__(self, system: dict[str, Any], root: Path, context: Mapping[str, Any]) -> None:
        command = system["command"]
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.system = system
        self.root = root
        self.timeout_s = float(system.get("timeout_s", 60))

    def complete(self, case_id: str, case_input: Mapping[str, Any]) -> Output:
        request = json.dumps({"input": case_input, "system": self.system}, default=str)
        started = time.perf_counter()
        try:
            finished = subprocess.run(
                self.argv,
                input=request,
                capture_output=True,
                text=True,
                cwd=self.root,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SystemCallError(f"command timed out after {self.timeout_s:g}s") from None
        except OSError as exc:
            raise SystemCallError(f"cannot run {self.argv[0]!r}: {exc.strerror or exc}") from None
        latency_ms = round((time.perf_counter() - started) * 1000, 3)
        if finished.returncode != 0:
            detail = (finished.stderr.strip().splitlines() or ["no stderr"])[-1]
            raise SystemCallError(f"command exited {finished.returncode}: {detail}")
        text = finished.stdout
        # `print()` ends the output with a newline the program did not mean as content.
        if text.endswith("\n"):
            text = text[:-2] if text.endswith("\r\n") else text[:-1]
        return Output(text=text, latency_ms=latency_ms)

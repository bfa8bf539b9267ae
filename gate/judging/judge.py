"""The pinned LLM judge: for what code cannot check, graded against a rubric.

The judge is part of the instrument. Its provider, model, prompt version and
temperature are pinned in the config, and every one of them is in the key of
its recorded verdicts, so changing the pin is a visible ruler change and CI
replays verdicts for free. The prompt ships with casegate and is versioned:
a new wording is a new version, never an edit of an old one.

Two prompts share one version number: the pointwise prompt grades one output
against a rubric (PASS or FAIL); the pairwise prompt compares two outputs for
the same input (A, B or TIE). Each has its own table, so adding the pairwise
prompt changed no byte of the pointwise one (nor the keys it was recorded under).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from gate import systems
from gate.errors import SystemCallError
from gate.outputs import Output
from gate.produce.recordings import RecordingStore, request_key, system_fingerprint
from gate.suite.judgepin import JudgePin, PromptKind, judge_system

if TYPE_CHECKING:
    from gate.suite.cases import Case


#: the pairwise judge's answer: response A is better, B is, or neither
Preference = Literal["A", "B", "TIE"]

#: Verdicts longer than this are not "one line plus a reason".
MAX_VERDICT_CHARS = 500
_VERDICT = re.compile(r"(PASS|FAIL):\s*(\S.*)")
_PREFERENCE = re.compile(r"(A|B|TIE):\s*(\S.*)")


def pin_fingerprint(pin: JudgePin, kind: PromptKind = "pointwise") -> str:
    return system_fingerprint(judge_system(pin, kind))


def parse_verdict(text: str) -> tuple[bool, str]:
    """`PASS: reason` or `FAIL: reason`, one line; anything else is SystemCallError."""
    stripped = text.strip()
    one_line = len(stripped.splitlines()) == 1  # splitlines knows every line separator
    match = _VERDICT.fullmatch(stripped) if one_line else None
    if match is None or len(stripped) > MAX_VERDICT_CHARS:
        shown = " ".join(stripped.split())[:80] or "an empty answer"
        raise SystemCallError(f"judge gave an unparseable verdict: {shown!r}")
    return match.group(1) == "PASS", match.group(2).strip()


def parse_preference(text: str) -> tuple[Preference, str]:
    """`A: reason`, `B: reason` or `TIE: reason`, one line; anything else is SystemCallError."""
    stripped = text.strip()
    one_line = len(stripped.splitlines()) == 1
    match = _PREFERENCE.fullmatch(stripped) if one_line else None
    if match is None or len(stripped) > MAX_VERDICT_CHARS:
        shown = " ".join(stripped.split())[:80] or "an empty answer"
        raise SystemCallError(f"judge gave an unparseable pairwise verdict: {shown!r}")
    choice: Preference = "A" if match.group(1) == "A" else "B" if match.group(1) == "B" else "TIE"
    return choice, match.group(2).strip()


def _rendered_input(case_input: Mapping[str, Any]) -> str:
    return json.dumps(dict(case_input), ensure_ascii=False, indent=2, default=str)


def judge_input(rubric: str, case_input: Mapping[str, Any], output_text: str) -> dict[str, str]:
    return {"rubric": rubric, "input": _rendered_input(case_input), "output": output_text}


def pairwise_input(
    rubric: str, case_input: Mapping[str, Any], first: str, second: str
) -> dict[str, str]:
    """What the pairwise judge is asked (and its verdict is keyed on): both outputs, in order."""
    return {"rubric": rubric, "input": _rendered_input(case_input), "a": first, "b": second}


class MissingJudgeRecording(SystemCallError):
    """Replay met a verdict that was never recorded."""


class Grader:
    """Grades outputs with the pinned judge: live, recording, or replaying verdicts.

    `kind` picks the prompt (one Grader per prompt: its recordings have their own
    key). `recorded` replaces the store for replay: verdicts read before the
    supervised run started, which the run's code cannot have rewritten.
    """

    def __init__(
        self,
        pin: JudgePin,
        *,
        mode: str,
        store: RecordingStore,
        root: Any,
        reuse_recorded: bool = False,
        kind: PromptKind = "pointwise",
        recorded: Mapping[tuple[str, str], Output] | None = None,
    ) -> None:
        self.pin = pin
        self.kind = kind
        self.system_map = judge_system(pin, kind)
        self.fingerprint = system_fingerprint(self.system_map)
        self.mode = mode
        self.store = store
        self.root = root
        self.reuse_recorded = reuse_recorded
        self.recorded = recorded
        self.missing: list[str] = []
        self.calls = 0
        self._system: systems.System | None = None
        self._lock = threading.Lock()

    def _live_system(self) -> systems.System:
        with self._lock:
            if self._system is None:
                self._system = systems.create(self.system_map, self.root, {"what": "judge"})
            return self._system

    def prepare(self) -> None:
        """Fail before any work when a live judge cannot be built (a missing key)."""
        if self.mode != "replay":
            self._live_system()

    def grade(self, case_id: str, rubric: str, case_input: Mapping[str, Any], text: str) -> Output:
        """The judge's raw answer for one output; recorded or replayed per mode."""
        return self.ask(case_id, judge_input(rubric, case_input, text))

    def _recorded(self, case_id: str, key: str) -> Output | None:
        if self.recorded is not None:
            return self.recorded.get((case_id, key))
        return self.store.get(case_id, key)

    def ask(self, case_id: str, asked: Mapping[str, str], repeat: int = 0) -> Output:
        """The judge's raw answer to one question; recorded or replayed per mode. `repeat`
        asks the same question again, as its own recording (gate.judging.consistency)."""
        key = request_key(self.fingerprint, asked, repeat)
        if self.mode == "replay" or self.reuse_recorded:
            recorded = self._recorded(case_id, key)
            if recorded is not None:
                return recorded
            if self.mode == "replay":
                with self._lock:
                    self.missing.append(case_id)
                raise MissingJudgeRecording("no recorded judge verdict for this output")
        output = self._live_system().complete(case_id, asked)
        with self._lock:
            self.calls += 1
        if self.mode == "record":
            self.store.put(
                case_id,
                key,
                output,
                system=self.system_map,
                fingerprint=self.fingerprint,
                sample=repeat,
            )
        return output

    def verdict(self, case: Case, rubric: str, text: str, repeat: int = 0) -> tuple[bool, str]:
        output = self.ask(case.id, judge_input(rubric, case.input, text), repeat)
        return parse_verdict(output.text)

    def prefer(
        self, case_id: str, rubric: str, case_input: Mapping[str, Any], first: str, second: str
    ) -> tuple[Preference, str]:
        """The pairwise judge's choice between `first` (shown as A) and `second` (B)."""
        output = self.ask(case_id, pairwise_input(rubric, case_input, first, second))
        return parse_preference(output.text)

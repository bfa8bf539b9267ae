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

import copy
import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from gate import systems
from gate.checks.base import Subject
from gate.checks.graded import graded_input, judged_checks
from gate.checks.ragjudge import Question, ask_for
from gate.errors import SystemCallError
from gate.outputs import Context, Output
from gate.produce.recordings import RecordingStore, request_key, system_fingerprint
from gate.suite.judgepin import JudgePin, PromptKind, fenced, judge_system

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

    `kind` picks the default prompt; `ask(..., kind=…)` asks with another (each kind has its
    own system and fingerprint, so its recordings have their own keys). `recorded` replaces
    the store for replay: verdicts read before the supervised run started, which the run's
    code cannot have rewritten. `again(r)` is the same judge asking each question for the
    r-th time (gate.judging.consistency), sharing its systems, store and missing list.
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
        #: the ask every question is by default (0: the first; see `again`)
        self.repeat = 0
        self._maps: dict[str, tuple[dict[str, Any], str]] = {
            kind: (self.system_map, self.fingerprint)
        }
        self._systems: dict[str, systems.System] = {}
        self._lock = threading.Lock()

    def again(self, repeat: int) -> Grader:
        """This judge asking every question for the `repeat`-th time (0: the first)."""
        view = copy.copy(self)  # shares the systems, the store, `missing` and the lock
        view.repeat = repeat
        return view

    def _system_of(self, kind: str) -> tuple[dict[str, Any], str]:
        with self._lock:
            found = self._maps.get(kind)
            if found is None:
                mapping = judge_system(self.pin, kind)  # type: ignore[arg-type]
                found = self._maps[kind] = (mapping, system_fingerprint(mapping))
            return found

    def fingerprint_of(self, kind: str) -> str:
        return self._system_of(kind)[1]

    def _live_system(self, kind: str | None = None) -> systems.System:
        kind = kind or self.kind
        mapping, _ = self._system_of(kind)
        with self._lock:
            if kind not in self._systems:
                self._systems[kind] = systems.create(mapping, self.root, {"what": "judge"})
            return self._systems[kind]

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

    def ask(
        self,
        case_id: str,
        asked: Mapping[str, str],
        repeat: int | None = None,
        *,
        kind: str | None = None,
    ) -> Output:
        """The judge's raw answer to one question, with the `kind` of prompt (default: this
        grader's); recorded or replayed per mode. `repeat` asks the same question again, as
        its own recording (gate.judging.consistency); default: this grader's `repeat`."""
        repeat = self.repeat if repeat is None else repeat
        kind = kind or self.kind
        asked = fenced(asked)
        mapping, fingerprint = self._system_of(kind)
        key = request_key(fingerprint, asked, repeat)
        if self.mode == "replay" or self.reuse_recorded:
            recorded = self._recorded(case_id, key)
            if recorded is not None:
                return recorded
            if self.mode == "replay":
                with self._lock:
                    self.missing.append(case_id)
                raise MissingJudgeRecording("no recorded judge verdict for this output")
        output = self._live_system(kind).complete(case_id, asked)
        with self._lock:
            self.calls += 1
        if self.mode == "record":
            self.store.put(
                case_id,
                key,
                output,
                system=mapping,
                fingerprint=fingerprint,
                sample=repeat,
            )
        return output

    def verdict(
        self, case: Case, rubric: str, text: str, repeat: int | None = None
    ) -> tuple[bool, str]:
        output = self.ask(case.id, judge_input(rubric, case.input, text), repeat)
        return parse_verdict(output.text)

    def prefer(
        self, case_id: str, rubric: str, case_input: Mapping[str, Any], first: str, second: str
    ) -> tuple[Preference, str]:
        """The pairwise judge's choice between `first` (shown as A) and `second` (B)."""
        output = self.ask(case_id, pairwise_input(rubric, case_input, first, second))
        return parse_preference(output.text)


def questions_of(case: Case, text: str, contexts: Sequence[Context] = ()) -> list[Question]:
    """Every question the case's judged checks ask about one output (gate.checks.graded,
    gate.checks.ragjudge), as (prompt kind, what is asked): a pass/fail or graded judge
    and the RAG metrics that can ask (a metric without contexts asks nothing). A pairwise
    judge is keyed on the baseline's output too: not here."""
    found: list[Question] = []
    subject = Subject(text, case.input, case=case, contexts=tuple(contexts))
    for name in judged_checks(case.expect):
        spec = case.expect[name]
        if name == "judge":
            rubric = str(spec["rubric"]).strip()  # as gate.checks.llm_judge reads it
            if "scale" in spec:
                found.append(("graded", graded_input(rubric, spec["scale"], case.input, text)))
            else:
                found.append(("pointwise", judge_input(rubric, case.input, text)))
            continue
        question = ask_for(name, spec, subject)
        if not isinstance(question, str):
            found.append(question)
    return found


def judge_keys_of(
    pin: JudgePin, case: Case, text: str, contexts: Sequence[Context] = (), asks: int = 1
) -> list[str]:
    """The recording keys of every judge answer the case's judged checks read about one
    output (`questions_of`), each asked `asks` times (gate.judging.consistency)."""
    return [
        request_key(system_fingerprint(judge_system(pin, kind)), fenced(asked), repeat)  # type: ignore[arg-type]
        for kind, asked in questions_of(case, text, contexts)
        for repeat in range(asks)
    ]


def recorded_contexts(items: Sequence[Any]) -> tuple[Context, ...]:
    """A results file's contexts of one sample as Contexts (none when any is unreadable:
    then no key of a RAG metric's matches, and its answer counts as missing)."""
    try:
        return tuple(Context.model_validate(item) for item in items)
    except ValueError:
        return ()

"""What every check shares: the verdict, the subject it judges, argument validation."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex as regex_engine  # `re` syntax with a match timeout

import gate.checks.jsontext as jsontext
from gate.checks.jsontext import ParsedJson
from gate.outputs import Context, Output, ToolCall
from gate.results import valid_score

#: A pattern search on one output that takes longer fails its check: model output is
#: untrusted input, and a backtracking pattern must not hang the run.
REGEX_TIMEOUT_S = 1.0
#: The `regex` module copies an atom once per counted repeat when it compiles
#: (`a{1000}` is 1,000 nodes, nested counts multiply); past this it is refused at load.
MAX_PATTERN_SIZE = 20_000


#: the score of a failure a measuring check could not measure (an output too long, empty,
#: not JSON; no service): the lowest, so a mean over samples never hides the failure
UNMEASURED = 0.0


#: how far under its threshold a score may sit and still meet it: float sums of what is
#: exactly the threshold (3 x 0.1, a mean of tenths) land a hair under it
SCORE_TOLERANCE = 1e-9


def meets(score: float, threshold: float) -> bool:
    """Whether a score meets a check's threshold (every measuring check decides so)."""
    return score + SCORE_TOLERANCE >= threshold


class CheckSpecError(Exception):
    """A check's argument in a case file is invalid."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """One check's judgement of one output: pass or fail, why, and, for a check that
    measures, how well (a score from 0 to 1; None for a check that only passes or fails)."""

    check: str
    ok: bool
    reason: str = ""
    score: float | None = None

    def __post_init__(self) -> None:
        if self.score is not None and not valid_score(self.score):
            raise ValueError(f"{self.check}: a score is a number from 0 to 1, got {self.score!r}")

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"check": self.check, "ok": self.ok, "reason": self.reason}
        if self.score is not None:
            shown["score"] = self.score
        return shown


@dataclass(slots=True)
class Subject:
    """What a check sees: one output, its case input, parsed JSON on demand."""

    text: str
    case_input: Mapping[str, Any]
    tool_calls: Sequence[ToolCall] = ()
    case: Any = None
    #: the pinned LLM judge (gate.judging.judge.Grader) when the suite has one
    grader: Any = None
    #: the sample's recorded figures (None: the provider reported none)
    stop_reason: str | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    output_tokens: int | None = None
    input_tokens: int | None = None
    model: str | None = None
    #: tool name → the `parameters` schema the system declares for it (None: it declares none)
    declared_tools: Mapping[str, Any] | None = None
    #: the pinned embeddings and moderation services (gate.produce.services.Services), if any
    services: Any = None
    #: the passages the system reported retrieving, in rank order
    contexts: Sequence[Context] = ()
    _json: dict[bool, ParsedJson] = field(default_factory=dict, repr=False)

    @classmethod
    def of(
        cls,
        output: Output,
        case: Any,
        grader: Any = None,
        *,
        cost_usd: float | None = None,
        declared_tools: Mapping[str, Any] | None = None,
        services: Any = None,
    ) -> Subject:
        """`cost_usd`: the cost priced from the config when the output carries none."""
        return cls(
            output.text,
            case.input,
            output.tool_calls,
            case,
            grader,
            stop_reason=output.stop_reason,
            latency_ms=output.latency_ms,
            cost_usd=output.cost_usd if output.cost_usd is not None else cost_usd,
            output_tokens=output.output_tokens,
            input_tokens=output.input_tokens,
            model=output.model,
            declared_tools=declared_tools,
            services=services,
            contexts=output.contexts,
        )

    def passages(self) -> tuple[Context, ...] | str:
        """The contexts the output was grounded on: the system's, else the case input's
        `contexts` (a list of strings or `{id, text}`); a string says why there are none.

        When the case input gives the passages, they are the ruler's: the system may report
        them reordered or a few of them (a reranker), never a passage the case does not hold
        (a system that could swap in its own would choose what its answer is judged against).
        """
        given = self._given_passages()
        if not self.contexts:
            return given
        if isinstance(given, tuple):
            held: dict[str, set[str | None]] = {}
            for passage in given:
                held.setdefault(passage.text, set()).add(passage.id)
            for rank, passage in enumerate(self.contexts, start=1):
                ids = held.get(passage.text)
                if ids is None or not (None in ids or passage.id in ids):
                    return (
                        f"the system reported passage {rank} (id {passage.id!r}), which is not "
                        "one of the case input's `contexts`: the case's passages are the ones "
                        "judged"
                    )
        return tuple(self.contexts)

    def _given_passages(self) -> tuple[Context, ...] | str:
        """The case input's `contexts`, or why there are none."""
        given = self.case_input.get("contexts") if isinstance(self.case_input, Mapping) else None
        if given is None:
            return "no contexts: the system returned none and the case input has no `contexts`"
        if not isinstance(given, list) or not given:
            return "the case input's `contexts` must be a non-empty list"
        passages = []
        for item in given:
            if isinstance(item, str):
                passages.append(Context(text=item))
            elif (
                isinstance(item, Mapping)
                and isinstance(item.get("text", ""), str)
                and (item.get("id") is None or isinstance(item.get("id"), str | int))
                and set(item) <= {"id", "text"}
            ):
                ident = item.get("id")
                passages.append(
                    Context(id=None if ident is None else str(ident), text=item.get("text", ""))
                )
            else:
                return (
                    "the case input's `contexts` holds "
                    f"{describe(item)}: each is a string or {{id, text}}"
                )
        return tuple(passages)

    def parsed_json(self, *, extract: bool = False) -> ParsedJson:
        """The output read as JSON (the first object or array in it, when `extract`)."""
        parsed = self._json.get(extract)
        if parsed is None:
            parsed = self._json[extract] = (
                jsontext.extract(self.text) if extract else jsontext.parse_whole(self.text)
            )
        return parsed


@dataclass(frozen=True, slots=True)
class Modifiers:
    """Case-level keys in `expect` that change how checks read the output."""

    #: `normalize:` steps applied to the text before text checks compare
    normalize: tuple[str, ...] = ()
    #: `extract_json: true`: JSON checks read the first object or array in the output
    extract_json: bool = False


Judge = Callable[[Subject], Verdict]
Factory = Callable[[str, Any, Modifiers], Judge]


def short(text: str, limit: int = 60) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(value: Any, limit: int = 60) -> str:
    try:
        return short(json.dumps(value, ensure_ascii=False), limit)
    except (TypeError, ValueError):
        return short(repr(value), limit)


# --- argument validation ----------------------------------------------------


def string_list(name: str, arg: Any, *, allow_single: bool = True) -> list[str]:
    if allow_single and isinstance(arg, str):
        return [arg]
    if isinstance(arg, list) and arg and all(isinstance(item, str) for item in arg):
        return list(arg)
    shape = "a string or a non-empty list of strings" if allow_single else "a list of strings"
    raise CheckSpecError(f"{name} takes {shape}, got {describe(arg)}")


def whole_number(name: str, arg: Any) -> int:
    if isinstance(arg, bool) or not isinstance(arg, int) or arg < 0:
        raise CheckSpecError(f"{name} takes a whole number ≥ 0, got {describe(arg)}")
    return arg


def compile_pattern(name: str, arg: Any) -> regex_engine.Pattern[str]:
    """A compiled pattern (Python `re` syntax, through `regex` for its match timeout)."""
    if not isinstance(arg, str):
        raise CheckSpecError(f"{name} takes a regular expression string, got {describe(arg)}")
    return _compiled(name, arg)


# A suite repeats its patterns case after case (`defaults:` gives every case the same
# ones); a compiled pattern is immutable, so cases share it. Refusals are not cached.
@functools.lru_cache(maxsize=4096)
def _compiled(name: str, arg: str) -> regex_engine.Pattern[str]:
    if pattern_size(arg) > MAX_PATTERN_SIZE:
        raise CheckSpecError(
            f"{name}: the regular expression {describe(arg)} repeats too much (its counted "
            f"repeats would build more than {MAX_PATTERN_SIZE:,} elements); "
            "use a smaller {count}, or + or *"
        )
    try:
        return regex_engine.compile(arg)
    except RecursionError:
        problem = "its groups nest too deeply"
    except (regex_engine.error, OverflowError, ValueError) as exc:
        problem = short(str(exc), 120)
    raise CheckSpecError(f"{name}: invalid regular expression {describe(arg)}: {problem}")


_COUNTED_REPEAT = re.compile(r"\{(\d*)(,\d*)?\}")
_BRACED_ESCAPES = frozenset("xNpPuU")


def pattern_size(pattern: str) -> int:
    """An upper estimate of the elements `regex` builds: counted repeats multiply their atom.

    A small scanner, not a parser: it may overcount (comments in verbose mode), never
    undercount what a counted repeat expands to.
    """
    frames = [[0, 0]]  # per open group: [size so far, size of its last atom]
    index, end = 0, len(pattern)
    while index < end:
        char, frame, atom = pattern[index], frames[-1], 1
        if char == "\\":
            index += 2
            if pattern[index - 1 : index] in _BRACED_ESCAPES and pattern[index : index + 1] == "{":
                close = pattern.find("}", index)  # \x{263a}, \p{Lu}: one atom
                index = end if close < 0 else close + 1
        elif char == "[":
            index = _class_end(pattern, index)
        elif char == "(":
            frames.append([0, 0])
            index += 1
            continue
        elif char == ")" and len(frames) > 1:
            inner = frames.pop()
            frame, atom = frames[-1], max(inner[0], 1)
            index += 1
        elif char == "{" and (repeat := _COUNTED_REPEAT.match(pattern, index)) and repeat[1]:
            times = max(int(repeat[1][:12]), 1)
            frame[0] += frame[1] * (times - 1)
            frame[1] *= times
            index = repeat.end()
            if frame[0] > MAX_PATTERN_SIZE:
                return frame[0]
            continue
        elif char in "|*+?":  # an alternative starts afresh; these quantifiers copy nothing
            frame[1] = 0 if char == "|" else frame[1]
            index += 1
            continue
        else:
            index += 1
        frame[0] += atom
        frame[1] = atom
    return sum(frame[0] for frame in frames)


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class opening at `start`."""
    index = start + 1
    if pattern[index : index + 1] == "^":
        index += 1
    if pattern[index : index + 1] == "]":
        index += 1
    while index < len(pattern):
        if pattern[index] == "\\":
            index += 2
        elif pattern[index] == "]":
            return index + 1
        elif pattern.startswith("[:", index) and (close := pattern.find(":]", index + 2)) > 0:
            index = close + 2
        else:
            index += 1
    return index


def too_slow(pattern: regex_engine.Pattern[str]) -> str:
    return (
        f"/{short(pattern.pattern)}/ took longer than {REGEX_TIMEOUT_S:g} s on this output "
        "(catastrophic backtracking?); simplify the pattern"
    )

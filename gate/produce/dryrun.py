"""What a recording run would spend, said before it spends it (`record --dry-run`,
`baseline --mode record --dry-run`): the calls it would make and their cost at `pricing:`.

Nothing is called and no key is read. The tokens a call takes are estimated from what the
recordings already hold: each case's own recorded calls, else the suite's average.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gate.produce.answers import requests_for, samples_for
from gate.produce.recordings import RecordingStore, system_fingerprint
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig


@dataclass(frozen=True, slots=True)
class Planned:
    """One case's calls: at least `low`, at most `high` (they differ under `samples: auto`)."""

    case_id: str
    low: int
    high: int
    #: the case's recorded (input, output) tokens per call, when its recordings say
    tokens: tuple[float, float] | None


def plan_calls(
    loaded: LoadedConfig, cases: Sequence[Case], *, only_missing: bool, estimate: bool
) -> list[Planned]:
    config = loaded.config
    fingerprint = system_fingerprint(loaded.resolved_system())
    store = RecordingStore(loaded.recordings_dir)
    planned = []
    for case in sorted(cases, key=lambda c: c.id):
        fixed = samples_for(case, loaded)
        if estimate:
            low = high = config.estimate_samples(fixed)
        else:
            low, high = (fixed, fixed) if fixed else (config.adaptive.start, config.adaptive.max)
        entries = store.entries(case.id)
        if only_missing:
            keys = [r.key for r in requests_for(case, fingerprint, range(high))]
            missing = [key not in entries for key in keys]
            low, high = sum(missing[:low]), sum(missing)
        planned.append(Planned(case.id, low, high, _tokens(entries.values())))
    return planned


def _tokens(entries: Any) -> tuple[float, float] | None:
    """Mean input and output tokens of the system calls among a case's recording entries."""
    seen = []
    for entry in entries:
        output = entry.get("output") if isinstance(entry, dict) and "sample" in entry else None
        if not isinstance(output, dict):
            continue  # a judge verdict or a service's score: not a call to the system
        given, made = output.get("input_tokens"), output.get("output_tokens")
        if type(given) is int and type(made) is int and given >= 0 and made >= 0:
            seen.append((given, made))
    if not seen:
        return None
    return (sum(t[0] for t in seen) / len(seen), sum(t[1] for t in seen) / len(seen))


def describe(
    loaded: LoadedConfig, planned: Sequence[Planned], *, judged: int, asks: int = 0
) -> list[str]:
    """The lines `--dry-run` prints; `judged` counts the cases that also ask the judge, and
    `asks` the judge's questions about one sample of each of them, summed (a graded judge
    and each RAG metric ask apart, each as often as `judge.consistency` says)."""
    low, high = sum(p.low for p in planned), sum(p.high for p in planned)
    calls = f"{low}" if low == high else f"{low} to {high}"
    samples = loaded.config.samples
    cap = f", at most {loaded.config.adaptive.max} a case" if samples == "auto" else ""
    lines = [
        f"dry run: would call the system {calls} time(s) for {len(planned)} case(s) "
        f"(samples: {samples}{cap})"
    ]
    if judged:
        each = "once" if asks <= judged else f"{asks} times in all"
        lines.append(
            f"and the judge {each} per sample of the {judged} case(s) that use it "
            "(their cost is not estimated here)"
        )
    known = [p for p in planned if p.tokens is not None]
    if not known:
        lines.append(
            "cost: unknown, no recording holds token counts to estimate from: record one "
            "case first (`casegate record --case ID`), then ask again"
        )
    else:
        average = (
            sum(p.tokens[0] for p in known if p.tokens) / len(known),
            sum(p.tokens[1] for p in known if p.tokens) / len(known),
        )
        per_call = [loaded.cost_of(None, *_rounded(p.tokens or average)) for p in planned]
        if any(price is None for price in per_call):
            model = loaded.config.system.model or loaded.config.system.name
            lines.append(f"cost: unknown, `pricing:` has no price for {model}")
        else:
            prices = [price or 0.0 for price in per_call]
            least = sum(price * p.low for price, p in zip(prices, planned, strict=True))
            most = sum(price * p.high for price, p in zip(prices, planned, strict=True))
            spent = f"${least:,.4f}" if least == most else f"${least:,.4f} to ${most:,.4f}"
            lines.append(
                f"cost: about {spent} at `pricing:`, from the tokens of {len(known)} case(s)' "
                f"recorded calls ({len(planned) - len(known)} case(s) at their average)"
            )
    lines.append("nothing was called")
    return lines


def _rounded(tokens: tuple[float, float]) -> tuple[int, int]:
    return round(tokens[0]), round(tokens[1])

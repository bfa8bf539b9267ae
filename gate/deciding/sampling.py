"""The sampling behind a verdict, and whether one sample of a case may decide it.

A system is **not deterministic** when, in this order:

- its provider calls a model (`openai`, `anthropic`: `calls_a_model` on the provider's
  class): a model's answer is a draw, and no provider promises the same answer twice, not
  even at temperature 0;
- an output of either run names the model that answered it (a python or command system
  that wraps a model says so);
- some case's samples disagreed, one passing and another failing, in either run.

Otherwise (a python or command system that names no model and never disagreed with itself)
it is taken as deterministic: one sample is its answer. A regression that rests on one
sample of a system that is not deterministic is labelled, never dropped: the gate rule
still decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.results import CaseResult, RunResults
from gate.systems import provider_class

#: what a regression on one sample of a system that is not deterministic is labelled
SINGLE_SAMPLE = "1 sample: may be noise, run with samples ≥ 5 or auto"


@dataclass(frozen=True, slots=True)
class Sampling:
    """How many samples each side drew per case, and whether one can be trusted."""

    baseline: str
    candidate: str
    deterministic: bool
    #: why the system is (or is taken as) deterministic or not
    why: str

    def rests_on_one(self, case: CaseResult | None) -> bool:
        """A verdict on this candidate case rests on one draw of a system that varies."""
        return not self.deterministic and case is not None and case.samples == 1

    def text(self) -> str:
        sides = (
            self.candidate
            if self.baseline == self.candidate
            else f"baseline {self.baseline}, candidate {self.candidate}"
        )
        kind = "deterministic" if self.deterministic else "not deterministic"
        return f"{sides}; the system is {kind} ({self.why})"

    def to_dict(self, regressions: list[str], cases: Mapping[str, CaseResult]) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "deterministic": self.deterministic,
            "why": self.why,
            "single_sample_regressions": [i for i in regressions if self.rests_on_one(cases[i])],
        }


def per_case(run: RunResults) -> str:
    """E.g. "1 sample per case", "samples: auto, 4–24 per case (6.5 on average)"."""
    counts = [case.samples for case in run.cases if case.samples]
    if not counts:
        return "no sample"
    low, high = min(counts), max(counts)
    spread = str(low) if low == high else f"{low}–{high}"
    text = f"{spread} sample{'' if spread == '1' else 's'} per case"
    if low != high:
        text += f" ({sum(counts) / len(counts):.1f} on average)"
    return ("samples: auto, " if run.config.get("samples") == "auto" else "") + text


def determinism(baseline: RunResults, candidate: RunResults) -> tuple[bool, str]:
    """Whether the system is taken as deterministic, and why (see the module's docstring)."""
    system = candidate.config.get("system")
    provider = system.get("provider") if isinstance(system, Mapping) else None
    try:
        calls = provider_class(str(provider)).calls_a_model
    except KeyError:
        return False, f"provider {provider!r} is not one casegate knows"
    if calls:
        return False, f"provider {provider} calls a model, whose answers vary even at temperature 0"
    runs = (baseline, candidate)
    model = next(
        (s.model for run in runs for case in run.cases for s in case.outputs if s.model), None
    )
    if model is not None:
        return False, f"its outputs name a model, {model[:60]}"
    flaky = next((case.id for run in runs for case in run.cases if case.flaky), None)
    if flaky is not None:
        return False, f"samples of case {flaky} disagreed"
    return True, f"a {provider} system that names no model and never disagreed with itself"


def sampling_of(baseline: RunResults, candidate: RunResults) -> Sampling:
    deterministic, why = determinism(baseline, candidate)
    return Sampling(per_case(baseline), per_case(candidate), deterministic, why)

"""The simulated suite and each row of bench/stats_simulation.py, judged by casegate.

Every decision below is casegate's own: `compare` and `decide` for the verdict,
`replayed_rounds` for the rounds of `samples: auto`, `baseline_samples` for a
baseline refreshed under auto, and the confirmation helpers of
gate.pipeline.confirm for confirmation reruns.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from gate.deciding.compare import compare
from gate.deciding.noise.adaptive import baseline_samples, references, replayed_rounds
from gate.deciding.noise.runspread import spread_between_runs
from gate.deciding.rules import decide
from gate.judging.pairs import CasePairs, Pair, PairwiseAnalysis
from gate.pipeline.confirm import confirmed_cases, suite_confirmed
from gate.results import CaseResult, RunResults, SampleResult, summarise
from gate.suite.config import AdaptiveConfig, GateConfig

CASES = 40
FIXED = 20
#: 8 cases always pass, 12 spread over 0.95-0.99, 20 flaky ones over 0.50-0.90
SUITE = (
    [1.0] * 8 + [0.95 + 0.04 * i / 11 for i in range(12)] + [0.5 + 0.4 * i / 19 for i in range(20)]
)
IDS = [f"c{i:02d}" for i in range(CASES)]
CRITICAL = {
    1: {"c08"},
    3: {"c08", "c13", "c00"},
    5: {"c08", "c13", "c00", "c24", "c35"},  # c24 ≈ 0.58 and c35 ≈ 0.82 are flaky
}
FAMILY = 5  # near-duplicates: c00-c04, c05-c09, …

#: how families of near-duplicates shift on the logit: once per trial ("static"), per run
#: (Normal, sigma), per run in every other family only ("run-some"), per run as a rare bad run
#: (probability 0.1, a fall of the given size: "run-sparse"), or per sample
Latent = tuple[Literal["static", "run", "run-some", "run-sparse", "sample"], float] | None


@dataclass(frozen=True)
class Scenario:
    name: str
    goal: str
    candidate: list[float] = field(default_factory=lambda: list(SUITE))
    critical: frozenset[str] = frozenset(CRITICAL[1])
    base: Literal["fixed", "estimated"] = "fixed"
    #: the baseline's samples per case when not the default of `base`
    base_count: int | None = None
    cand: Literal["fixed", "auto"] = "fixed"
    adaptive: AdaptiveConfig = field(default_factory=AdaptiveConfig)
    latent: Latent = None
    clusters: bool = False
    #: cases per declared cluster (consecutive ids); 10 or 20 give the few-clusters rows
    cluster_size: int = FAMILY
    confirm: bool = False
    #: (limit, the chance of a loss and of a win, pairs): two systems the judge sees as equal
    pairwise: tuple[float, float, int] | None = None
    floor: float | None = None
    rule: dict[str, Any] = field(default_factory=dict)
    cases: int = CASES
    #: runs of the base system in its trusted history, the baseline among them (0: none);
    #: casegate estimates the shift between runs from them
    history: int = 0

    @property
    def ships(self) -> bool:
        return self.floor is not None


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _shifted(p: float, shift: float) -> float:
    if p >= 1 or p <= 0 or shift == 0:
        return p
    return 1 / (1 + math.exp(-(_logit(p) + shift)))


def draws(
    rng: random.Random, rates: list[float], count: int, latent: Latent, static: list[float]
) -> dict[str, list[bool]]:
    """`count` verdicts per case; `static` holds each family's shift for this trial."""
    families = CASES // FAMILY
    run_shift = [_run_shift(rng, latent, family) for family in range(families)]
    out: dict[str, list[bool]] = {case_id: [] for case_id in IDS}
    for _ in range(count):
        sample_shift = [
            rng.gauss(0, latent[1]) if latent and latent[0] == "sample" else 0.0
            for _ in range(families)
        ]
        for index, case_id in enumerate(IDS):
            family = index // FAMILY
            shift = 0.0
            if latent is not None:
                by_kind = {"static": static, "sample": sample_shift}
                shift = by_kind.get(latent[0], run_shift)[family]
            out[case_id].append(rng.random() < _shifted(rates[index], shift))
    return out


def _run_shift(rng: random.Random, latent: Latent, family: int) -> float:
    if latent is None or latent[0] in ("static", "sample"):
        return 0.0
    kind, size = latent
    if kind == "run-some":
        return rng.gauss(0, size) if family % 2 == 0 else 0.0
    if kind == "run-sparse":
        return -size if rng.random() < 0.1 else 0.0
    return rng.gauss(0, size)


@cache
def _sample(index: int, passed: bool) -> SampleResult:
    return SampleResult(sample=index, status="pass" if passed else "fail")


def case_result(
    case_id: str, verdicts: list[bool], critical: bool, cluster: str | None
) -> CaseResult:
    passes = sum(verdicts)
    outputs = [_sample(i, v) for i, v in enumerate(verdicts)]
    return CaseResult(
        id=case_id,
        critical=critical,
        status="pass" if passes == len(verdicts) else "fail",
        passed=passes == len(verdicts),
        samples=len(verdicts),
        passes=passes,
        pass_rate=passes / len(verdicts),
        outputs=outputs,
        cluster=cluster,
    )


def run_of(cases: list[CaseResult], samples: int | str, adaptive: AdaptiveConfig) -> RunResults:
    return RunResults(
        suite="sim",
        system="sim",
        config={"samples": samples, "adaptive": adaptive.model_dump()},
        config_hash="-",
        created_at="-",
        casegate_version="bench",
        summary=summarise(cases),
        cases=cases,
    )


def results(
    sequences: dict[str, list[bool]],
    counts: dict[str, int],
    scenario: Scenario,
    samples: int | str,
) -> RunResults:
    cases = [
        case_result(
            case_id,
            sequences[case_id][: counts[case_id]],
            case_id in scenario.critical,
            f"f{IDS.index(case_id) // scenario.cluster_size}" if scenario.clusters else None,
        )
        for case_id in IDS
    ]
    return run_of(cases, samples, scenario.adaptive)


def pairs_of(rng: random.Random, chance: float, count: int) -> PairwiseAnalysis:
    """Two systems the judge sees as equal: a loss as likely as a win."""
    found = []
    for i in range(count):
        roll = rng.random()
        outcome = "loss" if roll < chance else "win" if roll < 2 * chance else "tie"
        found.append(CasePairs(f"p{i}", False, [Pair(0, outcome, "")]))  # type: ignore[arg-type]
    return PairwiseAnalysis(judge="sim", cases=found)


def trial(scenario: Scenario, rng: random.Random) -> tuple[str, int]:
    """One comparison: (the gate's decision, the candidate's calls)."""
    rule_data = dict(scenario.rule)
    if scenario.pairwise is not None:
        rule_data["max_pairwise_loss_rate"] = scenario.pairwise[0]
    if scenario.floor is not None:
        rule_data.update(min_pass_rate=scenario.floor, block_on_pass_rate_drop=False)
    rule = GateConfig(**rule_data)
    static = [
        rng.gauss(0, scenario.latent[1]) if scenario.latent else 0.0 for _ in range(CASES // FAMILY)
    ]
    base_count = scenario.base_count or (
        baseline_samples(scenario.adaptive) if scenario.base == "estimated" else FIXED
    )
    base_draws = draws(rng, SUITE, base_count, scenario.latent, static)
    baseline = results(base_draws, dict.fromkeys(IDS, base_count), scenario, FIXED)
    spread = None
    if scenario.history > 1:
        runs = [base_draws] + [
            draws(rng, SUITE, base_count, scenario.latent, static)
            for _ in range(scenario.history - 1)
        ]
        spread = spread_between_runs([{i: (sum(run[i]), base_count) for i in IDS} for run in runs])
    top = max(FIXED, scenario.adaptive.max)
    cand_draws = draws(rng, scenario.candidate, top, scenario.latent, static)
    if scenario.cand == "auto":
        counts = replayed_rounds(cand_draws, references(baseline), scenario.adaptive, rule)
        candidate = results(cand_draws, counts, scenario, "auto")
    else:
        candidate = results(cand_draws, dict.fromkeys(IDS, FIXED), scenario, FIXED)
    calls = sum(case.samples for case in candidate.cases)
    pairs = None
    if scenario.pairwise is not None:
        _, chance, count = scenario.pairwise
        pairs = pairs_of(rng, chance, count)
    comparison = compare(baseline, candidate, rule, pairwise=pairs, run_spread=spread)
    if scenario.confirm and comparison.noise is not None:
        comparison = _confirm(scenario, rng, comparison, rule, static)
    verdict = decide(comparison, rule)
    return verdict.decision, calls


def _confirm(
    scenario: Scenario, rng: random.Random, comparison: Any, rule: GateConfig, static: list[float]
) -> Any:
    """Confirmation reruns as live `check` does them: fresh samples on both sides."""
    noise = comparison.noise
    flagged = comparison.critical(comparison.regressions)
    suite_flag = noise.suite_p <= noise.suite_alpha
    if not flagged and not suite_flag:
        return comparison
    size = rule.confirm_samples
    fresh_base = draws(rng, SUITE, size, scenario.latent, static)
    fresh_cand = draws(rng, scenario.candidate, size, scenario.latent, static)
    fixed = dict.fromkeys(IDS, size)
    base_run = results(fresh_base, fixed, scenario, size).case_map()
    cand_run = results(fresh_cand, fixed, scenario, size).case_map()
    if flagged:
        kept = confirmed_cases([(base_run[i], cand_run[i]) for i in flagged], rule)
        cleared = [i for i in flagged if i not in kept]
        regressions = [i for i in comparison.regressions if i not in cleared]
        comparison = dataclasses.replace(comparison, regressions=regressions)
    if suite_flag:
        held = suite_confirmed([(base_run[i], cand_run[i]) for i in IDS], rule, None)
        noise = dataclasses.replace(noise, suite_confirmed=held)
        comparison = dataclasses.replace(comparison, noise=noise)
    return comparison


def _dropped(case_id: str, to: float) -> list[float]:
    rates = list(SUITE)
    rates[IDS.index(case_id)] = to
    return rates


AUTO12 = AdaptiveConfig(max=12)
AUTO20 = AdaptiveConfig(max=20)
AUTO40 = AdaptiveConfig(max=40)
AA = "≤ 2% (CI ≤ 2.5%)"
POWER = "≥ 90%"
SCENARIOS = [
    Scenario("A/A fixed n=20, 1 critical", AA),
    Scenario("A/A fixed n=20, 3 critical", AA, critical=frozenset(CRITICAL[3])),
    Scenario("A/A fixed n=20, 5 critical (2 flaky)", AA, critical=frozenset(CRITICAL[5])),
    Scenario("A/A auto, 1 critical", AA, cand="auto"),
    Scenario("A/A auto, 3 critical", AA, critical=frozenset(CRITICAL[3]), cand="auto"),
    Scenario("A/A auto, 5 critical (2 flaky)", AA, critical=frozenset(CRITICAL[5]), cand="auto"),
    Scenario(
        "A/A auto vs baseline refreshed with auto, 5 critical",
        AA,
        critical=frozenset(CRITICAL[5]),
        base="estimated",
        cand="auto",
    ),
    Scenario(
        "A/A fixed n=20 vs baseline refreshed with auto, 5 critical",
        AA,
        critical=frozenset(CRITICAL[5]),
        base="estimated",
    ),
    *[
        Scenario(
            f"A/A {mode}, families of 5, {kind} latent σ={sigma:g}, clusters declared",
            AA,
            critical=frozenset(CRITICAL[5]),
            cand=mode,  # type: ignore[arg-type]
            latent=(kind, sigma),  # type: ignore[arg-type]
            clusters=True,
        )
        for kind, sigma in (("static", 1.0), ("static", 2.0), ("sample", 1.0), ("run", 1.0))
        for mode in ("fixed", "auto")
    ],
    *[
        Scenario(
            f"A/A {mode}, families of 5, run latent σ=1, clusters declared, "
            f"{runs} base runs in history",
            AA,
            critical=frozenset(CRITICAL[5]),
            cand=mode,  # type: ignore[arg-type]
            latent=("run", 1.0),
            clusters=True,
            history=runs,
        )
        for runs in (2, 3, 5)
        for mode in ("fixed", "auto")
    ],
    Scenario(
        "A/A fixed n=20 vs the baseline it estimates (60), 5 critical",
        AA,
        critical=frozenset(CRITICAL[5]),
        base_count=3 * FIXED,
    ),
    Scenario(
        "A/A auto (max 12, as `casegate init` writes) vs the baseline it estimates (36), "
        "5 critical",
        AA,
        critical=frozenset(CRITICAL[5]),
        base="estimated",
        cand="auto",
        adaptive=AUTO12,
    ),
    Scenario(
        "A/A fixed, every other family shifts per run (σ=1.5), clusters declared, "
        "3 base runs in history",
        AA,
        critical=frozenset(CRITICAL[5]),
        latent=("run-some", 1.5),
        clusters=True,
        history=3,
    ),
    Scenario(
        "A/A fixed, a rare bad run per family (p 0.1, logit −2), clusters declared, "
        "3 base runs in history",
        AA,
        critical=frozenset(CRITICAL[5]),
        latent=("run-sparse", 2.0),
        clusters=True,
        history=3,
    ),
    Scenario(
        "A/A auto, 5 critical (2 flaky), 3 base runs in history",
        AA,
        critical=frozenset(CRITICAL[5]),
        cand="auto",
        history=3,
    ),
    *[
        Scenario(
            f"A/A {mode}, {CASES // size} declared clusters of {size} (few units), "
            f"families of 5, static latent σ=1, 5 critical",
            AA,
            critical=frozenset(CRITICAL[5]),
            cand=mode,  # type: ignore[arg-type]
            latent=("static", 1.0),
            clusters=True,
            cluster_size=size,
        )
        for size in (10, 20)
        for mode in ("fixed", "auto")
    ],
    Scenario(
        "A/A pairwise limit 0.2, equal systems at the limit (200 pairs), 5 critical",
        AA,
        critical=frozenset(CRITICAL[5]),
        pairwise=(0.2, 0.2, 200),
    ),
    Scenario(
        "A/A pairwise limit 0.2, equal systems at the limit (40 pairs), auto",
        AA,
        cand="auto",
        pairwise=(0.2, 0.2, 40),
    ),
    Scenario(
        "A/A auto with confirmation reruns, 5 critical",
        AA,
        critical=frozenset(CRITICAL[5]),
        cand="auto",
        confirm=True,
    ),
    Scenario(
        "floor at its boundary, fixed n=20 (ships)",
        "≤ 2%",
        floor=sum(SUITE) / CASES,
        critical=frozenset(),
    ),
    Scenario(
        "floor at its boundary, auto (ships)",
        "≤ 2%",
        floor=sum(SUITE) / CASES,
        critical=frozenset(),
        cand="auto",
    ),
    # 20 baseline samples: no exact test at the critical share reaches 90% (tests/test_stats.py)
    Scenario(
        "power: critical 0.95→0.5, fixed n=20, 1 critical",
        "— (ceiling 89.4%)",
        _dropped("c08", 0.5),
    ),
    Scenario(
        "power: critical 0.95→0.5, fixed n=20, 5 critical",
        POWER,
        _dropped("c08", 0.5),
        frozenset(CRITICAL[5]),
    ),
    Scenario(
        "power: critical 0.95→0.5, fixed n=20 vs the baseline it estimates (60)",
        POWER,
        _dropped("c08", 0.5),
        base_count=3 * FIXED,
    ),
    Scenario(
        "power: critical 0.95→0.5, fixed n=20, 5 critical, vs the baseline it estimates (60)",
        "—",
        _dropped("c08", 0.5),
        frozenset(CRITICAL[5]),
        base_count=3 * FIXED,
    ),
    Scenario(
        "power: critical 0.95→0.5, auto (max 12, as `casegate init` writes) vs the baseline "
        "it estimates (36)",
        "—",
        _dropped("c08", 0.5),
        base="estimated",
        cand="auto",
        adaptive=AUTO12,
    ),
    Scenario(
        "power: critical 0.95→0.5, fixed n=20 vs baseline refreshed with auto (72)",
        POWER,
        _dropped("c08", 0.5),
        base="estimated",
    ),
    Scenario(
        "power: critical 0.95→0.5, auto, 1 critical", POWER, _dropped("c08", 0.5), cand="auto"
    ),
    Scenario(
        "power: critical 0.95→0.5, auto vs baseline refreshed with auto",
        POWER,
        _dropped("c08", 0.5),
        base="estimated",
        cand="auto",
    ),
    Scenario(
        "power: critical 0.95→0.5, auto (max 20) vs baseline refreshed with auto",
        POWER,
        _dropped("c08", 0.5),
        base="estimated",
        cand="auto",
        adaptive=AUTO20,
    ),
    Scenario(
        "power: critical 0.95→0.5, fixed n=20, 1 critical, clusters declared",
        "— (blocks; exit 3 besides)",
        _dropped("c08", 0.5),
        clusters=True,
    ),
    Scenario(
        "power: critical 0.95→0.5, fixed n=20 vs the baseline it estimates (60), clusters declared",
        "—",
        _dropped("c08", 0.5),
        clusters=True,
        base_count=3 * FIXED,
    ),
    Scenario(
        "power: critical 0.95→0.5, auto vs baseline refreshed with auto, clusters declared",
        "— (blocks; exit 3 besides)",
        _dropped("c08", 0.5),
        base="estimated",
        cand="auto",
        clusters=True,
    ),
    Scenario(
        "power: critical 0.95→0.5, auto vs refreshed, families (static σ=1), clusters declared",
        "—",
        _dropped("c08", 0.5),
        base="estimated",
        cand="auto",
        latent=("static", 1.0),
        clusters=True,
    ),
    Scenario(
        "power: critical 0.95→0.5, auto vs refreshed, families (run σ=1), clusters declared",
        "—",
        _dropped("c08", 0.5),
        base="estimated",
        cand="auto",
        latent=("run", 1.0),
        clusters=True,
    ),
    Scenario(
        "power: critical 0.95→0.5, auto vs refreshed, families (run σ=1), clusters declared, "
        "3 base runs in history",
        "—",
        _dropped("c08", 0.5),
        base="estimated",
        cand="auto",
        latent=("run", 1.0),
        clusters=True,
        history=3,
    ),
    Scenario(
        "power: critical 0.95→0.5 in a steady family, every other family shifts per run "
        "(σ=1.5), clusters declared, 3 base runs in history",
        "—",
        _dropped("c08", 0.5),
        latent=("run-some", 1.5),
        clusters=True,
        history=3,
    ),
    Scenario(
        "power: critical 0.95→0.5, auto vs refreshed, 3 base runs in history",
        POWER,
        _dropped("c08", 0.5),
        base="estimated",
        cand="auto",
        history=3,
    ),
    Scenario(
        "power: critical 0.95→0.5, fixed n=20, 4 declared clusters of 10 (few units)",
        "—",
        _dropped("c08", 0.5),
        clusters=True,
        cluster_size=10,
    ),
    Scenario(
        "power: every case −10 points, fixed n=20, 4 declared clusters of 10 (few units)",
        "—",
        [max(0.0, p - 0.10) for p in SUITE],
        clusters=True,
        cluster_size=10,
    ),
    Scenario("power: critical 0.95→0.8, fixed n=20", "—", _dropped("c08", 0.8)),
    Scenario(
        "power: critical 0.95→0.8, auto (max 40) vs baseline refreshed with auto",
        "—",
        _dropped("c08", 0.8),
        base="estimated",
        cand="auto",
        adaptive=AUTO40,
    ),
    Scenario("power: critical 0.9→0.7, fixed n=20", "—", _dropped("c39", 0.7), frozenset({"c39"})),
    Scenario(
        "power: critical 0.9→0.7, auto (max 40) vs baseline refreshed with auto",
        "—",
        _dropped("c39", 0.7),
        frozenset({"c39"}),
        base="estimated",
        cand="auto",
        adaptive=AUTO40,
    ),
    Scenario("power: every case −5 points, fixed n=20", "—", [max(0.0, p - 0.05) for p in SUITE]),
    Scenario(
        "power: every case −5 points, auto", "—", [max(0.0, p - 0.05) for p in SUITE], cand="auto"
    ),
    Scenario("power: every case −10 points, fixed n=20", "—", [max(0.0, p - 0.10) for p in SUITE]),
    Scenario(
        "power: every case −10 points, auto", "—", [max(0.0, p - 0.10) for p in SUITE], cand="auto"
    ),
]

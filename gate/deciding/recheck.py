"""Judge, in the gate's own process, the outputs a run produced.

The supervised run imports the pull request's code (custom checks, a python
system), so what it writes is a claim. Under `casegate check` it produces outputs
and judges only what this process cannot (checks.run_judged: outside replay, the
service checks it measured). This process, which never imports user code, judges each
sample once: in replay, every sample's output must be the recorded one (a replayed
check produces the candidate here: gate.pipeline.replay); every built-in check is
evaluated on that output; custom checks get the verdicts of their own judging process
(gate.judging.judgeproc); the pinned judge's verdict is the one this process asked
for (gate.pipeline.replay, gate.pipeline.livejudge), taken as given here; and each
case's verdict is computed from its samples under the config's thresholds. `similar`
by embeddings and `moderation` are measured from the embeddings and scores read with
the outputs, in replay; outside it there is no such snapshot, and their verdicts are
the run's. `samples: auto` cases are the exception to judging once: the run needs
their verdicts to stop, and the rounds it drew are derived again here from this
process's verdicts, under the ruler's settings. Any mismatch means the run cannot be
trusted: exit 2, never a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gate import checks, heap
from gate.deciding.noise import adaptive
from gate.errors import CasegateError, MissingRecordingError, SystemCallError
from gate.judging.judgeproc import CustomVerdicts
from gate.judging.sample import aggregate, checked
from gate.judging.services import Services, for_snapshot, snapshot_entries
from gate.outputs import Context, Output, ToolCall
from gate.produce.answers import samples_for
from gate.produce.batch.cost import price_key
from gate.produce.recordings import RecordingStore, request_key, system_fingerprint
from gate.produce.services.recorded import Snapshot
from gate.results import (
    CaseOutputs,
    CaseResult,
    CheckResult,
    RunResults,
    SampleResult,
    summarise,
)
from gate.secrets import redact
from gate.suite.cases import Case
from gate.suite.config import Config, LoadedConfig, Mode
from gate.suite.shard import shard_of

#: checks this process does not evaluate: custom checks (their own judging process,
#: gate.judging.judgeproc) and those only the supervised run can give (checks.run_judged)
DELEGATED = frozenset({"check"}) | checks.RUN_JUDGED


class UntrustedRun(CasegateError):
    """The supervised run's results do not match what this process finds."""


class Recorded(dict[tuple[str, int], Output]):
    """The recorded outputs by (case id, sample number), each the one its request key
    names, when each was captured (`captured`, as the file says, by the same keys), and
    the recorded embeddings and moderation scores (`services`) that
    `similar` and `moderation` are judged by."""

    def __init__(self) -> None:
        super().__init__()
        self.captured: dict[tuple[str, int], str | None] = {}
        self.services: dict[tuple[str, str], dict[str, Any]] = {}


def snapshot(loaded: LoadedConfig, cases: Sequence[Case], mode: Mode) -> Recorded | None:
    """Every recording the run may replay, read *before* the run starts.

    The run imports the suite's code, which could rewrite recording files on disk
    before they are read again; what is compared is what was there beforehand.
    """
    if mode != "replay":
        return None
    store = RecordingStore(loaded.recordings_dir)
    fingerprint = system_fingerprint(loaded.resolved_system())
    recorded = Recorded()
    with heap.bulk():  # an output a sample, kept to the end: no collector passes over them
        for case in cases:
            count = samples_for(case, loaded) or loaded.config.adaptive.max
            keys = [request_key(fingerprint, case.key_input, index) for index in range(count)]
            try:
                outputs = store.get_many_dated(case.id, keys)
            except CasegateError:
                continue  # the run itself reports an unreadable recording
            for number, (output, captured) in enumerate(outputs):
                if output is not None:
                    recorded[(case.id, number)] = output
                    recorded.captured[(case.id, number)] = captured
        recorded.services = snapshot_entries(store, cases)
    return recorded


def recheck(
    candidate: RunResults,
    loaded: LoadedConfig,
    cases: Sequence[Case],
    recorded: Recorded | None,
    *,
    reference: RunResults | None = None,
    shards: int | None = None,
    custom: CustomVerdicts | None = None,
    ruler: LoadedConfig | None = None,
) -> RunResults:
    """The candidate with every verdict this process can give recomputed; raises on a forgery.

    `recorded` is the `snapshot` taken before the run (None: not a replay). `reference`
    is the baseline `samples: auto` stopped against, and `shards` the split the merged
    candidate was run in (each shard ran its rounds apart). `custom` holds the custom
    checks' verdicts from the judging process (gate.judging.judgeproc), which replace the run's.
    `ruler` is the base commit's config under a ruling: its price table costs the samples
    and its declared tool schemas judge `tool_args_valid` (a pull request's lower prices
    or looser schemas never pass a case).
    """
    rebuilt = judge_cases(candidate.cases, loaded, cases, recorded, custom=custom, ruler=ruler)
    _require_adaptive_rounds(
        rebuilt, {case.id: case for case in cases}, loaded, reference, shards, ruler
    )
    candidate.cases = rebuilt
    candidate.summary = summarise(rebuilt)
    return candidate


def judge_cases(
    reported: Sequence[CaseOutputs],
    loaded: LoadedConfig,
    cases: Sequence[Case],
    recorded: Recorded | None,
    *,
    custom: CustomVerdicts | None = None,
    ruler: LoadedConfig | None = None,
) -> list[CaseResult]:
    """Each reported case as this process judges its samples (see `recheck`)."""
    by_id = {case.id: case for case in cases}
    # Under a ruling every sample is costed at the base's prices: a recorded cost_usd is
    # the pull request's claim, and so is a price table it edits.
    costing = ruler
    declared = checks.declared_tools(((ruler or loaded).config.system.model_extra) or {})
    services = None
    if recorded is not None:  # the snapshot, not the folder the run could write to
        services = for_snapshot(loaded.config, Snapshot(recorded.services))
    with heap.bulk():  # every sample's verdicts, kept to the end
        return [
            _judged_case(result, by_id, recorded, loaded, services, custom, costing, declared)
            for result in reported
        ]


def _judged_case(
    result: CaseOutputs,
    by_id: dict[str, Case],
    recorded: Recorded | None,
    loaded: LoadedConfig,
    services: Services | None,
    custom: CustomVerdicts | None,
    costing: LoadedConfig | None,
    declared: Any,
) -> CaseResult:
    """One case as this process judges it from the samples the run reported."""
    case = by_id.get(result.id)
    if case is None:
        raise UntrustedRun(f"the run reported case {result.id!r}, which the suite lacks")
    fixed = samples_for(case, loaded)
    if fixed is not None and len(result.outputs) != fixed:
        raise UntrustedRun(
            f"the run reported {len(result.outputs)} sample(s) of {case.id!r}, "
            f"not the {fixed} the suite asks for"
        )
    _require_sample_numbers(case.id, result.outputs)
    outputs = [
        _judge_again(case, sample, recorded, loaded, services, custom, costing, declared)
        for sample in sorted(result.outputs, key=lambda sample: sample.sample)
    ]
    threshold = case.min_pass_rate
    if threshold is None:
        threshold = loaded.config.min_pass_rate
    return aggregate(case, outputs, threshold)


def ruled_cost(sample: SampleResult, ruler: LoadedConfig) -> float | None:
    """The sample's cost as the base's prices allow it.

    A recorded `cost_usd` is the pull request's claim: it stands only when it is at
    least what the cheapest of the base's prices for the model (its batch price, for an
    answer recorded through a batch API) makes of the tokens; otherwise, or with no cost
    recorded, the base's normal price is used.
    """
    key = price_key(ruler, sample.model)
    if key is None or (sample.input_tokens is None and sample.output_tokens is None):
        return sample.cost_usd
    price = ruler.config.pricing[key]
    tokens_in, tokens_out = sample.input_tokens or 0, sample.output_tokens or 0
    normal = (tokens_in * price.input + tokens_out * price.output) / 1e6
    cheapest = (
        tokens_in
        * min(price.input, price.batch_input if price.batch_input is not None else price.input)
        + tokens_out
        * min(price.output, price.batch_output if price.batch_output is not None else price.output)
    ) / 1e6
    claimed = sample.cost_usd
    if claimed is None or claimed < cheapest * (1 - 1e-9):
        return normal
    return claimed


def _require_sample_numbers(case_id: str, outputs: Sequence[SampleResult]) -> None:
    """Samples 0 to n-1, each once: a sample repeated in place of another is a forgery
    that every other check would accept (it matches its recording)."""
    numbers = sorted(sample.sample for sample in outputs)
    if numbers != list(range(len(numbers))):
        shown = ", ".join(map(str, numbers[:8])) + (", …" if len(numbers) > 8 else "")
        raise UntrustedRun(
            f"the run reported samples {shown} of {case_id!r}, not 0 to {len(numbers) - 1} "
            "each once: its results cannot be trusted"
        )


def _require_adaptive_rounds(
    rebuilt: Sequence[CaseResult],
    by_id: dict[str, Case],
    loaded: LoadedConfig,
    reference: RunResults | None,
    shards: int | None,
    ruler: LoadedConfig | None,
) -> None:
    """`samples: auto` cases stopped where the rounds, run again here, stop them: under
    the ruler's rule and adaptive settings (`rounds_config`)."""
    adaptive_cases = [r for r in rebuilt if samples_for(by_id[r.id], loaded) is None]
    if not adaptive_cases:
        return
    groups: dict[int, dict[str, list[bool]]] = {}
    for result in adaptive_cases:
        group = shard_of(result.id, shards) if shards else 0
        groups.setdefault(group, {})[result.id] = [o.status == "pass" for o in result.outputs]
    refs = adaptive.references(reference)
    config = rounds_config(loaded, ruler)
    for outcomes in groups.values():
        drawn = adaptive.replayed_rounds(outcomes, refs, config.adaptive, config.gate)
        for case_id, verdicts in outcomes.items():
            if drawn[case_id] != len(verdicts):
                raise UntrustedRun(
                    f"the run stopped case {case_id!r} after {len(verdicts)} sample(s), but "
                    f"`samples: auto` draws {drawn[case_id]} given its verdicts: its results "
                    "cannot be trusted"
                )


def rounds_config(loaded: LoadedConfig, ruler: LoadedConfig | None) -> Config:
    """Whose rule and adaptive settings decide where `samples: auto` rounds stop: the
    ruler's. A pull request that raised `gate.alpha` (which the ruler lists as tightening)
    would otherwise stop a dropping critical case at its first look, with too few samples
    for the base's rule to see the drop."""
    return (ruler or loaded).config


def costed(reported: Sequence[CaseOutputs], ruler: LoadedConfig | None) -> None:
    """Each sample costed at the ruler's prices (`ruled_cost`), in place: done before the
    custom checks see the samples, which must judge the cost the built-in checks judge."""
    if ruler is None:
        return
    for result in reported:
        for sample in result.outputs:
            sample.cost_usd = ruled_cost(sample, ruler)


def _judge_again(
    case: Case,
    sample: SampleResult,
    recordings: Recorded | None,
    loaded: LoadedConfig,
    services: Services | None = None,
    custom: CustomVerdicts | None = None,
    costing: LoadedConfig | None = None,
    declared: Any = None,
) -> SampleResult:
    if sample.status == "error":
        return sample  # an error is never a pass: nothing to recompute
    tool_calls = [ToolCall.model_validate(call) for call in sample.tool_calls]
    contexts = [Context.model_validate(context) for context in sample.contexts]
    if recordings is not None:
        # Keyed as the snapshot read it: by this case's input under this config's system.
        recorded = recordings.get((case.id, sample.sample))
        if recorded is None or (recorded.text, recorded.tool_calls, recorded.contexts) != (
            sample.text,
            tool_calls,
            contexts,
        ):
            raise UntrustedRun(
                f"the run's output for case {case.id!r} (sample {sample.sample}) is not the "
                "recorded one: its results cannot be trusted"
            )
        # The budgets judge the recorded figures, not the run's account of them.
        sample.latency_ms = recorded.latency_ms
        sample.output_tokens = recorded.output_tokens
        sample.input_tokens = recorded.input_tokens
        sample.stop_reason = recorded.stop_reason
        sample.cost_usd = recorded.cost_usd
        if sample.cost_usd is None:
            sample.cost_usd = loaded.cost_of(
                recorded.model, recorded.input_tokens, recorded.output_tokens
            )
    if costing is not None:  # the ruler's prices, not the pull request's
        sample.cost_usd = ruled_cost(sample, costing)
    # Outside replay there is no snapshot to measure with: the run's word stands, as the
    # judge's does (and as its outputs do).
    delegated = DELEGATED | (checks.service_checks(case.expect) if services is None else set())
    judges = [(name, judge) for name, judge in case.judges if name not in delegated]
    subject = checks.Subject(
        sample.text or "",
        case.input,
        tool_calls,
        case,
        stop_reason=sample.stop_reason,
        latency_ms=sample.latency_ms,
        cost_usd=sample.cost_usd,
        output_tokens=sample.output_tokens,
        input_tokens=sample.input_tokens,
        model=sample.model,
        declared_tools=declared,
        services=services,
        contexts=contexts,
    )
    try:
        mine = {v.check: v for v in checks.evaluate(judges, subject)}
    except SystemCallError as exc:
        if not checks.service_checks(case.expect) & {c.check for c in sample.checks}:
            # The run left the measure to this process, and the recordings lack it.
            raise MissingRecordingError(
                f"case {case.id!r} (sample {sample.sample}): {redact(str(exc))}"
            ) from None
        # The run judged what the snapshot cannot: not from it.
        raise UntrustedRun(
            f"the run judged case {case.id!r} (sample {sample.sample}), but the recordings "
            f"read before it started cannot ({exc}): its results cannot be trusted"
        ) from None
    theirs = {c.check: c for c in sample.checks}
    verdicts = []
    for name, _ in case.judges:
        if name == "check" and custom is not None:
            answer = custom.verdicts.get((case.id, sample.sample))
            if answer is None:
                raise UntrustedRun(
                    f"the judging process gave no custom-check verdict for case {case.id!r} "
                    f"(sample {sample.sample})"
                )
            ok, reason, score = answer
            verdicts.append(CheckResult(check=name, ok=ok, reason=reason, score=score))
        elif name in delegated:
            if name not in theirs:
                raise UntrustedRun(f"the run gave no {name!r} verdict for case {case.id!r}")
            verdicts.append(theirs[name])
        else:
            verdicts.append(checked(mine[name]))
    failed = [v for v in verdicts if not v.ok]
    sample.checks = verdicts
    sample.status = "fail" if failed else "pass"
    sample.reason = "; ".join(f"{v.check}: {v.reason}" for v in failed)
    return sample

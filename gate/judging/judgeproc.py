"""Custom checks judged in a process of their own, from a tree the gate chose.

The supervised run imported the pull request's code; whatever verdicts it gives for
custom checks are its claim. The gate asks again: a judging process (gate.judging.judgeworker)
gets only the candidate's outputs, imports the checks from `imports` (the base
commit's extraction under a ruling) and answers with a verdict per sample and what
the checks touched, which the ruler then compares between the two trees.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.errors import CasegateError
from gate.produce.sandbox import (
    Folder,
    SandboxPlan,
    closed_to_others,
    end_every_process,
    entered,
    identity,
    make_folder,
    private_file,
    read_untrusted,
    request_of,
)
from gate.results import CaseOutputs, valid_score
from gate.suite.cases import Case

#: the judging process's answer is verdicts and paths: far below this
MAX_ANSWER_BYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class Footprint:
    """What the custom checks touched, relative to the tree they were judged from."""

    #: the root of the tree the checks were judged from (a repository's top)
    tree: Path
    #: the folder the checks were imported from (the config's), relative to `tree`
    suite: str
    #: module name → its file, relative to the tree
    modules: Mapping[str, str]
    opened: tuple[str, ...]
    listed: tuple[str, ...]
    programs: bool
    #: files read outside the tree (and outside the interpreter and the system)
    outside: tuple[str, ...] = ()


#: each sample's answer from the judging process: ok, reason, score
ANSWER_ITEMS = 3


@dataclass(frozen=True, slots=True)
class CustomVerdicts:
    #: (case id, sample number) → (ok, reason, score)
    verdicts: Mapping[tuple[str, int], tuple[bool, str, float | None]]
    footprint: Footprint
    #: how the sandboxed judging process left the network, as it reported (for the log)
    network: str | None = None


def judge_custom(
    produced: Iterable[CaseOutputs],
    cases: Sequence[Case],
    *,
    imports: Path,
    tree: Path,
    sandbox: SandboxPlan | None,
    environ: Mapping[str, str] | None = None,
    ruler_cases: Mapping[str, Case] | None = None,
) -> CustomVerdicts | None:
    """The custom checks' verdicts on every judged sample (None: no case has one).

    `ruler_cases` are the base commit's cases under a ruling: a check is handed the base's
    copy of its case (tags, note, criticality …), with the expectations and input the
    outputs answer; the ruler reviews those two.

    Raises CasegateError when the judging process did not finish: nothing is gated.
    """
    by_id = {case.id: case for case in cases}
    items: list[dict[str, Any]] = []
    for result in produced:
        case = by_id.get(result.id)
        if case is None or "check" not in case.expect:
            continue
        samples = [_sample(sample) for sample in result.outputs if sample.status != "error"]
        if samples:
            items.append({"case": _shown_case(case, ruler_cases), "samples": samples})
    if not items:
        return None
    # The base's cases first, in the base's order, in a process of their own: a case the
    # pull request adds can call a base check with arguments of its choosing, and must not
    # leave state behind that another case's verdict then depends on.
    order = {case_id: index for index, case_id in enumerate(ruler_cases or {})}
    known = sorted(
        (item for item in items if item["case"]["id"] in order),
        key=lambda item: order[item["case"]["id"]],
    )
    new = [item for item in items if item["case"]["id"] not in order]
    answers = [
        _judge_group(group, imports, tree, sandbox, environ) for group in (known, new) if group
    ]
    return _merged([_parsed(found, tree, imports) for found in answers])


def _judge_group(
    items: list[dict[str, Any]],
    imports: Path,
    tree: Path,
    sandbox: SandboxPlan | None,
    environ: Mapping[str, str] | None,
) -> dict[str, Any]:
    """One judging process over `items`; its answer, read as untrusted data."""
    if sandbox is not None and sandbox.identity is not None:
        # A user of its own, not the run's: nothing the run left could pass for it.
        sandbox = dataclasses.replace(sandbox, identity=identity())
    who = sandbox.identity if sandbox is not None else None
    nonce = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="casegate-judge-") as scratch_text:
        folder = make_folder(Path(scratch_text), who)
        answer = folder.run / "answer.json"
        request_path = folder.scratch / "request.json"
        request = {
            "imports": str(imports),
            "tree": str(tree),
            "cases": items,
            "out": str(answer),
            "nonce": nonce,
            "sandbox": request_of(sandbox, folder) if sandbox is not None else None,
        }
        private_file(request_path, json.dumps(request))  # its nonce is for the worker alone
        env = judging_environment(os.environ if environ is None else environ, folder)
        flags = ["-I"] if sys.flags.isolated else ["-P"]
        hidden = sandbox.hidden if sandbox is not None and who is not None else ()
        with closed_to_others(hidden):
            try:
                finished = subprocess.run(
                    [sys.executable, *flags, "-m", "gate.judging.judgeworker", str(request_path)],
                    env=env,
                    cwd=imports,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    errors="replace",
                    check=False,
                    start_new_session=True,
                    timeout=judging_timeout(items),
                )
            except subprocess.TimeoutExpired:
                raise CasegateError(
                    f"the custom checks did not finish judging within "
                    f"{judging_timeout(items):.0f} s, so nothing was gated"
                ) from None
            finally:
                if who is not None:
                    end_every_process(who)
        found = _answer(answer, nonce, finished)
        found.pop("network", None)  # the process's own word is not what the log says
        if who is not None:
            found["network"] = entered(folder) or "it did not report entering the sandbox"
        return found


def _merged(parts: list[CustomVerdicts]) -> CustomVerdicts:
    first = parts[0]
    if len(parts) == 1:
        return first
    verdicts = {key: value for part in parts for key, value in part.verdicts.items()}
    footprint = Footprint(
        tree=first.footprint.tree,
        suite=first.footprint.suite,
        modules={k: v for part in parts for k, v in part.footprint.modules.items()},
        opened=tuple(sorted({p for part in parts for p in part.footprint.opened})),
        listed=tuple(sorted({p for part in parts for p in part.footprint.listed})),
        programs=any(part.footprint.programs for part in parts),
        outside=tuple(sorted({p for part in parts for p in part.footprint.outside})),
    )
    return CustomVerdicts(verdicts, footprint, first.network)


#: what the judging process keeps of the gate's environment: a check judges the outputs
#: it is given, not the runner it runs on (no workspace path, no token, no key)
KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONHASHSEED", "PYTHONUTF8")


def judging_environment(environ: Mapping[str, str], folder: Folder) -> dict[str, str]:
    env = {key: environ[key] for key in KEPT_VARIABLES if key in environ}
    env.update(folder.environment())
    return env


def judging_timeout(items: Sequence[Mapping[str, Any]]) -> float:
    """Ten minutes, and a second more per sample: a check that never returns ends in
    "could not judge", never in a hung job."""
    return 600.0 + sum(len(item["samples"]) for item in items)


def _shown_case(case: Case, ruler_cases: Mapping[str, Case] | None) -> dict[str, Any]:
    base = (ruler_cases or {}).get(case.id)
    shown = (base or case).model_dump(mode="json")
    if base is not None:
        mine = case.model_dump(mode="json")
        shown["expect"], shown["input"] = mine["expect"], mine["input"]
    return shown


def _sample(sample: Any) -> dict[str, Any]:
    return {
        "sample": sample.sample,
        "text": sample.text,
        "tool_calls": list(sample.tool_calls),
        "contexts": list(sample.contexts),
        "stop_reason": sample.stop_reason,
        "latency_ms": sample.latency_ms,
        "cost_usd": sample.cost_usd,
        "output_tokens": sample.output_tokens,
        "input_tokens": sample.input_tokens,
        "model": sample.model,
    }


def _answer(path: Path, nonce: str, finished: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    said = (finished.stdout or "")[-600:].strip()
    try:
        found = json.loads(read_untrusted(path, MAX_ANSWER_BYTES, "the judging process's answer"))
    except (CasegateError, ValueError):
        found = {}
    if isinstance(found, dict) and isinstance(found.get("problems"), list):
        raise CasegateError([str(problem) for problem in found["problems"]])
    if finished.returncode != 0 or not isinstance(found, dict) or found.get("done") != nonce:
        raise CasegateError(
            f"the custom checks could not be judged (the judging process ended with exit "
            f"code {finished.returncode}), so nothing was gated"
            + (f"; it printed: {said}" if said else "")
        )
    return found


def _parsed(found: dict[str, Any], tree: Path, imports: Path) -> CustomVerdicts:
    verdicts: dict[tuple[str, int], tuple[bool, str, float | None]] = {}
    for case_id, samples in (found.get("verdicts") or {}).items():
        for number, answer in samples.items():
            if not isinstance(answer, list) or len(answer) != ANSWER_ITEMS:
                raise CasegateError(
                    f"the judging process answered case {case_id!r} in a shape it never "
                    "writes, so nothing was gated"
                )
            ok, reason, score = answer
            # The process ran the pull request's code: a score is believed only as a score.
            measured = score if valid_score(score) else None
            verdicts[(str(case_id), int(number))] = (ok is True, str(reason), measured)
    footprint = Footprint(
        tree=tree,
        suite=imports.resolve().relative_to(tree.resolve()).as_posix(),
        modules={str(k): str(v) for k, v in (found.get("modules") or {}).items()},
        opened=tuple(str(path) for path in found.get("opened") or ()),
        listed=tuple(str(path) for path in found.get("listed") or ()),
        programs=found.get("programs") is True,
        outside=tuple(str(path) for path in found.get("outside") or ()),
    )
    network = found.get("network")
    return CustomVerdicts(verdicts, footprint, network if isinstance(network, str) else None)

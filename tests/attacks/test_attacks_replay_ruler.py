"""Attacks on the replayed check (issue 21): what the in-gate replay (gate.pipeline.replay) judges with under a ruling —
the base's prices and tool schemas — and what it hands the base's custom checks.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from gate.cli import main
from gate.results import read_results
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository

USAGE_BOT = """
def answer(case_input, system):
    return {"text": "ok " + case_input["question"], "input_tokens": 100, "output_tokens": 100}
"""

TOOL_BOT = """
def answer(case_input, system):
    return {"text": "", "tool_calls": [{"name": "issue_refund", "arguments": {"amount": 20}}]}
"""

REFUND = {"type": "object", "properties": {"amount": {"type": "integer", "maximum": 100}}}


def _edit_config(project: Project, edit: Any) -> None:
    data = yaml.safe_load(project.config_path.read_text())
    edit(data)
    project.config_path.write_text(yaml.safe_dump(data, sort_keys=False))


def _rewrite(project: Project, case_id: str, edit: Any) -> None:
    path = project.root / "recordings" / f"{case_id}.json"
    document = json.loads(path.read_text())
    for entry in document["responses"].values():
        edit(entry["output"])
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def _committed(project: Project) -> None:
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["check", "--base", "main", "--quiet", "--out", "c.json", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# --- prices ---------------------------------------------------------------------------


@pytest.fixture
def priced(project: Project) -> Project:
    project.write_system(USAGE_BOT)
    _edit_config(
        project,
        lambda d: d.update(
            system={**d["system"], "model": "m"},
            pricing={"m": {"input": 1.0, "output": 1.0}},  # 200 tokens: $0.0002
        ),
    )
    project.write_cases(
        [
            case("crit", "a", contains="ok", max_cost_usd=0.001, fields_={"critical": True}),
            case("other", "b", contains="ok"),
        ]
    )
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    _committed(project)
    return project


def test_a_recorded_cost_of_nothing_is_costed_at_the_bases_prices(
    priced: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The answer grows to 10,000 tokens ($0.02 at the base's price), and its recording
    claims it cost nothing."""
    _rewrite(priced, "crit", lambda o: o.update(output_tokens=10_000, cost_usd=0.0))
    code, out = _check(capsys)
    assert code == 1, out
    assert read_results(priced.root / "c.json").case_map()["crit"].status == "fail"


def test_a_price_lowered_by_the_pull_request_costs_nothing_less(
    priced: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    _rewrite(priced, "crit", lambda o: o.update(output_tokens=10_000))
    _edit_config(priced, lambda d: d.update(pricing={"m": {"input": 0.0, "output": 0.0}}))
    code, out = _check(capsys)
    assert code == 1, out
    assert "loosens: pricing: m 1/1 → 0/0 per million" in out
    # Costed at the base's price, not the pull request's zero.
    assert "crit [critical]: max_cost_usd: recorded cost $0.0101, the limit is $0.001" in out
    assert read_results(priced.root / "c.json").case_map()["crit"].status == "fail"


BUDGET = """
def within(text, case, sample):
    return sample.cost_usd is not None and sample.cost_usd <= 0.001, "over budget"
"""


def test_a_base_custom_check_judges_the_cost_the_base_prices_give(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base's custom check reads the sample's cost. The built-in budget sees the cost
    at the base's prices; the check is handed the recording's own claim (cost_usd: 0)."""
    module = f"budget_{project.module}"
    project.write_text(f"{module}.py", BUDGET)
    project.write_system(USAGE_BOT)
    _edit_config(
        project,
        lambda d: d.update(
            system={**d["system"], "model": "m"}, pricing={"m": {"input": 1.0, "output": 1.0}}
        ),
    )
    project.write_cases(
        [
            case("crit", "a", check=f"{module}:within", fields_={"critical": True}),
            case("other", "b", contains="ok"),
        ]
    )
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    _committed(project)
    _rewrite(project, "crit", lambda o: o.update(output_tokens=10_000, cost_usd=0.0))
    code, out = _check(capsys, "--sandbox", "off")
    assert read_results(project.root / "c.json").case_map()["crit"].status == "fail", out
    assert code == 1, out


# --- tool schemas ---------------------------------------------------------------------


def test_tool_arguments_are_judged_by_the_bases_schema(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_system(TOOL_BOT)
    _edit_config(
        project,
        lambda d: d.update(
            system={**d["system"], "tools": [{"name": "issue_refund", "parameters": REFUND}]}
        ),
    )
    project.write_cases(
        [
            case("crit", "a", tool_args_valid=True, fields_={"critical": True}),
            case("other", "b", tool_called="issue_refund"),
        ]
    )
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    _committed(project)
    # The pull request's system now refunds 250 (a new module: this process imported the
    # old one), recorded honestly under its new config, whose schema allows it.
    generous = f"generous_{project.module}"
    project.write_text(f"{generous}.py", TOOL_BOT.replace('"amount": 20', '"amount": 250'))
    looser = {"type": "object", "properties": {"amount": {"type": "integer", "maximum": 1000}}}
    _edit_config(
        project,
        lambda d: d.update(
            system={
                **d["system"],
                "target": f"{generous}:answer",
                "tools": [{"name": "issue_refund", "parameters": looser}],
            }
        ),
    )
    assert main(["record", "--quiet", "--out", "rec.json"]) == 0
    code, out = _check(capsys)
    assert code == 1, out
    crit = read_results(project.root / "c.json").case_map()["crit"]
    assert crit.status == "fail" and "maximum of 100" in crit.reason, crit.reason

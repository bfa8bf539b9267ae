"""The score rules' keys under `gate:`: accepted shapes, and one line naming the key for a
bad value (exit 2)."""

from __future__ import annotations

from typing import Any

import pytest

from gate.cli import main
from gate.suite.config import GateConfig
from tests.conftest import Project


def test_the_shapes_the_keys_take() -> None:
    rule = GateConfig.model_validate(
        {
            "max_mean_score_drop": {"check": "similar", "drop": 0.05},
            "min_mean_score": {"similar": 0.8, "fields": 1},
            "min_pass_hat_k": {"k": 3, "min": 0.9},
        }
    )
    assert [(e.check, e.drop) for e in rule.max_mean_score_drop or []] == [("similar", 0.05)]
    assert rule.min_mean_score == {"similar": 0.8, "fields": 1}
    assert rule.min_pass_hat_k is not None and (rule.min_pass_hat_k.k, rule.min_pass_hat_k.min) == (
        3,
        0.9,
    )


def test_unset_score_keys_leave_the_written_rule_as_it_was() -> None:
    """A config written before the score rules keeps its hash, and so its baselines."""
    dumped = GateConfig().model_dump()
    assert not {"max_mean_score_drop", "min_mean_score", "min_pass_hat_k"} & set(dumped)


@pytest.mark.parametrize(
    ("gate", "named"),
    [
        ({"max_mean_score_drop": {"check": "similar", "drop": 1.5}}, "max_mean_score_drop"),
        ({"max_mean_score_drop": {"check": "similar"}}, "max_mean_score_drop"),
        (
            {"max_mean_score_drop": {"check": "similar", "drop": 0.1, "extra": 1}},
            "max_mean_score_drop",
        ),
        ({"max_mean_score_drop": []}, "max_mean_score_drop"),
        (
            {"max_mean_score_drop": [{"check": "a", "drop": 0.1}, {"check": "a", "drop": 0.2}]},
            "max_mean_score_drop",
        ),
        ({"min_mean_score": {"similar": "high"}}, "min_mean_score"),
        ({"min_mean_score": {"similar": 1.2}}, "min_mean_score"),
        ({"min_mean_score": {"similar": True}}, "min_mean_score"),
        ({"min_mean_score": 0.8}, "min_mean_score"),
        ({"min_pass_hat_k": {"k": 0, "min": 0.9}}, "min_pass_hat_k"),
        ({"min_pass_hat_k": {"k": 2.5, "min": 0.9}}, "min_pass_hat_k"),
        ({"min_pass_hat_k": {"k": 3, "min": -0.1}}, "min_pass_hat_k"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(
    project: Project, capsys: pytest.CaptureFixture[str], gate: dict[str, Any], named: str
) -> None:
    project.write_config(gate=gate)
    assert main(["validate"]) == 2
    err = capsys.readouterr().err.strip()
    first = err.splitlines()[0]
    assert f"gate.{named}" in first

"""The README is the manual: keep its documented defaults true to the code."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from gate import checks
from gate.suite.config import GateConfig

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_gate_defaults_match() -> None:
    block = re.search(r"```yaml\n(gate:\n.*?)```", README, re.S)
    assert block is not None
    assert GateConfig.model_validate(yaml.safe_load(block.group(1))["gate"]) == GateConfig()


def test_every_check_is_documented() -> None:
    table = README[README.index("## Checks") : README.index("## The run configuration")]
    documented = set(re.findall(r"^\| `(\w+)`(?: / `(\w+)`)?(?: / `(\w+)`)?", table, re.M))
    names = {name for row in documented for name in row if name}
    assert names == checks.KNOWN_KEYS

"""The manual (docs/): keep its documented defaults true to the code."""

from __future__ import annotations

import re

import yaml

from gate import checks
from gate.suite.config import GateConfig
from tests.docs_text import page


def test_gate_defaults_match() -> None:
    block = re.search(r"```yaml\n(gate:\n.*?)```", page("results"), re.S)
    assert block is not None
    assert GateConfig.model_validate(yaml.safe_load(block.group(1))["gate"]) == GateConfig()


def test_every_check_is_documented() -> None:
    table = page("checks")
    documented = set(re.findall(r"^\| `(\w+)`(?: / `(\w+)`)?(?: / `(\w+)`)?", table, re.M))
    names = {name for row in documented for name in row if name}
    assert names == checks.KNOWN_KEYS


def test_every_case_key_and_defaults_key_is_documented() -> None:
    from gate.suite.cases import Case
    from gate.suite.defaults import SuiteDefaults

    section = page("cases")
    undocumented = [
        name for name in Case.model_fields if not re.search(rf"(\s|`){name}(:|`)", section)
    ]
    assert undocumented == []
    defaults = section[section.index("### Suite defaults") :]
    block = re.search(r"```yaml\n(defaults:\n.*?)```", defaults, re.S)
    assert block is not None
    assert set(yaml.safe_load(block.group(1))["defaults"]) == set(SuiteDefaults.model_fields)

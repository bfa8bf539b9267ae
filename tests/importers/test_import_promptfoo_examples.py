"""`casegate import promptfoo` over real promptfoo configs nobody on this project wrote.

They are read where they are, in the shared folder beside the repository (../shared, in CI
as here; see its NOTICE.md); nothing is copied into the project. Each import must succeed,
validate, copy no endpoint and no value of a secret-named key, and count an endpoint as not
mapped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.importers.promptfoo import import_promptfoo
from gate.importers.promptfoo.sensitive import names_endpoint, names_secret, names_variable
from tests.importers.test_import_promptfoo import validate_all

EXAMPLES = Path(__file__).resolve().parents[3] / "shared" / "promptfoo_examples"
_URL = re.compile(r"(?i)^(?:https?|wss?)://")


def example_configs() -> list[Path]:
    assert EXAMPLES.is_dir(), (
        f"the real promptfoo examples are missing: expected them in {EXAMPLES} (the shared "
        "folder beside the repository, as in CI); this test reads them and must not be skipped"
    )
    found = sorted(EXAMPLES.glob("*/promptfooconfig*.yaml"))
    assert found, f"{EXAMPLES} holds no */promptfooconfig*.yaml"
    return found


def secret_values(node: Any) -> Iterator[str]:
    """Every string under a secret-named key of a document, as promptfoo's YAML holds it."""
    if isinstance(node, dict):
        for key, value in node.items():
            if names_secret(key) and not names_variable(key, value):
                yield from (v for v in strings(value) if len(v) >= 4)
            else:
                yield from secret_values(value)
    elif isinstance(node, list):
        for item in node:
            yield from secret_values(item)


def strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)


def provider_endpoints(document: dict[str, Any]) -> list[tuple[str, Any]]:
    """(`config.<key>`, its value) for every endpoint key in the providers' configs."""
    providers = document.get("providers") or []
    found = []
    for provider in providers if isinstance(providers, list) else [providers]:
        config = provider.get("config") if isinstance(provider, dict) else None
        for key, value in (config or {}).items():
            secret = names_secret(key) and not names_variable(key, value)
            if names_endpoint(key, value) and not secret:
                found.append((f"config.{key}", value))
    return found


def test_every_example_imports_validates_and_copies_no_endpoint_or_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = example_configs()
    endpoints_seen = 0
    for number, config in enumerate(configs):
        out = tmp_path / f"out-{number}"
        outcome = import_promptfoo(config, out)  # read where it is: the folder is not copied
        printed = capsys.readouterr()
        validate_all(out)
        files = {p.name: p.read_text() for p in out.rglob("*") if p.is_file()}
        document = yaml.safe_load(config.read_text())
        texts = [*files.values(), printed.out, printed.err, outcome.summary_line()]
        for secret in secret_values(document):
            assert not any(secret in text for text in texts), f"{config}: a secret value"
        for name, text in files.items():
            if name.startswith("casegate") and name.endswith(".yml"):
                loaded = yaml.safe_load(text)
                for section in ("system", "judge"):
                    part = {k: v for k, v in (loaded.get(section) or {}).items() if k != "message"}
                    assert "base_url" not in part, f"{config}: {name}"
                    urls = [s for s in strings(part) if _URL.match(s)]
                    assert not urls, f"{config}: {name} copies an endpoint: {urls}"
        migration = files["MIGRATION.md"]
        for endpoint, value in provider_endpoints(document):
            endpoints_seen += 1
            assert f"endpoint `{endpoint}`" in migration, f"{config}: {endpoint}"
            for name, text in files.items():
                for line in text.splitlines() if name.endswith(".yml") else []:
                    if str(value) in line:  # only ever on a commented-out line
                        assert line.lstrip().startswith("#"), f"{config}: {name}: {line}"
            assert "not copied and not mapped" in migration
            assert outcome.settings_mapped < outcome.settings, config
            assert f"{endpoint}" in printed.err, config
        assert 0 <= outcome.settings_mapped <= outcome.settings
        assert 0 <= outcome.assertions_mapped <= outcome.assertions
    # The examples include Azure's `apiHost`; were it gone, the endpoint checks prove nothing.
    assert endpoints_seen >= 1

"""Keys come from the environment only and are scrubbed from any text we keep."""

from __future__ import annotations

import pytest

from gate import secrets
from gate.errors import ConfigError


def test_read_key_names_the_variable_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CG_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="CG_TEST_KEY is not set"):
        secrets.read_key("CG_TEST_KEY", "system")
    monkeypatch.setenv("CG_TEST_KEY", "   ")
    with pytest.raises(ConfigError):
        secrets.read_key("CG_TEST_KEY", "system")


def test_keys_read_are_redacted_and_masked_under_actions(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CG_TEST_KEY", "sk-redact-me-123")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert secrets.read_key("CG_TEST_KEY", "system") == "sk-redact-me-123"
    assert secrets.redact("bad key sk-redact-me-123 given") == "bad key *** given"
    assert "::add-mask::sk-redact-me-123" in capsys.readouterr().out

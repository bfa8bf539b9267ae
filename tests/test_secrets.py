"""Keys come from the environment only and are scrubbed from any text we keep."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@pytest.fixture(autouse=True)
def _nothing_remembered() -> Iterator[None]:
    secrets.forget_all()
    yield
    secrets.forget_all()


# "*" is the mask's own character: a "secret" made of it cannot be told from the mask.
secret_text = st.text(min_size=1, max_size=40).filter(lambda s: "*" not in s)


@settings(max_examples=300, deadline=None)
@given(st.lists(secret_text, min_size=1, max_size=4), st.text(max_size=60), st.text(max_size=60))
def test_a_remembered_secret_never_survives(keys: list[str], before: str, after: str) -> None:
    secrets.forget_all()
    for key in keys:
        secrets.remember(key)
    text = before + "".join(f"{key}{before}" for key in keys) + after + keys[0] * 3
    redacted = secrets.redact(text)
    assert not [key for key in keys if key in redacted]


def test_credentials_in_urls_are_redacted_and_the_rest_kept() -> None:
    redact = secrets.redact
    assert (
        redact("GET http://user:pass@host:8080/v1/x failed")
        == "GET http://***@host:8080/v1/x failed"
    )
    assert redact("clone https://ghp_token@github.com") == "clone https://***@github.com"
    assert redact("https://a:p@ss@host/x?to=b@c") == "https://***@host/x?to=b@c"
    for kept in ("mail me@example.com", "https://host/users/@alice", "https://h/p?u=a@b"):
        assert redact(kept) == kept


url_part = st.text(
    st.characters(exclude_characters="/?#@", exclude_categories=["Z", "Cc", "Cs"]), min_size=1
).filter(lambda s: not any(c.isspace() for c in s))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["http", "https", "git+ssh", "redis"]), url_part, url_part)
def test_any_userinfo_is_redacted(scheme: str, user: str, password: str) -> None:
    url = f"{scheme}://{user}:{password}@api.example.com/v1?q=1"
    assert secrets.redact(f"error at {url}: 401") == (
        f"error at {scheme}://***@api.example.com/v1?q=1: 401"
    )


def test_with_nothing_to_redact_the_text_comes_back_as_it_was() -> None:
    text = "no key and no userinfo here"
    assert secrets.redact(text) is text
    secrets.remember("")  # an empty "secret" would mask between every character
    assert secrets.redact(text) is text


def test_add_mask_is_escaped_as_the_toolkit_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    secrets.remember("sk-100%\n::error::x")
    out = capsys.readouterr().out
    assert out == "::add-mask::sk-100%25%0A::error::x\n"
    secrets.remember("sk-100%\n::error::x")  # masked once
    assert capsys.readouterr().out == ""


def test_a_hidden_variable_leaves_proc_environ_but_not_os_environ() -> None:
    """What the supervised run could read of its parent: /proc/PPID/environ."""
    code = (
        "import os\nfrom gate.secrets import hide_from_proc\n"
        "print(hide_from_proc(['CASEGATE_HOLDOUT_KEY', 'ABSENT']))\n"
        "print(os.environ['CASEGATE_HOLDOUT_KEY'])\n"
        "shown = open('/proc/self/environ', 'rb').read()\n"
        "print(b'key-material-42' in shown, b'OTHER=kept' in shown)\n"
    )
    env = {**os.environ, "CASEGATE_HOLDOUT_KEY": "key-material-42", "OTHER": "kept"}
    finished = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert finished.stdout.splitlines() == [
        "['CASEGATE_HOLDOUT_KEY']",
        "key-material-42",
        "False True",
    ]

"""`casegate import promptfoo` copies no credential and no endpoint.

tests/data/promptfoo/leaks/ holds every shape at once: each secret value in it contains
the word LEAK (and nothing else does), each endpoint a host under example.net or
example.org. The small configs below take one shape each, so a failure names it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shutil
import string
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gate.cli
from gate.importers.promptfoo import import_promptfoo
from gate.suite.config import load_config
from tests.cli.test_cli import casegate
from tests.fakes.llm_server import FakeLLMServer
from tests.importers.test_import_promptfoo import cases_of, validate_all, wired, write_config

LEAKS = Path(__file__).parent.parent / "data" / "promptfoo" / "leaks"
THIRD_PARTY_HOSTS = (
    "llm-proxy.example.net",
    "claude-gateway.example.org",
    "chat.internal.example.org",
    "egress.example.net",
    "anthropic-relay.example.net",
    "grader-proxy.example.net",
)

Cli = Callable[..., int]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Cli:
    """`casegate …` in this process, with `import` wired as gate/cli/ wires it."""
    original = gate.cli.build_parser

    def build() -> argparse.ArgumentParser:
        return wired(original())

    monkeypatch.setattr(gate.cli, "build_parser", build)
    return lambda *argv: gate.cli.main([str(arg) for arg in argv])


def written(out: Path) -> dict[str, str]:
    return {
        path.relative_to(out).as_posix(): path.read_text()
        for path in sorted(out.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def leaks(cli: Cli, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """The leaks fixture imported through the command line: (out, stdout + stderr)."""
    shutil.copytree(LEAKS, tmp_path / "pf")
    out = tmp_path / "out"
    assert cli("import", "promptfoo", tmp_path / "pf" / "promptfooconfig.yaml", "--out", out) == 0
    printed = capsys.readouterr()
    return out, printed.out + printed.err


def test_the_fixture_holds_the_secrets_it_claims_to() -> None:
    # Else every "LEAK not in …" below would pass for nothing.
    text = (LEAKS / "promptfooconfig.yaml").read_text()
    assert len(set(re.findall(r"LEAK[\w-]*-00[0-9]{2}\b", text))) == 16


def test_no_secret_value_reaches_a_file_or_the_terminal(leaks: tuple[Path, str]) -> None:
    out, printed = leaks
    files = written(out)
    assert set(files) >= {"casegate.yml", "MIGRATION.md", "cases/leaky-gateway.yaml"}
    for name, text in files.items():
        assert "LEAK" not in text, name
    assert "LEAK" not in printed
    # What was dropped is said, by its key's name only.
    migration = files["MIGRATION.md"]
    for key in (
        "providers[0].config.apiKey",
        "providers[0].config.headers.Cookie",
        "providers[0].config.headers.X-API-Token",
        "providers[0].config.headers.apiToken",
        "providers[2].config.client_secret",
        "providers[3].config.tls.passphrase",
        "providers[3].config.headers.Authorization",
        "env.OPENAI_API_KEY",
        "defaultTest.options.provider.config.apiKey",
        "tests[1].assert[1].provider.config.apiKey",
        "tests[2].vars.api_token",
        "tests[2].metadata.session_cookie",
    ):
        assert f"`{key}`" in migration, key
    assert "the values of 16 key(s) whose names say they hold a secret were dropped" in migration
    assert "casegate: warning: dropped the values of 16 secret-named key(s)" in printed
    assert "providers[3].config.tls.passphrase" in printed


def test_an_unmapped_assertion_is_quoted_without_its_key(leaks: tuple[Path, str]) -> None:
    migration = (leaks[0] / "MIGRATION.md").read_text()
    quoted = next(line for line in migration.splitlines() if "no check for `factuality`" in line)
    assert '"apiKey": "***"' in quoted


def test_a_secret_named_var_is_dropped_and_needs_a_person(leaks: tuple[Path, str]) -> None:
    out = leaks[0]
    case = cases_of(out)["a-test-with-a-secret-named-var-and-metadata"]
    assert case["input"]["api_token"] == "***"
    assert case["tags"] == ["owner=support"]
    migration = (out / "MIGRATION.md").read_text()
    assert "**needs a person**: var `api_token`: its value was dropped" in migration


def test_endpoints_appear_only_commented_out(leaks: tuple[Path, str]) -> None:
    out = leaks[0]
    configs = {name: text for name, text in written(out).items() if name.endswith(".yml")}
    assert len(configs) == 4
    seen = set()
    for name, text in configs.items():
        for host in (*THIRD_PARTY_HOSTS, "api.openai.com", "PROXY_GATEWAY_KEY", "TEAM_OPENAI_KEY"):
            for line in text.splitlines():
                if host in line and "SET-A-KEY-VARIABLE-FOR-" not in line:
                    assert line.lstrip().startswith("#"), f"{name}: {line}"
                    seen.add(host)
        system = load_config(out / name).config.system.model_dump()
        assert "base_url" not in system, name
        assert system.get("api_key_env", "SET-A-KEY-VARIABLE-FOR-").startswith(
            "SET-A-KEY-VARIABLE-FOR-"
        ), name
    # Each endpoint is there, for the person who decides, on a commented-out line.
    assert seen >= {*THIRD_PARTY_HOSTS, "api.openai.com", "PROXY_GATEWAY_KEY", "TEAM_OPENAI_KEY"}
    proxy = configs["casegate.yml"]
    assert (
        "  # base_url: https://llm-proxy.example.net/v1  # promptfoo's config.apiBaseUrl" in proxy
    )
    assert "  # api_key_env: PROXY_GATEWAY_KEY  # promptfoo's config.apiKeyEnvar" in proxy
    own = configs["casegate.own-host.yml"]
    assert "  # base_url: https://api.openai.com/v1  # promptfoo's config.apiHost" in own
    stub = yaml.safe_load(configs["casegate.internal-api.yml"])["system"]
    assert set(stub["promptfoo_config"]) == {"method", "tls", "headers", "body"}  # no url, proxy
    assert (
        "  # promptfoo's config.proxy: http://egress.example.net:3128 ("
        in (configs["casegate.internal-api.yml"])
    )
    validate_all(out)


def test_migration_warns_and_the_mapped_count_excludes_endpoints(
    leaks: tuple[Path, str],
) -> None:
    out, printed = leaks
    migration = (out / "MIGRATION.md").read_text()
    for path, value in (
        ("config.apiBaseUrl", "https://llm-proxy.example.net/v1"),
        ("config.apiKeyEnvar", "PROXY_GATEWAY_KEY"),
        ("config.apiHost", "https://api.openai.com/v1"),
        ("config.apiKeyEnvar", "TEAM_OPENAI_KEY"),
        ("config.baseUrl", "https://claude-gateway.example.org"),
        ("env.ANTHROPIC_BASE_URL", "https://anthropic-relay.example.net"),
        ("config.url", "https://chat.internal.example.org/v1/answer"),
        ("config.proxy", "http://egress.example.net:3128"),
        ("config.apiBaseUrl", "https://grader-proxy.example.net/v1"),
    ):
        assert f"endpoint `{path}` (`{value}`) not copied and not mapped" in migration, value
        assert value in printed, value
    # Settings: proxy 5 (temperature mapped), own host 3 (max_tokens mapped), anthropic 2,
    # the stub 6, the grader's apiBaseUrl 1, env's ANTHROPIC_BASE_URL 1.
    assert "**2 of 18 provider settings**" in migration
    summary = next(line for line in printed.splitlines() if line.startswith("imported 3"))
    assert (
        "assertions and 1 of 3 (33%) tests mapped mechanically, 2 of 18 (11%) provider" in summary
    )


def test_a_third_party_host_never_falls_back_to_the_providers_key(
    leaks: tuple[Path, str], llm_server: FakeLLMServer
) -> None:
    out, printed = leaks
    migration = (out / "MIGRATION.md").read_text()
    for text in (migration, printed):
        assert "export it as OPENAI_API_KEY" not in text
        assert "export it as ANTHROPIC_API_KEY" not in text
    assert (
        "set `api_key_env` to a variable holding the key for llm-proxy.example.net, chosen "
        "deliberately (never OPENAI_API_KEY: it would send that key to llm-proxy.example.net)"
    ) in migration
    config = yaml.safe_load((out / "casegate.yml").read_text())
    assert config["system"]["api_key_env"] == "SET-A-KEY-VARIABLE-FOR-llm-proxy.example.net"
    assert config["judge"]["api_key_env"] == "SET-A-KEY-VARIABLE-FOR-grader-proxy.example.net"
    anthropic = yaml.safe_load((out / "casegate.anthropic-gateway.yml").read_text())
    # promptfoo prefers the config's baseUrl to the environment's ANTHROPIC_BASE_URL.
    assert anthropic["system"]["api_key_env"] == (
        "SET-A-KEY-VARIABLE-FOR-claude-gateway.example.org"
    )
    own = yaml.safe_load((out / "casegate.own-host.yml").read_text())
    assert "api_key_env" not in own["system"]  # OpenAI's own host: OPENAI_API_KEY is right

    # A person uncomments base_url and forgets api_key_env: nothing is sent, no key leaves.
    to_proxy = ["--set", f"system.base_url={llm_server.url}/v1", "--quiet"]
    refused = casegate("record", *to_proxy, "--out", "r.json", cwd=out)
    assert refused.returncode == 2
    assert "SET-A-KEY-VARIABLE-FOR-llm-proxy.example.net is not set" in refused.stderr
    assert llm_server.received == []


def test_the_stub_system_gets_no_endpoint_and_the_terminal_says_why(
    leaks: tuple[Path, str],
) -> None:
    out, printed = leaks
    module = (out / "promptfoo_systems.py").read_text()
    assert "secrets\nand endpoints left out" in module
    assert "casegate.internal-api.yml: endpoint(s) not copied and not mapped" in printed


# --- one shape at a time ----------------------------------------------------------------

SECRET_SHAPES = {
    "tls passphrase": """
  - id: https
    config:
      url: https://api.example.org/chat
      tls: {cert: file://c.pem, passphrase: MARKER-tls}
""",
    "cookie header": """
  - id: https
    config: {headers: {Cookie: 'sid=MARKER-cookie'}}
""",
    "x-api-token header": """
  - id: https
    config: {headers: {X-API-Token: MARKER-xapi}}
""",
    "apiToken header": """
  - id: https
    config: {headers: {apiToken: MARKER-apitoken}}
""",
    "a yaml alias of a key": """
  - id: vertex:gemini-2.0-flash
    config: {apiKey: &key MARKER-alias, label: *key}
""",
    "credentials in a url": """
  - id: openai:gpt-4.1-mini
    config: {apiBaseUrl: 'https://bot:MARKER-userinfo@proxy.example.net/v1?api_key=MARKER-query'}
""",
}


@pytest.mark.parametrize("shape", sorted(SECRET_SHAPES))
def test_each_secret_shape_is_dropped(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(
        tmp_path / "pf",
        "prompts: ['{{q}}']\nproviders:"
        + SECRET_SHAPES[shape]
        + "tests:\n  - vars: {q: hi}\n    assert: [{type: contains, value: x}]\n",
    )
    outcome = import_promptfoo(config, tmp_path / "out")
    printed = capsys.readouterr()
    for name, text in written(tmp_path / "out").items():
        assert "MARKER" not in text, name
    assert "MARKER" not in printed.out + printed.err + outcome.summary_line()


def test_an_unmapped_assertion_from_a_tests_file_is_quoted_without_its_key(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "pf"
    write_config(
        folder,
        """
- vars: {q: hi}
  assert:
    - {type: contains, value: x}
    - type: g-eval
      value: Is kind
      provider: {id: openai:gpt-4.1, config: {apiKey: MARKER-geval, organization: org-1}}
""",
        "tests.yaml",
    )
    config = write_config(
        folder, "prompts: ['{{q}}']\nproviders: [openai:gpt-4.1-mini]\ntests: [file://tests.yaml]\n"
    )
    import_promptfoo(config, tmp_path / "out")
    migration = (tmp_path / "out" / "MIGRATION.md").read_text()
    assert "casegate has no check for `g-eval`" in migration
    assert '"apiKey": "***", "organization": "org-1"' in migration
    assert "MARKER" not in migration
    assert "in `tests.yaml`, `[0].assert[1].provider.config.apiKey`" in migration


def test_a_schema_field_named_like_a_secret_is_a_schema_not_a_secret(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        """
prompts: ['{{q}}']
providers:
  - id: openai:gpt-4.1-mini
    config:
      tools:
        - type: function
          function:
            name: login
            parameters:
              type: object
              properties:
                password: {type: string, default: MARKER-default}
                api_key: {type: string}
tests:
  - vars: {q: hi}
    assert: [{type: contains, value: x}]
""",
    )
    import_promptfoo(config, tmp_path / "out")
    tools = yaml.safe_load((tmp_path / "out" / "casegate.yml").read_text())["system"]["tools"]
    assert tools[0]["parameters"]["properties"] == {
        "password": {"type": "string", "default": "***"},
        "api_key": {"type": "string"},
    }
    assert "MARKER" not in (tmp_path / "out" / "MIGRATION.md").read_text()


ENDPOINT_SHAPES: dict[str, tuple[str, str, str | None]] = {
    # shape: (provider entry, the endpoint as written in a comment, the placeholder or None)
    "apiKeyEnvar alone": (
        "{id: openai:gpt-4.1-mini, config: {apiKeyEnvar: MY_TEAM_KEY, temperature: 0}}",
        "# api_key_env: MY_TEAM_KEY  # promptfoo's config.apiKeyEnvar",
        None,
    ),
    "apiBaseUrl to a third party": (
        "{id: openai:gpt-4.1-mini, config: {apiBaseUrl: 'https://gw.example.net/v1', "
        "temperature: 0}}",
        "# base_url: https://gw.example.net/v1  # promptfoo's config.apiBaseUrl",
        "SET-A-KEY-VARIABLE-FOR-gw.example.net",
    ),
    "apiHost to a third party": (
        "{id: openai:gpt-4.1-mini, config: {apiHost: gw.example.net, temperature: 0}}",
        "# base_url: https://gw.example.net/v1  # promptfoo's config.apiHost",
        "SET-A-KEY-VARIABLE-FOR-gw.example.net",
    ),
    "base_url spelled in snake case": (
        "{id: anthropic:messages:claude-sonnet-4-5-20250929, config: {base_url: "
        "'https://gw.example.net', temperature: 0}}",
        "# base_url: https://gw.example.net  # promptfoo's config.base_url",
        "SET-A-KEY-VARIABLE-FOR-gw.example.net",
    ),
    "a proxy": (
        "{id: openai:gpt-4.1-mini, config: {proxy: 'http://gw.example.net:3128', temperature: 0}}",
        "# promptfoo's config.proxy: http://gw.example.net:3128 (casegate has no such setting)",
        "SET-A-KEY-VARIABLE-FOR-gw.example.net",
    ),
    "a base url from the environment": (
        "{id: openai:gpt-4.1-mini, config: {temperature: 0}, env: {OPENAI_BASE_URL: "
        "'https://gw.example.net/v1'}}",
        "# base_url: https://gw.example.net/v1  # promptfoo's env.OPENAI_BASE_URL",
        "SET-A-KEY-VARIABLE-FOR-gw.example.net",
    ),
    "a templated base url": (
        "{id: openai:gpt-4.1-mini, config: {apiBaseUrl: '{{ env.GW_URL }}', temperature: 0}}",
        "# base_url: '{{ env.GW_URL }}'  # promptfoo's config.apiBaseUrl",
        "SET-A-KEY-VARIABLE-FOR-the-host-promptfoo-named",
    ),
    "openai's own base url": (
        "{id: openai:gpt-4.1-mini, config: {apiBaseUrl: 'https://api.openai.com/v1', "
        "temperature: 0}}",
        "# base_url: https://api.openai.com/v1  # promptfoo's config.apiBaseUrl",
        None,
    ),
}


@pytest.mark.parametrize("shape", sorted(ENDPOINT_SHAPES))
def test_each_endpoint_shape_is_commented_out_warned_and_not_mapped(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry, comment, placeholder = ENDPOINT_SHAPES[shape]
    config = write_config(
        tmp_path / "pf",
        f"prompts: ['{{{{q}}}}']\nproviders:\n  - {entry}\n"
        "tests:\n  - vars: {q: hi}\n    assert: [{type: contains, value: x}]\n",
    )
    outcome = import_promptfoo(config, tmp_path / "out")
    err = capsys.readouterr().err
    text = (tmp_path / "out" / "casegate.yml").read_text()
    assert f"  {comment}\n" in text
    system = load_config(tmp_path / "out" / "casegate.yml").config.system.model_dump()
    assert "base_url" not in system
    assert system.get("api_key_env") == placeholder
    assert system["params"] == {"temperature": 0}
    # temperature is mapped; the endpoint (and a provider's own env option) is not.
    assert (outcome.settings_mapped, outcome.settings) == (1, 2)
    assert "1 of 2 (50%) provider settings" in outcome.summary_line()
    migration = (tmp_path / "out" / "MIGRATION.md").read_text()
    assert "**1 of 2 provider settings**" in migration
    assert "not copied and not mapped" in migration
    assert "casegate: warning: casegate.yml: endpoint(s) not copied and not mapped" in err
    if placeholder is not None:
        assert "promptfoo sent its requests to" in err
        assert "export it as OPENAI_API_KEY" not in migration
    validate_all(tmp_path / "out")


# --- hypothesis: whatever the nesting, a secret-named key's value goes nowhere -----------

SECRET_CORES = [
    "key",
    "apiKey",
    "api_key",
    "token",
    "secret",
    "password",
    "passphrase",
    "cookie",
    "authorization",
    "credential",
    "credentials",
    "passwd",
]


@st.composite
def secret_names(draw: st.DrawFn) -> str:
    """A key naming a secret as a word of it: `X-Api-Token`, `client_secret`, `myPassword`."""
    core = draw(st.sampled_from(SECRET_CORES))
    prefix = draw(st.sampled_from(["", "x", "client", "my", "proxy", "tls"]))
    separator = draw(st.sampled_from(["-", "_", ".", ""]))
    casing = draw(st.sampled_from([str.lower, str.upper, str.title, lambda s: s]))
    if prefix and not separator:
        core = core[0].upper() + core[1:]  # camelCase: myPassword
    name = f"{prefix}{separator}{core}" if prefix else core
    return name if separator == "" and prefix else casing(name)


plain_names = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8)
markers = st.text(alphabet="0123456789abcdef", min_size=10, max_size=16).map(lambda s: f"MK{s}")


@st.composite
def configs(draw: st.DrawFn, depth: int = 0) -> tuple[dict[str, Any], list[str]]:
    """A nested provider config and the marker values it hides under secret-named keys."""
    config: dict[str, Any] = {}
    hidden: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        kind = draw(
            st.sampled_from(
                ["secret", "plain", "nested", "list"] if depth < 3 else ["secret", "plain"]
            )
        )
        if kind == "secret":
            marker = draw(markers)
            hidden.append(marker)
            value: Any = draw(
                st.sampled_from(
                    [marker, f"Bearer {marker}", {"value": marker}, [marker], {"inner": [marker]}]
                )
            )
            config[draw(secret_names())] = value
        elif kind == "plain":
            config[draw(plain_names)] = draw(st.one_of(st.integers(0, 9), plain_names))
        elif kind == "nested":
            inner, found = draw(configs(depth + 1))
            config[draw(plain_names)] = inner
            hidden += found
        else:
            inner, found = draw(configs(depth + 1))
            config[draw(plain_names)] = [inner]
            hidden += found
    return config, hidden


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="casegate-pf-secrets-") as folder:
        yield Path(folder)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    provider=st.sampled_from(
        ["openai:gpt-4.1-mini", "anthropic:messages:claude-sonnet-4-5-20250929", "https"]
    ),
    drawn=configs(),
    grader=configs(),
)
def test_a_secret_named_keys_value_never_appears_in_any_output(
    provider: str,
    drawn: tuple[dict[str, Any], list[str]],
    grader: tuple[dict[str, Any], list[str]],
) -> None:
    config, hidden = drawn
    grader_config, grader_hidden = grader
    document = {
        "prompts": ["Q: {{ q }}"],
        "providers": [{"id": provider, "config": config}],
        "tests": [
            {
                "vars": {"q": "fixed"},
                "options": {"provider": {"id": "openai:gpt-4.1", "config": grader_config}},
                "assert": [
                    {"type": "contains", "value": "x"},
                    {"type": "llm-rubric", "value": "kind"},
                    {"type": "factuality", "value": "y", "provider": {"config": grader_config}},
                ],
            }
        ],
    }
    with scratch() as folder:
        path = write_config(folder / "pf", yaml.safe_dump(document))
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            outcome = import_promptfoo(path, folder / "out")
        outputs = [*written(folder / "out").values(), stdout.getvalue(), stderr.getvalue()]
        outputs.append(outcome.summary_line())
        for marker in [*hidden, *grader_hidden]:
            for text in outputs:
                assert marker not in text

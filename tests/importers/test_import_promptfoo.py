"""`casegate import promptfoo`: promptfoo configs in, a casegate suite that validates and
replays out, with MIGRATION.md saying what needs a person.

The configs under tests/data/promptfoo/ were written for these tests from promptfoo's
documentation. Each is imported into a temporary folder, validated with `casegate validate`,
recorded against a loopback OpenAI server and replayed; the verdicts are checked by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gate.cli
from gate.errors import CasegateError
from gate.importers import add_parser, cmd_import
from gate.importers.promptfoo import PROMPTFOO_VERSION, import_promptfoo, js_string, split_values
from gate.suite.cases import load_cases, resolve_case_paths
from gate.suite.config import load_config
from gate.systems.templates import check_templates, render
from tests.cli.test_cli import casegate
from tests.fakes.llm_server import FakeLLMServer, Received, Reply
from tests.fakes.openai_services import FakeOpenAIServices

DATA = Path(__file__).parent.parent / "data" / "promptfoo"
SEMANTICS = f"promptfoo {PROMPTFOO_VERSION}"

Cli = Callable[..., int]


def wired(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The parser with `import` added (once gate/cli/ adds it itself, as it is)."""
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if "import" not in commands.choices:
        add_parser(commands)
    return parser


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Cli:
    """`casegate …` in this process, with `import` wired the way gate/cli/ will wire it."""
    original = gate.cli.build_parser

    def build() -> argparse.ArgumentParser:
        return wired(original())

    monkeypatch.setattr(gate.cli, "build_parser", build)
    return lambda *argv: gate.cli.main([str(arg) for arg in argv])


def copied(name: str, tmp_path: Path) -> Path:
    """A fixture config copied into the temporary folder (so nothing writes into tests/)."""
    target = tmp_path / name
    shutil.copytree(DATA / name, target)
    return target / "promptfooconfig.yaml"


def validate_all(out: Path) -> None:
    for config in sorted(out.glob("casegate*.yml")):
        finished = casegate("validate", "-c", config.name, cwd=out)
        assert finished.returncode == 0, f"{config.name}: {finished.stderr}"
        assert finished.stdout.startswith("ok: ")


def record_and_replay(
    out: Path,
    server: FakeLLMServer,
    *,
    judge: bool = False,
    services: FakeOpenAIServices | None = None,
) -> dict[str, Any]:
    """Record through the loopback servers, then replay with the config as imported."""
    sets = ["--set", f"system.base_url={server.url}/v1"]
    if judge:
        sets += ["--set", f"judge.base_url={server.url}/v1"]
    if services is not None:
        for pin in ("embeddings", "moderation"):
            sets += ["--set", f"{pin}.base_url={services.url}/v1"]
    recorded = casegate("record", *sets, "--quiet", "--out", "recorded.json", cwd=out)
    assert recorded.returncode == 0, recorded.stderr
    replayed = casegate("run", "--quiet", "--out", "replayed.json", cwd=out)
    assert replayed.returncode == 0, replayed.stderr
    results = json.loads((out / "replayed.json").read_text())
    assert results["mode"] == "replay"
    return {case["id"]: case for case in results["cases"]}


def scripted(answers: dict[str, str], verdicts: dict[str, str] | None = None) -> Any:
    """A reply function: the answer whose key the user turn contains; judge verdicts by rubric."""

    def reply(received: Received) -> Reply:
        text = received.last_user_text
        if "<rubric>" in text:
            rubric = text.split("<rubric>")[1].split("</rubric>")[0]
            verdict = next((v for k, v in (verdicts or {}).items() if k in rubric), "PASS: ok")
            return Reply(text=verdict)
        return Reply(text=next(answer for key, answer in answers.items() if key in text))

    return reply


def cases_of(out: Path) -> dict[str, dict[str, Any]]:
    config = load_config(out / "casegate.yml")
    files, problems = resolve_case_paths(config.config.cases, config.root)
    assert not problems
    # Loaded as casegate loads them: the config's `defaults:` merged under each case.
    loaded = load_cases(files, defaults=config.config.defaults)
    return {case.id: case.model_dump() for case in loaded}


# --- the support suite: text assertions, defaultTest, two providers ---------------------

SUPPORT_ANSWERS = {
    "return a blender": "You have 30 Days to return it for a full refund.",
    "Where is my order": "Use the tracking link and your order number.",
    "arrived broken": "We are sorry, truly. Send us a photo and we will ship a replacement.",
    "cancel my order": "cancel_order.",
    "order 12345": "Hello. Order 12345 will arrive by Friday.",
    "ship to France": "Yes, we ship to France.",
    "ship to Japan": "Sorry, not to Japan yet.",
    "late parcel": "As an AI, I can offer a refund, an exchange or store credit.",
}


def test_support_suite_imports_validates_and_replays_with_the_verdicts_promptfoo_gives(
    cli: Cli,
    tmp_path: Path,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    assert cli("import", "promptfoo", copied("support", tmp_path), "--out", out) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].startswith("imported 7 promptfoo test(s) as 8 case(s)")
    assert f"following {SEMANTICS}" in printed[-1]
    assert "21 of 21 (100%) assertions and 7 of 7 (100%) tests mapped mechanically" in printed[-1]
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == [
        "MIGRATION.md",
        "casegate.anthropic-messages-claude-sonnet-4-5-20250929.yml",
        "casegate.yml",
        "cases/support-bot.yaml",
        "prompts/support-bot.md",
    ]
    validate_all(out)

    config = yaml.safe_load((out / "casegate.yml").read_text())
    assert config["system"] == {
        "name": "gpt-mini",
        "provider": "openai",
        "api": "chat",
        "model": "gpt-4.1-mini-2025-04-14",
        "params": {"temperature": 0, "max_tokens": 300},
        "prompt_file": "prompts/support-bot.md",
        "message": "Shop: {{shop}}\n{{question}}",
    }
    other = yaml.safe_load(
        (out / "casegate.anthropic-messages-claude-sonnet-4-5-20250929.yml").read_text()
    )
    assert other["system"]["provider"] == "anthropic"
    assert other["cases"] == config["cases"] == "cases/support-bot.yaml"
    assert (out / "prompts/support-bot.md").read_text().startswith("You answer customer")
    for path in out.rglob("*"):  # the promptfoo apiKey is never copied anywhere
        assert path.is_dir() or "sk-fixture" not in path.read_text()

    cases = cases_of(out)
    assert cases["refund-window"]["tags"] == ["area=returns", "policy"]
    assert cases["refund-window"]["note"] == "Refund window"
    assert cases["shipping-abroad-1"]["input"]["question"] == "Do you ship to France?"
    assert cases["shipping-abroad-2"]["input"]["country"] == "Japan"
    assert cases["apology-and-next-steps"]["expect"]["contains_any"] == [
        "sorry, truly",
        "apologize",
    ]

    llm_server.reply = scripted(SUPPORT_ANSWERS)
    verdicts = record_and_replay(out, llm_server)
    assert {case: result["status"] for case, result in verdicts.items()} == {
        "refund-window": "pass",  # icontains "30 days" on "30 Days"
        "tracking-link-case-by-case": "fail",
        "apology-and-next-steps": "pass",
        "exact-intent-label": "fail",
        "greeting-and-order-number": "fail",
        "shipping-abroad-1": "pass",
        "shipping-abroad-2": "fail",
        "not-every-remedy-at-once": "fail",
    }
    # contains is case-sensitive in promptfoo; icontains beside it became (?i:…) and passed.
    assert verdicts["tracking-link-case-by-case"]["reason"] == 'contains: missing "Tracking"'
    assert verdicts["exact-intent-label"]["reason"] == (
        'equals: expected "cancel_order", got "cancel_order."'
    )
    assert verdicts["greeting-and-order-number"]["reason"] == (
        'not_regex: matches forbidden /will arrive (by|on)/: "will arrive by"'
    )
    assert verdicts["shipping-abroad-2"]["reason"] == 'contains_any: none of "yes", "we ship"'
    remedy = verdicts["not-every-remedy-at-once"]["reason"]
    assert 'not_contains: contains forbidden "as an AI"' in remedy  # from defaultTest
    assert "not_regex: matches forbidden" in remedy  # refund, exchange and credit all appear

    migration = (out / "MIGRATION.md").read_text()
    assert f"following the semantics of **{SEMANTICS}**" in migration
    assert "pull request #8041" in migration
    assert "`casegate.yml` holds the first" in migration
    assert "config `apiKey` not copied" in migration
    assert "config `verbosity` not carried over" in migration
    assert "written into every case" in migration  # defaultTest
    assert "**needs a person**" not in migration


# --- the grading suite: JSON, words, the judge, stubs, what casegate lacks ---------------

TRIAGE_ANSWERS = {
    "Checkout is down": '{"severity": "high", "summary": "Checkout down"}',
    "deleted my recipes": '{"severity": "medium", "summary": "We are sorry about your recipes"}',
    "Refund not received": '{"severity": "high", "summary": "Refund late"}',
    "site is slow": '{"severity": "low", "summary": "Slow site"}',
    "Coupon code": '{"severity": "low", "summary": "Coupon fails"}',
    "Password reset": '{"severity": "medium", "summary": "No reset email"}',
    "Typo on the pricing": '{"severity": "low", "summary": "Pricing typo"}',
    "Charged twice": '{"severity": "high", "summary": "Duplicate charge, for Billing"}',
}


def test_grading_suite_maps_json_words_and_judge_and_stubs_the_code(
    cli: Cli, tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    config = copied("grading", tmp_path)
    out = tmp_path / "out"
    assert cli("import", "promptfoo", config, "--out", out) == 0
    assert not list(tmp_path.rglob("RAN")), "the python assertion's file was executed"
    validate_all(out)

    cases = cases_of(out)
    assert cases["severity-as-json"]["expect"] == {
        "json_schema": json.loads((config.parent / "schemas/triage.json").read_text()),
        "min_words": 3,
        "max_words": 60,
    }
    assert cases["a-set-of-assertions"]["expect"] == {
        "contains": '"severity"',
        "not_contains": "critical",
    }
    # `{{expected}}` in assertion values is filled from the test's vars, as promptfoo does.
    assert cases["rubric-with-the-expected-value"]["expect"]["judge"] == {
        "rubric": "Names the billing team as the owner"
    }
    pin = yaml.safe_load((out / "casegate.yml").read_text())["judge"]
    assert pin == {
        "provider": "openai",
        "model": "gpt-4.1-mini-2025-04-14",  # promptfoo's grader, from defaultTest.options
        "prompt_version": 1,
        "temperature": 0,
    }
    module = (out / "promptfoo_checks.py").read_text()
    assert "# JSON.parse(output).severity === 'high'" in module
    assert "# file://checks/severity.py" in module
    assert "`output` is the output after `transform: JSON.parse(output).severity`" in module

    llm_server.reply = scripted(TRIAGE_ANSWERS, {"billing team": "FAIL: no team is named"})
    with FakeOpenAIServices() as services:
        verdicts = record_and_replay(out, llm_server, judge=True, services=services)
        assert [call.body["model"] for call in services.calls("/v1/embeddings")] == [
            "text-embedding-3-large"
        ]
        assert [call.body["model"] for call in services.calls("/v1/moderations")] == [
            "omni-moderation-latest"
        ]
    measured = verdicts["checks-casegate-has-planned"]["checks"]
    assert {check["check"] for check in measured} >= {"similar", "levenshtein", "moderation"}
    assert verdicts["severity-as-json"]["status"] == "pass"
    assert verdicts["calm-tone"]["status"] == "pass"  # the judge said PASS
    assert verdicts["rubric-with-the-expected-value"]["reason"] == "judge: no team is named"
    stub = verdicts["custom-code-stays-a-stub"]
    assert stub["status"] == "fail"
    assert stub["reason"] == (
        "check: not migrated: javascript assertion of promptfoo test 3 (Custom code stays a "
        "stub); port check_custom_code_stays_a_stub_1"
    )

    migration = (out / "MIGRATION.md").read_text()
    for needed in (
        "→ `similar` (method embedding, min 0.75; `embeddings:` pins promptfoo's default model "
        "text-embedding-3-large)",
        "→ `levenshtein` (max 5 edits)",
        "promptfoo fails when the API flags the output, casegate when a score passes the limit",
        "the provider declares no `tools` in its config, so there is no schema",
        "`threshold: 0.5`: promptfoo passes the test when the weighted score",
        "`assert-set` with `threshold: 0.5`",
        "promptfoo judges the output after `transform: JSON.parse(output).severity`",
        "the judge is pinned to promptfoo's grader `openai:chat:gpt-4.1-mini-2025-04-14`",
    ):
        assert needed in migration, needed
    assert "`latency` below 2000 milliseconds → `max_latency_ms`" in migration
    assert "with `weight: 0` promptfoo never fails a test on it" in migration
    assert "**17 of 24 assertions and 3 of 8 tests were mapped mechanically**" in migration


# --- a provider without an adapter, prompts from files, code that never runs ------------


def test_other_suite_stubs_the_provider_ports_templates_and_runs_no_code(
    cli: Cli, tmp_path: Path
) -> None:
    config = copied("other", tmp_path)
    out = tmp_path / "out"
    assert cli("import", "promptfoo", config, "--out", out) == 0
    assert not list(tmp_path.rglob("RAN")), "a prompt function or a var script was executed"
    validate_all(out)
    configs = {p.name: yaml.safe_load(p.read_text()) for p in out.glob("casegate*.yml")}
    assert len(configs) == 6  # one provider x two prompts from prompts.txt and three inline
    system = configs["casegate.yml"]["system"]
    assert system["provider"] == "python"
    assert system["target"] == "promptfoo_systems:not_migrated"
    assert system["promptfoo_config"] == {"temperature": 0.3, "apiKey": "***"}
    assert system["message"] == "Rephrase this in pirate talk: {{words}}"
    messages = {name: c["system"]["message"] for name, c in configs.items()}
    assert "Data: {{ payload | tojson }}" in messages.values()
    fancy = next(m for m in messages.values() if "Fancy" in m)
    # A filter Jinja2 lacks: the template is sent as written, braces and all.
    assert render(fancy, "c", {}) == "Fancy: {{ words | someCustomFilter }}"

    cases = cases_of(out)
    assert cases["yes-stays-text"]["input"] == {
        "words": "Yes",  # YAML 1.2 (js-yaml), as promptfoo reads it; YAML 1.1 would say True
        "flag": "on",
        "zip": 777,
        "payload": {"a": 1},
    }
    assert cases["vars-from-files"]["input"] == {
        "words": "Ahoy there, matey",  # a .txt var is its text, trimmed
        "payload": '{"ship": "Black Pearl", "crew": 12}',  # a .yaml var is its JSON
    }
    assert "computed-var" not in cases
    migration = (out / "MIGRATION.md").read_text()
    assert "var `words` comes from file://vars/compute.py, which casegate cannot read" in migration
    assert "has no casegate adapter" in migration
    assert "nunjucks `dump` became Jinja2 `tojson`" in migration
    assert "uses nunjucks filters or tests Jinja2 lacks (someCustomFilter)" in migration
    assert "is code (file://make_prompt.py:build); casegate never runs it" in migration

    # The stub system fails every case, loudly, until a person writes it.
    live = casegate("run", "--mode", "live", "--quiet", "--out", "live.json", cwd=out)
    assert live.returncode == 0, live.stderr
    results = json.loads((out / "live.json").read_text())
    assert {case["status"] for case in results["cases"]} == {"error"}
    assert (
        "not migrated: promptfoo provider 'vertex:gemini-2.0-flash'"
        in (results["cases"][0]["reason"])
    )


# --- small configs written in the test ------------------------------------------------


def write_config(folder: Path, text: str, name: str = "promptfooconfig.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def run_import(config: Path, out: Path) -> tuple[Any, dict[str, dict[str, Any]], str]:
    outcome = import_promptfoo(config, out)
    return outcome, cases_of(out), (out / "MIGRATION.md").read_text()


def test_case_sensitivity_uses_normalize_only_when_every_text_check_ignores_case(
    tmp_path: Path,
) -> None:
    config = write_config(
        tmp_path / "pf",
        """
prompts: ['{{q}}']
providers: [openai:gpt-4.1-mini]
tests:
  - description: all insensitive
    vars: {q: a}
    assert:
      - {type: icontains, value: Refund}
      - {type: not-icontains, value: Sorry}
      - {type: icontains-all, value: [Photo, Receipt]}
  - description: mixed
    vars: {q: b}
    assert:
      - {type: icontains, value: Refund}
      - {type: contains, value: EUR}
      - {type: icontains-any, value: [a.b, c]}
      - {type: not-icontains-any, value: [Nope]}
""",
    )
    _, cases, migration = run_import(config, tmp_path / "out")
    assert cases["all-insensitive"]["expect"] == {
        "normalize": ["lower"],
        "contains": ["Refund", "Photo", "Receipt"],
        "not_contains": "Sorry",
    }
    assert cases["mixed"]["expect"] == {
        "contains": "EUR",
        "regex": r"^(?=[\s\S]*?(?:(?i:Refund)))(?=[\s\S]*?(?:(?i:a\.b|c)))",
        "not_regex": "(?i:Nope)",
    }
    assert "case-insensitive assertions became `(?i:…)` patterns" in migration


def test_contains_any_string_values_follow_promptfoos_current_parser(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        """
prompts: ['{{q}}']
providers: [openai:gpt-4.1-mini]
tests:
  - description: quoted
    vars: {q: a}
    assert:
      - type: contains-all
        value: '"1,000", in stock'
  - description: unterminated
    vars: {q: b}
    assert:
      - {type: contains-any, value: '"open, quote'}
      - {type: contains, value: x}
""",
    )
    _, cases, migration = run_import(config, tmp_path / "out")
    assert cases["quoted"]["expect"] == {"contains": ["1,000", "in stock"]}
    assert "promptfoo releases before March 2026 read it as" in migration
    assert "promptfoo refuses this value (a quoted field is not closed)" in migration


def test_split_values_matches_promptfoos_parse_comma_separated_values() -> None:
    assert split_values("a, b ,c") == ["a", "b", "c"]
    assert split_values(",,a,,  ,b,") == ["a", "b"]  # empty fields are dropped
    assert split_values('"x, y", z') == ["x, y", "z"]
    assert split_values(r'"say \"hi\"", "a""b", "back\\slash"') == [
        'say "hi"',
        'a"b',
        "back\\slash",
    ]
    assert split_values("") == []
    with pytest.raises(ValueError, match="not closed"):
        split_values('"open')
    with pytest.raises(ValueError, match="followed by something other than a comma"):
        split_values('"a" b')


def test_numbers_are_compared_as_javascript_prints_them() -> None:
    assert [js_string(v) for v in (24.01, 1.0, -3.625, 1e21, 1e-7, 0.000001, 123456789012)] == [
        "24.01",
        "1",
        "-3.625",
        "1e+21",
        "1e-7",
        "0.000001",
        "123456789012",
    ]
    assert [js_string(v) for v in (True, None, [1, None, "a"], {"a": 1}, float("nan"))] == [
        "true",
        "null",
        "1,,a",
        "[object Object]",
        "NaN",
    ]


def test_equals_starts_with_word_count_and_inverses(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        """
prompts: ['{{q}}']
providers: [openai:gpt-4.1-mini]
tests:
  - vars: {q: a}
    assert:
      - {type: equals, value: 42}
      - {type: not-equals, value: 'no.'}
      - {type: not-starts-with, value: 'Sure'}
      - {type: word-count, value: 3}
  - vars: {q: b}
    assert:
      - {type: not-equals, value: {a: 1}}
      - {type: not-is-json}
      - {type: contains, value: ''}
""",
    )
    outcome, cases, migration = run_import(config, tmp_path / "out")
    assert cases["test-1"]["expect"] == {
        "equals": "42",
        "not_regex": r"(?:^Sure)|(?:\Ano\.\Z)",
        "min_words": 3,
        "max_words": 3,
    }
    # Nothing of test 2 maps: it becomes a draft case, failing until a person gives it a check.
    assert cases["test-2"]["expect"] == {"check": "promptfoo_checks:needs_a_check"}
    assert cases["test-2"]["tags"] == ["draft"]
    assert "`equals` with a JSON value (deep equality) has no casegate check" in migration
    assert "casegate has no check for `not-is-json`" in migration
    assert "`contains` takes a non-empty string or a number; promptfoo refuses this" in migration
    assert "a draft case: no assertion became a check" in migration
    assert outcome.drafts == 1
    assert (outcome.tests, outcome.tests_mapped) == (2, 1)
    assert (outcome.assertions, outcome.assertions_mapped) == (7, 4)


def test_json_in_prose_budgets_finish_reason_and_tool_calls_map_to_checks(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        """
prompts: ['{{q}}']
providers:
  - id: openai:gpt-4.1-mini
    config:
      tools:
        - type: function
          function: {name: lookup, parameters: {type: object, properties: {id: {type: string}}}}
tests:
  - vars: {q: a}
    assert:
      - {type: starts-with, value: 'Dear'}
      - {type: starts-with, value: 'Dear customer'}
      - {type: contains-json, value: {type: object, required: [severity]}}
      - {type: latency, threshold: 2000}
      - {type: latency, threshold: 1500}
      - {type: cost, threshold: 0.002}
      - {type: finish-reason, value: stop}
      - {type: is-valid-openai-tools-call}
  - vars: {q: b}
    assert:
      - {type: icontains, value: 'hello'}
      - {type: starts-with, value: 'Hi'}
      - {type: is-json}
      - {type: contains-json}
      - {type: latency}
""",
    )
    _, cases, migration = run_import(config, tmp_path / "out")
    assert cases["test-1"]["expect"] == {
        "regex": r"^Dear\ customer",
        "starts_with": "Dear",
        "json_schema": {"type": "object", "required": ["severity"]},
        "extract_json": True,
        "max_latency_ms": 1500,
        "max_cost_usd": 0.002,
        "finish_reason": "stop",
        "tool_args_valid": True,
    }
    # `normalize: [lower]` would make a starts_with case-insensitive: it stays a pattern.
    assert cases["test-2"]["expect"] == {
        "normalize": ["lower"],
        "contains": "hello",
        "regex": "^Hi",
        "json": True,
    }
    assert "casegate reads the first JSON object or array (in a ``` fence first)" in migration
    assert "the test has both `is-json` and `contains-json`" in migration
    assert "`latency` needs a `threshold` in milliseconds (a number ≥ 0)" in migration


def test_a_var_the_template_reads_but_the_test_lacks_renders_as_nothing(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        """
prompts: ['{{greeting}} {{q}}']
providers: [openai:gpt-4.1-mini]
tests:
  - vars: {q: hi}
    assert: [{type: contains, value: x}]
""",
    )
    _, cases, migration = run_import(config, tmp_path / "out")
    assert cases["test-1"]["input"] == {"q": "hi", "greeting": ""}
    assert "greeting set to ''" in migration


def test_prompt_filters_chat_prompts_tools_repeat_and_tests_from_a_file(tmp_path: Path) -> None:
    folder = tmp_path / "pf"
    write_config(
        folder,
        """
- role: system
  content: You track orders.
- role: user
  content: Hello
- role: assistant
  content: Hi! Your order number?
- role: user
  content: "{{q}}"
""",
        "conversation.yaml",
    )
    write_config(
        folder,
        """
- description: From a file
  vars: {q: where is it, name: Bo}
  assert:
    - {type: icontains, value: ORDER}
""",
        "more-tests.yaml",
    )
    config = write_config(
        folder,
        """
prompts:
  - id: file://conversation.yaml
    label: multi
  - raw: '[{"role": "system", "content": "You help {{name}}."}, {"role": "user", "content": "{{q}}"}]'
    label: sysvars
providers:
  - id: openai:responses:gpt-4.1-2025-04-14
    prompts: [multi]
    config:
      max_output_tokens: 100
      tool_choice: auto
      tools:
        - type: function
          function: {name: lookup, description: Find an order, parameters: {type: object}}
        - type: web_search_preview
  - id: anthropic:claude-3-5-haiku-20241022
    prompts: [sysvars]
    config:
      tools:
        - name: lookup
          input_schema: {type: object, properties: {order: {type: string}}}
evaluateOptions:
  repeat: 3
scenarios: [{config: [{vars: {q: a}}], tests: [{vars: {q: b}}]}]
defaultTest:
  assert:
    - {type: contains, value: order}
tests:
  - file://more-tests.yaml
  - description: Own assertions only
    options: {disableDefaultAsserts: true}
    vars: {q: hi, name: Ann}
    assert:
      - {type: llm-rubric, value: Is polite}
      - {type: llm-rubric, value: Is brief}
      - {type: regex, value: '(a)\\1'}
      - {type: regex, value: '(b)\\1'}
      - {type: regex, value: '[^]'}
      - {type: regex, value: '(?<year>\\d{4})'}
""",
    )
    outcome, cases, migration = run_import(config, tmp_path / "out")
    out = tmp_path / "out"
    first = yaml.safe_load((out / "casegate.yml").read_text())
    assert first["samples"] == 3
    assert first["system"] == {
        "name": "openai-responses-gpt-4.1-2025-04-14",
        "provider": "openai",
        "api": "responses",
        "model": "gpt-4.1-2025-04-14",
        "params": {"max_output_tokens": 100},
        "tools": [
            {"name": "lookup", "description": "Find an order", "parameters": {"type": "object"}}
        ],
        "prompt_file": "prompts/pf.md",
        "message": "{{q}}",
    }
    second = yaml.safe_load(
        (out / "casegate.anthropic-claude-3-5-haiku-20241022.sysvars.yml").read_text()
    )
    assert second["system"]["tools"] == [
        {
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"order": {"type": "string"}}},
        }
    ]
    assert second["system"]["prompt_file"] == "prompts/pf-2.md"
    assert (out / "prompts/pf-2.md").read_text() == "You help {{name}}.\n"
    assert cases["from-a-file"]["expect"] == {"contains": "order", "regex": "(?i:ORDER)"}
    assert cases["from-a-file"]["provenance"] == "promptfoo promptfooconfig.yaml, test 1"
    own = cases["own-assertions-only"]["expect"]
    assert own["judge"] == {"rubric": "All of these hold:\n1. Is polite\n2. Is brief"}
    assert own["regex"] == r"^(?=[\s\S]*?(?:(a)\1))(?=[\s\S]*?(?:(?<year>\d{4})))"
    assert "contains" not in own  # disableDefaultAsserts
    for needed in (
        "is a conversation of 3 turns",
        "its system turn uses template variables",
        "config `tool_choice` not carried over",
        '`{"type": "web_search_preview"}` not carried over',
        "`scenarios`: scenarios (vars × tests) are not imported",
        "`repeat: 3` became `samples: 3`",
        "its numbered back-reference would point elsewhere",
        "the pattern is not valid in Python's `re` syntax",
        "2 llm-rubric assertions became one judge rubric",
        "the provider declares tools",
    ):
        assert needed in migration, needed
    assert (outcome.tests, outcome.tests_mapped, outcome.cases) == (2, 1, 2)


def test_a_bare_prompt_path_is_a_file_and_a_provider_transform_needs_a_person(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "pf"
    write_config(folder, "Answer briefly: {{q}}\n", "prompt.txt")
    config = write_config(
        folder,
        """
prompts: [prompt.txt, Summarize the README.md]
providers:
  - id: openai:gpt-4.1-mini
    transform: output.trim()
tests:
  - vars: {q: hi}
    assert: [{type: contains, value: x}]
""",
    )
    _, _, migration = run_import(config, tmp_path / "out")
    messages = [
        yaml.safe_load(path.read_text())["system"]["message"]
        for path in sorted((tmp_path / "out").glob("casegate*.yml"))
    ]
    assert sorted(messages) == ["Answer briefly: {{q}}", "Summarize the README.md"]
    assert 'provider `transform` `"output.trim()"`: promptfoo rewrites every output' in migration


# --- refusals: overwrite, malformed files, files outside, no traceback ------------------


def test_refuses_to_overwrite_and_writes_nothing(
    cli: Cli, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "casegate.yml").write_text("mine\n")
    assert cli("import", "promptfoo", copied("support", tmp_path), "--out", out) == 2
    err = capsys.readouterr().err
    assert f"casegate: {out / 'casegate.yml'}: already exists" in err
    assert [p.name for p in out.iterdir()] == ["casegate.yml"]
    assert (out / "casegate.yml").read_text() == "mine\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("prompts: [\n  - 'a'\n  - [\n", "promptfooconfig.yaml:2: invalid YAML"),
        ("- just\n- a list\n", "promptfooconfig.yaml:1: a promptfoo config is a mapping"),
        (
            "tests:\n  - vars: {q: a}\n    assert:\n      - value: x\n",
            "promptfooconfig.yaml:4: test 1",
        ),
        (
            "tests:\n  - vars: [a]\n",
            "promptfooconfig.yaml:2: test 1: vars must be a mapping or a str",
        ),
        ("prompts: 3\n", "promptfooconfig.yaml:1: prompts must be a string, a list or a mapping"),
        ("tests:\n  - $ref: '#/nowhere'\n", "promptfooconfig.yaml:2: $ref '#/nowhere' points at"),
        ("a: 1\na: 2\n", "promptfooconfig.yaml:2: duplicate key 'a'"),
    ],
)
def test_a_malformed_config_is_one_line_naming_file_and_line(
    cli: Cli, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    config = write_config(tmp_path, text)
    assert cli("import", "promptfoo", config, "--out", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert expected in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_malformed_config_through_the_real_process_has_no_traceback(tmp_path: Path) -> None:
    config = write_config(tmp_path, "prompts: ['{{q}}'\n")
    code = (
        "import argparse, sys\nimport gate.cli\nfrom gate.importers import add_parser\n"
        "original = gate.cli.build_parser\n"
        "def build():\n    p = original()\n"
        "    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))\n"
        "    if 'import' not in sub.choices:\n        add_parser(sub)\n"
        "    return p\n"
        "gate.cli.build_parser = build\n"
        "sys.exit(gate.cli.main(sys.argv[1:]))\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", code, "import", "promptfoo", str(config)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
        timeout=60,
    )
    assert finished.returncode == 2
    assert finished.stderr.startswith(f"casegate: {config}:2: invalid YAML")
    assert "Traceback" not in finished.stderr


def test_file_references_outside_the_configs_folder_are_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret\n")
    folder = tmp_path / "pf"
    config = write_config(folder, "prompts: [file://../secret.txt]\ntests: []\n")
    with pytest.raises(CasegateError, match=r"promptfooconfig.yaml:1: prompts: 'file://\.\./se"):
        import_promptfoo(config, tmp_path / "out")
    (folder / "inside.txt").symlink_to(tmp_path / "secret.txt")
    write_config(folder, "prompts: [file://inside.txt]\ntests: []\n")
    with pytest.raises(CasegateError, match="is refused: casegate import reads only files inside"):
        import_promptfoo(config, tmp_path / "out")
    write_config(
        folder,
        "prompts: ['{{q}}']\ntests:\n  - vars: {q: file:///etc/hostname}\n"
        "    assert: [{type: contains, value: x}]\n",
    )
    with pytest.raises(CasegateError, match="is refused"):
        import_promptfoo(config, tmp_path / "out")
    assert not (tmp_path / "out").exists()


# --- the command line ----------------------------------------------------------------------


def test_the_parser_takes_import_promptfoo_with_out() -> None:
    parser = wired(gate.cli.build_parser())
    args = parser.parse_args(["import", "promptfoo", "pf.yaml", "--out", "suite"])
    assert (args.config, args.out, args.handler) == (Path("pf.yaml"), Path("suite"), cmd_import)
    assert parser.parse_args(["import", "promptfoo", "pf.yaml"]).out == Path(".")
    with pytest.raises(SystemExit):
        parser.parse_args(["import"])


def test_the_default_out_is_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = copied("support", tmp_path)
    monkeypatch.chdir(config.parent)
    assert cmd_import(argparse.Namespace(config=config, out=Path("."))) == 0
    assert (config.parent / "casegate.yml").is_file()
    assert (config.parent / "MIGRATION.md").is_file()
    assert capsys.readouterr().out.splitlines()[0] == "wrote casegate.yml"


# --- hypothesis: arbitrary vars and assertion values never crash the importer ----------

scalars = st.one_of(
    st.text(max_size=30),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=6)
var_maps = st.dictionaries(st.text(min_size=1, max_size=12), values, max_size=4)
kinds = st.sampled_from(
    [
        "equals",
        "contains",
        "icontains",
        "contains-any",
        "icontains-any",
        "contains-all",
        "not-contains-all",
        "not-icontains",
        "starts-with",
        "regex",
        "not-regex",
        "is-json",
        "word-count",
        "llm-rubric",
        "javascript",
        "latency",
        "cost",
        "contains-json",
        "finish-reason",
        "is-valid-openai-tools-call",
        "similar",
        "levenshtein",
        "moderation",
    ]
)
assertion_values = st.one_of(
    st.text(min_size=1, max_size=20),
    st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=3),
    values,
    st.dictionaries(st.sampled_from(["min", "max", "type", "required"]), scalars, max_size=2),
)
assertions = st.fixed_dictionaries({"type": kinds, "value": assertion_values})


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="casegate-pf-") as folder:
        yield Path(folder)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    variables=var_maps, checks=st.lists(assertions, min_size=1, max_size=4), anchor=st.booleans()
)
def test_arbitrary_vars_and_assertion_values_never_crash_the_importer(
    variables: dict[str, Any], checks: list[dict[str, Any]], anchor: bool
) -> None:
    # With the anchor, a test always has one check that maps, so a case is written.
    checks = [*checks, {"type": "contains", "value": "x"}] if anchor else checks
    with scratch() as folder:
        config = {
            "prompts": ["Q: {{ q }}"],
            "providers": ["openai:gpt-4.1-mini"],
            "tests": [{"vars": {"q": "fixed", **variables}, "assert": checks}],
        }
        path = write_config(folder / "pf", yaml.safe_dump(config, allow_unicode=True))
        refused: list[str] = []
        try:
            import_promptfoo(path, folder / "out")
        except CasegateError as exc:
            refused = exc.problems
        if refused:  # a clear problem: one line each, naming the file
            assert all("\n" not in p and str(path) in p for p in refused)
            return
        # Whatever was written loads as casegate loads it, and its message renders per case.
        loaded = load_config(folder / "out" / "casegate.yml")
        files, problems = resolve_case_paths(loaded.config.cases, loaded.root)
        assert not problems
        check_templates(loaded, load_cases(files))
        assert (folder / "out" / "MIGRATION.md").read_text().startswith("# Migration")

"""`no_pii`: fails on personal data in the output, naming kinds and counts, never values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import checks, pii
from gate.errors import CaseFileError
from gate.suite.cases import load_cases

LEAKY = (
    "Sure! Ana's email is ana@example.com (or ANA@example.com), her card 4111 1111 1111 1111, "
    "IBAN DE89 3704 0044 0532 0130 00, phone +44 20 7946 0958, last seen from 203.0.113.7."
)
SECRETS = [
    "ana@example.com",
    "ANA@example.com",
    "4111 1111 1111 1111",
    "1111",
    "DE89",
    "7946",
    "203.0.113.7",
]


def verdict(arg: Any, text: str) -> checks.Verdict:
    built = checks.build({"no_pii": arg})
    [only] = checks.evaluate(built, checks.Subject(text, {}))
    return only


def test_clean_output_passes_with_score_1() -> None:
    clean = "Your refund of $25.00 for order 12345678 was issued on 2026-12-03 (v1.2.3)."
    assert verdict(True, clean) == checks.Verdict("no_pii", True, "", 1.0)


def test_fails_naming_kinds_and_counts_and_no_value() -> None:
    found = verdict(True, LEAKY)
    assert not found.ok and found.score == 0.0
    assert found.reason == (
        "the output holds personal data: 1 card, 2 email, 1 iban, 1 ip, 1 phone"
    )
    # The reason is printed in reports and pull-request comments: no value may travel there.
    for secret in SECRETS:
        assert secret not in found.reason
        assert secret not in repr(found.to_dict())


def test_a_list_of_kinds_judges_only_those() -> None:
    assert verdict(["phone"], "mail ana@example.com").ok
    only_email = verdict(["email", "card"], LEAKY)
    assert only_email.reason == "the output holds personal data: 1 card, 2 email"


def test_near_misses_pass() -> None:
    # What the check must not fail an answer for (tests/test_pii.py holds the full table).
    text = (
        "Order 41111111111111112 shipped 2026-12-03T10:15:30Z; version 1.2.3 and v1.2.3.4; "
        "card ending 4111 1111 1111 1112 rejected; see https://x.com/o/555-123-4567; "
        "id 123e4567-e89b-12d3-a456-426614174000; root@localhost; listen on ::1 and 127.0.0.1."
    )
    assert verdict(True, text).ok


@pytest.mark.parametrize(
    ("arg", "problem"),
    [
        (["email", "ssn"], 'no_pii: unknown kind "ssn" (known: email, iban, card, ip, phone)'),
        (False, "no_pii takes true or a non-empty list of kinds (email, iban, card, ip, phone)"),
        ([], "no_pii takes true or a non-empty list of kinds"),
        ("email", "no_pii takes true or a non-empty list of kinds"),
        ([1], "no_pii takes true or a non-empty list of kinds"),
    ],
)
def test_bad_arguments_are_refused_when_built(arg: Any, problem: str) -> None:
    with pytest.raises(checks.CheckSpecError) as caught:
        checks.build({"no_pii": arg})
    assert problem in str(caught.value)


def test_an_unknown_kind_is_a_case_file_problem_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text("- id: a\n  input: {}\n  expect:\n    no_pii: [email, passport]\n")
    with pytest.raises(CaseFileError) as caught:
        load_cases([path])
    [problem] = caught.value.problems
    assert problem.endswith(
        ":4: case 'a': no_pii: unknown kind \"passport\" (known: email, iban, card, ip, phone)"
    )


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_the_verdict_agrees_with_find_and_never_quotes_the_output(text: str) -> None:
    judged = verdict(True, text)
    findings = pii.find(text)
    assert judged.ok == (not findings)
    assert judged.score == (1.0 if judged.ok else 0.0)
    for finding in findings:
        assert text[finding.start : finding.end] not in judged.reason.split(": ", 1)[-1]

"""Round-1 attacks on gate.pii (landing from the PII helper): personal data in shapes
production text really has that get through `redact_text` unredacted, and adversarial
100 KB inputs that must stay linear.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import time

import pytest

from gate.pii import redact_text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # SMTPUTF8 (RFC 6531) addresses: the local part is a person's name
        ("write to ana.müller@example.com today", "ana.m"),
        ("write to josé@example.com today", "jos"),
        ("write to ana@exämple.de today", "ana@"),
        ("write to 张伟@example.cn today", "张伟"),
    ],
)
def test_an_email_with_a_unicode_name_or_domain_is_redacted_whole(text: str, secret: str) -> None:
    """`_EMAIL` is re.ASCII: `ana.müller@…` is cut to `ller@example.com`, so the redacted
    text still reads `ana.mü<EMAIL_1>`; an IDN domain is not matched at all."""
    redacted = redact_text(text)
    assert "<EMAIL_1>" in redacted
    assert secret not in redacted


@pytest.mark.parametrize(
    "text",
    [
        "card:\n4111\n1111\n1111\n1111\nthanks",  # one group a line, as a chat widget wraps it
        "card: 4111  1111  1111  1111",  # two spaces between groups
        "card: 4111 1111\n1111 1111",  # wrapped half-way
        "card: 4111.1111.1111.1111",  # dotted, as some forms print it
    ],
)
def test_a_card_number_split_across_lines_or_spaced_twice_is_redacted(text: str) -> None:
    redacted = redact_text(text)
    assert "<CARD_1>" in redacted
    assert "1111" not in redacted


@pytest.mark.parametrize(
    "text",
    [
        "call +1\u00a0415\u00a0555\u00a02671",  # no-break spaces, as HTML-derived text has
        "call +44\u202f20\u202f7946\u202f0958",  # narrow no-break spaces (French typography)
    ],
)
def test_a_phone_number_with_no_break_spaces_is_redacted(text: str) -> None:
    redacted = redact_text(text)
    assert "<PHONE_1>" in redacted
    assert "555" not in redacted and "7946" not in redacted


# --- defended: documented so a regression shows --------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "ana+tag@example.com",
        "ANA@EXAMPLE.COM",
        "de89370400440532013000",
        "+14155552671",
        "+1-415-555-2671",
        "2001:db8::1",
        "fe80::1%eth0",
        "::ffff:192.168.1.1",
        "[2001:db8::1]:8080",
    ],
)
def test_defended_plus_addressing_lower_case_iban_e164_and_compressed_ipv6(text: str) -> None:
    assert redact_text(f"x {text} y").count("<") == 1


@pytest.mark.parametrize(
    "shape",
    ["1", "1 ", "0 ", "@", "a@", "a@a.", ":", "a:", " 1:1", "+1-", "(1", "DE89 ", "01 23 ",
     "4111 ", " f:1.", "+1 (0)2-3.4 ", " GB82", "a."],
)  # fmt: skip
def test_defended_no_adversarial_100_kb_text_takes_long(shape: str) -> None:
    text = shape * (100_000 // len(shape))
    started = time.perf_counter()
    redact_text(text)
    assert time.perf_counter() - started < 3

"""Personal data: what counts (and the near-misses that do not), redaction, its bounds."""

from __future__ import annotations

import collections
import copy
import itertools
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import pii
from gate.pii import Finding, Redaction, find, iban_valid, luhn_valid, redact, redact_text


def found(text: str) -> list[tuple[str, str]]:
    return [(finding.kind, text[finding.start : finding.end]) for finding in find(text)]


# (text, what find must report). Each near-miss is here because a looser pattern would
# flag it: the vector is the decision, written down.
VECTORS: list[tuple[str, list[tuple[str, str]]]] = [
    # --- email
    ("write to ana@example.com today", [("email", "ana@example.com")]),
    ("<bo.li+tag@mail.example.co.uk>", [("email", "bo.li+tag@mail.example.co.uk")]),
    (
        "[Ana](mailto:ana@example.com) or [ana@example.com](x)",
        [("email", "ana@example.com"), ("email", "ana@example.com")],
    ),
    ("`ANA@EXAMPLE.COM`.", [("email", "ANA@EXAMPLE.COM")]),
    ("root@localhost", []),  # no dotted domain: a local mailbox, no one's address
    ("user@10.0.0.1", [("ip", "10.0.0.1")]),  # a numeric domain is an IP, not an email
    ("logo@2x.png", []),  # a retina image's file name
    ("@@@ a@ @b .@.", []),
    # --- phone
    ("call +44 20 7946 0958.", [("phone", "+44 20 7946 0958")]),
    ("+1 (555) 123-4567", [("phone", "+1 (555) 123-4567")]),
    ("+44 (0)20 7946 0958", [("phone", "+44 (0)20 7946 0958")]),
    ("+4915123456789", [("phone", "+4915123456789")]),
    ("(555) 123-4567", [("phone", "(555) 123-4567")]),
    ("555.123.4567 or 555 123 4567", [("phone", "555.123.4567"), ("phone", "555 123 4567")]),
    ("020 7946 0958 / 01 23 45 67 89", [("phone", "020 7946 0958"), ("phone", "01 23 45 67 89")]),
    ("0044 20 7946 0958", [("phone", "0044 20 7946 0958")]),
    ("555-123-4567 ext. 89 then", [("phone", "555-123-4567 ext. 89")]),
    ("555-123-4567x12", [("phone", "555-123-4567x12")]),
    ("+44 20 7946 0958 2026 2027", [("phone", "+44 20 7946 0958")]),  # years after it dropped
    ("+44 20 7946 0958 )0", [("phone", "+44 20 7946 0958")]),  # a stray bracket after it
    ("5551234567", []),  # a bare run: an order number or a Unix timestamp as much as a phone
    ("1701600000", []),  # a Unix timestamp
    ("555-123-45678", []),  # one digit too many for the North American shape
    ("555-123.4567", []),  # mixed separators
    ("+12345", []),  # too few digits after +
    ("+1234567890123456", []),  # more than E.164's 15
    ("+05:30 +0100", []),  # time zone offsets
    ("+2026-12-03", []),  # a signed date
    ("C++11 and 1+1234567", []),  # a + inside a token is arithmetic, not a dial prefix
    ("order ORD-555-123-4567", []),  # an id that happens to hold a phone's shape
    ("order #12345678", []),
    ("03-12-2026 and 03.12.2026 and 03 12 2026", []),  # dates, even with a trunk-like 0
    ("https://x.com/u/555-123-4567/edit", []),  # a URL path segment
    # --- card (Luhn; published test numbers from the card networks' sandbox lists)
    ("4111 1111 1111 1111", [("card", "4111 1111 1111 1111")]),
    ("4111-1111-1111-1111", [("card", "4111-1111-1111-1111")]),
    ("pay with 5555555555554444.", [("card", "5555555555554444")]),
    ("amex 3782 822463 10005", [("card", "3782 822463 10005")]),
    ("diners 3056 930902 5904", [("card", "3056 930902 5904")]),
    ("4222222222222", [("card", "4222222222222")]),  # 13 digits, an old Visa test number
    ("6011 1111 1111 1117", [("card", "6011 1111 1111 1117")]),
    ("4111 1111 1111 1111 05 2027", [("card", "4111 1111 1111 1111")]),  # expiry after it
    ("?card=4111111111111111&x", [("card", "4111111111111111")]),  # a query value is a value
    ("0000 4111 1111 1111 1111", [("card", "4111 1111 1111 1111")]),  # a group before it
    ("0000 0000 0000 0000", []),  # passes Luhn, but no issuer's number starts with 0
    ("4111111111111112", []),  # fails Luhn
    ("4111 1111 1111 1112", []),
    ("123456789012", []),  # 12 digits: too short for a card
    ("41111111111111111111", []),  # 20 digits: too long, and no card inside it is cut out
    ("4111 1111 1111", []),  # three groups
    ("4111 1111-1111 1111", [("card", "4111 1111-1111 1111")]),  # mixed separators: still a card
    ("https://x.com/pay/4111111111111111", []),  # a URL path segment
    ("3.14159265358979323", []),  # decimals
    # --- IBAN (mod 97)
    ("DE89 3704 0044 0532 0130 00", [("iban", "DE89 3704 0044 0532 0130 00")]),
    ("DE89370400440532013000.", [("iban", "DE89370400440532013000")]),
    ("GB82WEST12345698765432 is it", [("iban", "GB82WEST12345698765432")]),
    ("fr14 2004 1010 0505 0001 3m02 606", [("iban", "fr14 2004 1010 0505 0001 3m02 606")]),
    ("DE88 3704 0044 0532 0130 00", []),  # wrong check digits: and its digits are no phone
    ("DE89 3704 0044 0532 0130 0", []),  # one character short of Germany's 22
    # A stray IBAN-like prefix keeps no phone, but a Luhn-valid card after it is a card.
    ("DE89 4111 1111 1111 1111", [("card", "4111 1111 1111 1111")]),
    ("DE89370400440532013000X", []),  # runs on into a word
    ("ZZ89370400440532013000", []),  # no such country
    # --- IP
    ("from 203.0.113.7:8080 and 10.0.0.1/24", [("ip", "203.0.113.7"), ("ip", "10.0.0.1")]),
    ("1.2.3.4", [("ip", "1.2.3.4")]),  # a bare dotted quad reads as an address
    ("v1.2.3.4", []),  # a version: the v says so
    ("999.1.1.1", []),  # an octet over 255
    ("01.02.03.04", []),  # leading zeros are no address form ipaddress accepts
    ("1.2.3", []),  # a version
    ("1.2.3.4.5", []),  # five parts
    ("127.0.0.1 and 0.0.0.0 and ::1 and ::", []),  # loopback and unspecified: nobody's
    ("fe80::1%eth0", [("ip", "fe80::1%eth0")]),
    ("see 2001:db8::8a2e:370:7334.", [("ip", "2001:db8::8a2e:370:7334")]),
    ("::ffff:203.0.113.7", [("ip", "::ffff:203.0.113.7")]),
    ("[2001:db8::1]:443", [("ip", "2001:db8::1")]),
    ("123e4567-e89b-12d3-a456-426614174000", []),  # a UUID: no IPv6, no phone, no card
    ("10:15:30 and 00:1A:2B:3C:4D:5E", []),  # a time and a MAC address
    ("std::vector and abc::def", []),  # C++ scopes
    # --- dates, timestamps, versions are none of the above
    ("2026-12-03", []),
    ("2026-12-03T10:15:30Z", []),
    ("2026-12-03T10:15:30.123+01:00", []),
    ("Tue, 03 Dec 2026 10:15:30 GMT", []),
    ("casegate 1.24.3, python 3.11.7", []),
    # --- placeholders already written are not personal data
    ("<EMAIL_1> <PHONE_12> <CARD_3> <IBAN_1> <IP_1> <REDACTED_KEY>", []),
]


@pytest.mark.parametrize(("text", "expected"), VECTORS, ids=[text for text, _ in VECTORS])
def test_vectors(text: str, expected: list[tuple[str, str]]) -> None:
    assert found(text) == expected


def test_findings_are_in_order_and_do_not_overlap() -> None:
    text = "ana@example.com 4111111111111111 +44 20 7946 0958 10.0.0.1 DE89370400440532013000"
    findings = find(text)
    assert [f.kind for f in findings] == ["email", "card", "phone", "ip", "iban"]
    assert all(a.end <= b.start for a, b in itertools.pairwise(findings))
    assert findings[0] == Finding("email", 0, 15)


# Published test numbers (Visa, Mastercard, Amex, Discover, Diners, JCB sandbox lists): Luhn
# holds for every one, and changing the last digit breaks it. No Luhn library is in the
# environment to compare with (python-stdnum is not a dependency), so the published
# numbers are the reference.
PUBLISHED_CARDS = [
    "4111111111111111",
    "4012888888881881",
    "4222222222222",
    "5555555555554444",
    "5105105105105100",
    "2223003122003222",
    "378282246310005",
    "371449635398431",
    "6011111111111117",
    "6011000990139424",
    "30569309025904",
    "3530111333300000",
    "6304000000000000",
]


@pytest.mark.parametrize("number", PUBLISHED_CARDS)
def test_luhn_on_published_test_cards(number: str) -> None:
    assert luhn_valid(number)
    last = int(number[-1])
    assert not luhn_valid(number[:-1] + str((last + 1) % 10))
    assert found(number) == [("card", number)]


def test_luhn_catches_every_single_digit_error() -> None:
    # Luhn's promise: any one digit changed is caught (here over every position and digit).
    number = "4012888888881881"
    for position in range(len(number)):
        for digit in "0123456789":
            if digit != number[position]:
                changed = number[:position] + digit + number[position + 1 :]
                assert not luhn_valid(changed), changed


@pytest.mark.parametrize(
    "iban",
    [
        "GB82WEST12345698765432",
        "DE89370400440532013000",
        "FR1420041010050500013M02606",
        "NL91ABNA0417164300",
        "BE68539007547034",
        "CH9300762011623852957",
        "NO9386011117947",
        "MT84MALT011000012345MTLCAST001S",
    ],
)
def test_iban_examples_from_the_registry_hold(iban: str) -> None:
    assert iban_valid(iban)
    # A swap of two neighbouring characters is what mod 97 exists to catch.
    swapped = iban[:6] + iban[7] + iban[6] + iban[8:]
    assert swapped == iban or not iban_valid(swapped)
    assert not iban_valid(iban[:2] + "00" + iban[4:])


# --- redaction ------------------------------------------------------------------------


def test_redact_gives_typed_placeholders_the_same_value_the_same_one() -> None:
    text = (
        "Ana <ana@example.com> called from +44 20 7946 0958; "
        "reply to ANA@example.com or bo@example.org, or call +442079460958."
    )
    value, counts = redact(text)
    assert value == (
        "Ana <<EMAIL_1>> called from <PHONE_1>; reply to <EMAIL_1> or <EMAIL_2>, or call <PHONE_1>."
    )
    assert counts == collections.Counter({"email": 3, "phone": 2})


def test_redact_walks_mappings_lists_and_keys() -> None:
    trace = {
        "messages": [
            {"role": "user", "content": "my card is 4111 1111 1111 1111"},
            {"role": "assistant", "content": "Card 4111111111111111 noted, from 203.0.113.7"},
        ],
        "Authorization": "Bearer sk-secret",
        "meta": {"PASSWORD": {"nested": "hunter2"}, "tags": ("a", "DE89370400440532013000")},
        "ana@example.com": 1,
        "amount": 4111111111111111,  # a JSON number holding a card
        "count": 3,
        "flag": True,
    }
    original = copy.deepcopy(trace)
    value, counts = redact(trace, ["authorization", "Password"])
    assert value == {
        "messages": [
            {"role": "user", "content": "my card is <CARD_1>"},
            {"role": "assistant", "content": "Card <CARD_1> noted, from <IP_1>"},
        ],
        "Authorization": "<REDACTED_KEY>",
        "meta": {"PASSWORD": "<REDACTED_KEY>", "tags": ("a", "<IBAN_1>")},
        "<EMAIL_1>": 1,
        "amount": "<CARD_1>",
        "count": 3,
        "flag": True,
    }
    assert counts == collections.Counter({"card": 3, "ip": 1, "iban": 1, "email": 1, "key": 2})
    assert trace == original  # the input is not modified


def test_redaction_is_a_tuple_and_a_record() -> None:
    result = redact("ana@example.com")
    assert isinstance(result, Redaction) and isinstance(result, tuple)
    assert result.value == result[0] == "<EMAIL_1>"
    assert result.counts == result[1] == collections.Counter({"email": 1})
    assert redact_text("ana@example.com") == "<EMAIL_1>"


def test_redacting_again_changes_nothing_and_counts_nothing() -> None:
    text = "ana@example.com +44 20 7946 0958 4111111111111111 10.0.0.1 DE89370400440532013000"
    once = redact({"a": text, "password": "x"}, ["password"]).value
    twice, counts = redact(once, ["password"])
    assert twice == once
    # The redacted key's value is a placeholder now: it is replaced again, and counted, as a
    # key (a second pass cannot know it held nothing); no other kind is counted.
    assert counts == collections.Counter({"key": 1})


def test_new_placeholders_never_reuse_numbers_already_in_the_text() -> None:
    # A text that already says <EMAIL_1> about someone: a new address must not take that
    # name, or two people would read as one.
    value, _ = redact("<EMAIL_1> wrote to bo@example.org")
    assert value == "<EMAIL_1> wrote to <EMAIL_2>"


def nested(levels: int, inner: Any) -> Any:
    for _ in range(levels):
        inner = [inner]
    return inner


def test_hostile_nesting_is_cut_at_the_depth_limit_and_not_returned() -> None:
    # MAX_DEPTH containers are read whole; the one below them is replaced unread.
    value, counts = redact(nested(pii.MAX_DEPTH, "ana@example.com"))
    assert value == nested(pii.MAX_DEPTH, "<EMAIL_1>") and counts == {"email": 1}
    value, counts = redact(nested(pii.MAX_DEPTH + 1, "ana@example.com"))
    assert value == nested(pii.MAX_DEPTH, pii.REDACTED_DEEP)
    assert counts == collections.Counter({"deep": 1})
    # Far deeper than Python's recursion limit: still no RecursionError, nothing returned.
    value, counts = redact({"a": nested(100_000, "ana@example.com")})
    assert "ana@example.com" not in repr(value) and counts == {"deep": 1}


def test_a_value_that_holds_itself_is_cut_where_it_comes_round() -> None:
    cyclic: list[Any] = ["ana@example.com"]
    cyclic.append(cyclic)
    value, counts = redact(cyclic)
    assert value == ["<EMAIL_1>", pii.REDACTED_DEEP]
    assert counts == collections.Counter({"email": 1, "deep": 1})
    shared = ["ana@example.com"]  # the same list twice, side by side, is no cycle
    assert redact([shared, shared]).value == [["<EMAIL_1>"], ["<EMAIL_1>"]]


def test_numbers_are_read_as_text_up_to_a_card_s_length() -> None:
    assert redact({"card": 4111111111111111, "n": 12}).value == {"card": "<CARD_1>", "n": 12}
    huge = 10**5000  # str() of it raises ValueError (Python's 4,300-digit limit)
    assert redact([huge, 2.5, None]).value == [huge, 2.5, None]


def test_a_megabyte_of_adversarial_text_is_read_in_one_pass() -> None:
    # Bounded input, no wall-clock assert: each of these makes a nested or unanchored
    # pattern backtrack quadratically (a megabyte of them would take hours). The suite's
    # own timeout is the bound; the findings prove the text was read to its end.
    hostile = [
        "1" * 1_000_000,
        "1 " * 500_000,
        "@" * 1_000_000,
        "1 @" * 333_333,
        "a@" * 500_000,
        "1." * 500_000,
        "a:" * 500_000,
        ("+1" + "1" * 30 + "a") * 30_000,
        ("a" * 70 + "@") * 14_000,
        ("DE89" + " 1" * 40 + "x") * 10_000,
        # Near-misses that each match a pattern and are passed over, then searched again
        # from the next character: this must not turn into a quadratic rescan.
        "0000 " * 200_000,
        "1:2:3:4:5:6:7:8:9 " * 55_000,
        "DE00 0000 0000 0000 0000 00 " * 36_000,
        "a@b.c1 " * 140_000,
        # URL-encoded segments are decoded and searched once each, from a segment's start.
        "a" * 1_000_000 + "%",
        ("a" * 50 + "%zz") * 19_000,
        "x%4" * 330_000,
        ("q=%41%42" + "&") * 110_000,
    ]
    for text in hostile:
        assert find(text) == []
    tail = "1 @" * 333_333 + " ana@example.com"
    assert found(tail) == [("email", "ana@example.com")]


def test_nothing_secret_reaches_the_counts() -> None:
    _, counts = redact({"password": "hunter2", "x": "ana@example.com"}, ["password"])
    assert set(counts) <= set(pii.KINDS) | {"key", "deep"}
    assert "hunter2" not in repr(counts) and "ana@" not in repr(counts)


# --- properties -----------------------------------------------------------------------

PII_SAMPLES = [
    "ana@example.com",
    "+44 20 7946 0958",
    "(555) 123-4567",
    "4111 1111 1111 1111",
    "378282246310005",
    "DE89 3704 0044 0532 0130 00",
    "203.0.113.7",
    "2001:db8::1",
]
FILLER = st.text(
    alphabet=st.sampled_from(list("ab 019.:-+@()<>_/%x\n")) | st.characters(), max_size=40
)


@settings(max_examples=300, deadline=None)
@given(st.lists(FILLER | st.sampled_from(PII_SAMPLES), max_size=12))
def test_redacted_text_holds_no_finding_and_no_planted_value(parts: list[str]) -> None:
    # Planted values stand between spaces, so each is a whole token and must be found.
    text = " ".join(parts)
    value, counts = redact(text)
    assert find(value) == []
    planted = [part for part in parts if part in PII_SAMPLES]
    for part in planted:
        assert part not in value
    assert sum(counts.values()) >= len(planted) or not planted
    # Every finding grows by at most a placeholder's length (`<EMAIL_1000>` is 12 characters).
    assert len(value) <= len(text) + 12 * sum(counts.values())


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text_never_raises_and_redacts_to_a_fixed_point(text: str) -> None:
    value, counts = redact(text)
    assert find(value) == []
    again, more = redact(value)
    assert again == value and not more
    for finding in find(text):
        assert text[finding.start : finding.end]  # never an empty span
    assert counts.total() == 0 or value != text


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=30),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=10), children, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_any_json_value_redacts_without_raising(value: Any) -> None:
    redacted, _ = redact(value, ["password"])
    texts: list[str] = []

    def strings(item: Any) -> None:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                strings(key)
                strings(child)
        elif isinstance(item, list):
            for child in item:
                strings(child)

    strings(redacted)
    assert all(find(text) == [] for text in texts)


def test_placeholders_do_not_read_as_data() -> None:
    # The placeholder shape is what the idempotence above rests on.
    for word in pii.PLACEHOLDER.values():
        assert re.fullmatch(r"[A-Z]+", word)
        assert find(f"<{word}_1> <{word}_99999>") == []


def _with_check_digits(country: str, bban: str) -> str:
    # ISO 13616's recipe: the check digits are 98 - (BBAN + country + "00") mod 97.
    digits = "".join(str(int(char, 36)) for char in bban + country + "00")
    return f"{country}{98 - int(digits) % 97:02d}{bban}"


@pytest.mark.parametrize("country", sorted(pii.IBAN_LENGTHS))
def test_an_iban_of_every_registered_length_is_found_spaced_or_not(country: str) -> None:
    # The pattern's reach (10 to 30 characters after the check digits) must cover every
    # length in the table, or a country's IBANs would pass unredacted.
    length = pii.IBAN_LENGTHS[country]
    iban = _with_check_digits(country, ("12345678" * 4)[: length - 4])
    assert iban_valid(iban)
    spaced = " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))
    for written in (iban, spaced):
        assert found(f"pay to {written}, thanks") == [("iban", written)]


def test_a_logged_request_reads_as_before_with_its_people_taken_out() -> None:
    # What `casegate add` will hand over: ids, timestamps, versions and amounts stay.
    log = {
        "request_id": "req_01HZX3K9V7",
        "timestamp": "2026-12-03T10:15:30.123Z",
        "headers": {
            "Authorization": "Bearer sk-abc",
            "X-Forwarded-For": "203.0.113.7, 10.0.0.2",
            "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0.6099.109",
        },
        "messages": [
            "Hi, I'm Ana (ana.lopez@example.es, +34 612 34 56 78). Order #A-10293 from "
            "03/12/2026 never arrived. Refund to ES91 2100 0418 4502 0005 1332 please.",
            "Refunded €49.99 to ES91 2100 0418 4502 0005 1332. Ref 2026-12-03-00042. "
            "Call 1-800-555-0199 ext 3 if needed.",
        ],
        "version": "v1.2.3.4",
        "build": "10.0.19041.1",
    }
    value, counts = redact(log, ["authorization"])
    assert value == {
        **log,
        "headers": {
            "Authorization": "<REDACTED_KEY>",
            "X-Forwarded-For": "<IP_1>, <IP_2>",
            "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0.6099.109",
        },
        "messages": [
            "Hi, I'm Ana (<EMAIL_1>, <PHONE_1>). Order #A-10293 from "
            "03/12/2026 never arrived. Refund to <IBAN_1> please.",
            "Refunded €49.99 to <IBAN_1>. Ref 2026-12-03-00042. Call <PHONE_2> if needed.",
        ],
    }
    assert counts == collections.Counter({"ip": 2, "phone": 2, "iban": 2, "email": 1, "key": 1})

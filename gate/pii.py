"""Personal data in production-derived text: find it, and replace it with typed placeholders.

`find` names the spans of one text that hold an email address, a phone number, a payment
card number, an IBAN or an IP address; `redact` walks a whole value (strings, mappings,
lists) and replaces each with a placeholder (`<EMAIL_1>`), the same value with the same
placeholder throughout one call, so a redacted conversation still reads consistently. The
`no_pii` check (gate.checks.privacy) and `casegate add` both read them.

What counts is chosen to be predictable, and to leave alone what only looks like a number
someone owns (docs/checks.md, "Privacy", lists the near-misses):

- an **email** has a dotted domain ending in two letters or more (`user@localhost` is not one);
- a **phone** starts with `+` and holds 8 to 15 digits, or has a national shape: North
  American `(555) 123-4567` / `555-123-4567` / `555.123.4567` / `555 123 4567`, or a trunk
  `0` with groups split by one kind of separator (`020 7946 0958`, `01 23 45 67 89`), 9 to 12
  digits. A bare run of digits is never a phone: order numbers and Unix timestamps look
  the same. An extension (`ext. 12`, `x12`, `#12`) belongs to the number;
- a **card** is 13 to 19 digits, bare or in the printed groups (4-4-4-4[-1..3], 4-6-5,
  4-6-4), not led by a 0, that pass the Luhn check;
- an **IBAN** has its country's registered length and a valid mod-97 check, with or without
  spaces;
- an **IP** is an IPv4 or IPv6 address `ipaddress` accepts (a scope `%eth0` included),
  except the loopback and unspecified ones (`127.0.0.1`, `::1`, `0.0.0.0`, `::`), which
  identify nobody.

A number that is part of a larger token is none of these: joined to letters, or by `-`,
`.`, `/` or `_` to another (a version `v1.2.3.4`, a URL path `/orders/4111…`, an id
`ORD-555-123-4567`, a timestamp `2026-12-03T10:15:30`).

Every pattern is linear: no nested unbounded repeat, and a match may start only at a token
boundary, so a megabyte of digits, spaces or `@` is one pass. No function here puts a found
value in an exception, a count or anything but its own return value's placeholders.
"""

from __future__ import annotations

import collections
import ipaddress
import re
import urllib.parse
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = [
    "IBAN_LENGTHS",
    "KINDS",
    "MAX_DEPTH",
    "PLACEHOLDER",
    "REDACTED_DEEP",
    "REDACTED_KEY",
    "Finding",
    "Redaction",
    "find",
    "iban_valid",
    "luhn_valid",
    "redact",
    "redact_text",
]

#: what `find` detects, in the order an overlap is settled (an email's digits are no phone)
KINDS: tuple[str, ...] = ("email", "iban", "card", "ip", "phone")
#: the placeholder's word per kind: `<EMAIL_1>`, `<PHONE_2>`, …
PLACEHOLDER = {"email": "EMAIL", "phone": "PHONE", "card": "CARD", "iban": "IBAN", "ip": "IP"}
#: the value of a key named in `privacy.redact_keys`, whatever it held (counted as "key")
REDACTED_KEY = "<REDACTED_KEY>"
#: what stands for a container nested deeper than MAX_DEPTH, or holding itself (counted as
#: "deep"): unread, so it is not returned
REDACTED_DEEP = "<REDACTED_DEEP>"
#: containers nested deeper than this are replaced whole, never recursed into
MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Finding:
    """One span of personal data in a text: `text[start:end]` is the value."""

    kind: str
    start: int
    end: int


class Redaction(NamedTuple):
    """`redact`'s result, a `(value, counts)` pair: the value with every finding replaced,
    and how many of each kind were replaced (occurrences, not distinct values)."""

    value: Any
    counts: collections.Counter[str]


# --- the patterns -----------------------------------------------------------------------
# Boundaries: a number starts where no word character, and no word character joined by
# - . / _, comes before it, and ends likewise. Fixed-width lookarounds, so no backtracking.
_START = r"(?<![\w+])(?<!\w[-./])"
_END = r"(?!\w)(?![-./]\w)"

# Unicode word characters on both sides of the @: `ana.müller@exämple.de` and `张伟@…`
# are addresses (internationalised mail), and an ASCII-only pattern redacted half of them.
_EMAIL = re.compile(
    r"(?<![\w.%+-])[\w.%+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}(?![\w-])",
)
#: between a card's groups: a space, a dash or a dot, or up to three of any whitespace (a
#: number wrapped across lines, or spaced twice); Luhn keeps this from finding ordinary text
_GAP = r"(?:[ .-]|\s{1,3})"
_CARD = re.compile(
    _START
    + r"(?:\d{13,19}"
    + rf"|\d{{4}}(?P<s>{_GAP})\d{{4}}{_GAP}\d{{4}}{_GAP}\d{{4}}(?:{_GAP}\d{{1,3}})?"
    + r"|\d{4}(?P<t>[ -])\d{6}(?P=t)\d{4,5})"
    + _END,
    re.ASCII,
)
_IBAN = re.compile(r"(?<![\w])[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){10,30}", re.ASCII)
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w)(?!\.\d)", re.ASCII)
_IPV6 = re.compile(
    r"(?<![\w:.])[0-9A-Fa-f.]{0,39}:[0-9A-Fa-f.:]{1,45}(?:%[\w.-]{1,32})?(?![\w:%])", re.ASCII
)
_EXTENSION = r"(?: ?(?:ext\.?|x|\#) ?\d{1,6})?"
_PHONE = re.compile(
    _START
    + r"(?:(?P<intl>\+\d[\d ().-]{5,23}\d)"
    + r"|(?P<nanp>(?:1[ .-])?(?:\(\d{3}\) ?\d{3}[ .-]|\d{3}(?P<n>[ .-])\d{3}(?P=n))\d{4})"
    + r"|(?P<trunk>0\d{1,4}(?P<k>[ -])\d{2,8}(?:(?P=k)\d{2,8}){0,3}))"
    + _EXTENSION
    + _END,
    re.ASCII | re.IGNORECASE,
)
_DIGIT = re.compile(r"\d").search
#: what `find` reads as its ASCII look-alike, one character for one (so every position found
#: is a position in the text): every Unicode space (no-break, thin, en, ideographic …), every
#: dash and the minus sign, and the full-width forms (U+FF01 to U+FF5E) of East Asian text
_SPACES = str.maketrans(
    {
        **dict.fromkeys([0x00A0, 0x1680, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000], " "),
        **dict.fromkeys([*range(0x2010, 0x2016), 0x2212, 0xFE63, 0xFF0D], "-"),
        **{code: chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F) if code != 0xFF0D},
    }
)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_SHAPE = re.compile(r"\d{2}[ .-]\d{2}[ .-]\d{4}")
#: file name suffixes that are no top-level domain: `logo@2x.png` is an image, not an address
_FILE_SUFFIXES = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "pdf", "txt", "json"})
#: a placeholder this module writes; one already in the text keeps its number taken
_PLACEHOLDERS = re.compile(r"<(EMAIL|PHONE|CARD|IBAN|IP)_(\d{1,9})>")

#: ISO 13616's registered IBAN length per country (SWIFT's IBAN registry, with the 2020s
#: additions: Burundi to Yemen)
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24,
    "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
    "GT": 28, "HN": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
    "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
    "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25,
    "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
    "YE": 30,
}  # fmt: skip


# --- validation -------------------------------------------------------------------------


def luhn_valid(digits: str) -> bool:
    """Whether a string of digits passes the Luhn check (ISO/IEC 7812)."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def iban_valid(compact: str) -> bool:
    """Whether an IBAN without spaces (upper case) has its country's length and mod-97 check."""
    if IBAN_LENGTHS.get(compact[:2]) != len(compact) or not compact.isalnum():
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(char, 36)) for char in moved)) % 97 == 1


# Each reader judges one match of its pattern: the span it takes and whether that span is a
# finding (False: a near-miss, whose characters are no phone), or None to pass it over.
Span = tuple[int, int, bool]


def _email(match: re.Match[str]) -> Span | None:
    top = match.group().rsplit(".", 1)[1]
    if len(top) >= 2 and top.isalpha() and top.lower() not in _FILE_SUFFIXES:
        return match.start(), match.end(), True
    return None


def _card(match: re.Match[str]) -> Span | None:
    start, end = match.span()
    digits = re.sub(r"\D", "", match.group())
    if digits[0] == "0":
        return None  # no issuer's number starts with 0 (and all zeros pass Luhn)
    if luhn_valid(digits):
        return start, end, True
    if match.group("s") and len(digits) > 16 and luhn_valid(digits[:16]):
        # 4-4-4-4 and a short number after it, not part of it: the card ends at its 16th digit
        sixteenth = [i for i, char in enumerate(match.group()) if char.isdigit()][15]
        return start, start + sixteenth + 1, True
    return None


def _iban(match: re.Match[str]) -> Span | None:
    """An IBAN of a registered country and length, found when its check holds; one that
    fails it (or is cut short) is a mistyped or made-up IBAN, whose digit groups are no
    phone either."""
    text, start = match.string, match.start()
    length = IBAN_LENGTHS.get(match.group()[:2].upper())
    if length is None:
        return None
    # The pattern reads on into the next words; the country's length says where it ends.
    taken, end = 0, start
    while taken < length and end < match.end():
        taken += text[end] != " "
        end += 1
    if taken < length:
        groups = [group for group in re.finditer(r"\S+", match.group()) if _DIGIT(group[0])]
        return start, start + groups[-1].end(), False
    if end < len(text) and (text[end].isalnum() or text[end] == "_"):
        return None
    return start, end, iban_valid(text[start:end].replace(" ", "").upper())


def _identifies(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return not (address.is_loopback or address.is_unspecified)


def _ipv6(match: re.Match[str]) -> Span | None:
    candidate = match.group().rstrip(".")
    if not any(char.isdigit() for char in candidate.split("%", 1)[0]):
        return None  # `abc::def`, `face::feed`: words joined by ::, not an address
    try:
        address = ipaddress.IPv6Address(candidate)
    except ValueError:
        return None
    return (match.start(), match.start() + len(candidate), True) if _identifies(address) else None


def _ipv4(match: re.Match[str]) -> Span | None:
    try:
        address = ipaddress.IPv4Address(match.group())
    except ValueError:
        return None  # an octet over 255, or a leading zero
    return (match.start(), match.end(), True) if _identifies(address) else None


def _phone(match: re.Match[str]) -> Span | None:
    number = match.group("intl") or match.group("nanp") or match.group("trunk")
    if match.group("intl"):
        if _ISO_DATE.match(number, 1):
            return None  # +2026-12-03: a signed date, not a number to call
        length = _international_length(number)
        if length is None:
            return None
        # Cut short, the number loses what the pattern read after it (an extension too).
        end = match.start() + length if length < len(number) else match.end()
        return match.start(), end, True
    if match.group("trunk"):
        digits = sum(char.isdigit() for char in number)
        most = 15 if number.startswith("00") else 12
        if not 9 <= digits <= most or _DATE_SHAPE.fullmatch(number) or number[:3] == "000":
            return None  # 000: no trunk prefix, and no country code after 00, starts with 0
    return match.start(), match.end(), True


_PAREN_GROUP = re.compile(r"\(\d{1,5}\)")
_DOUBLE_SEPARATOR = re.compile(r"[ .-]{2}")


def _international_length(number: str) -> int | None:
    """How much of a `+` number is the phone, or None when none is: 8 to 15 digits
    besides a trunk `(0)`, one separator at a time, parentheses round a group of digits
    only. The pattern reads on over what follows a space; that is dropped a group at a time."""
    while True:
        digits = sum(char.isdigit() for char in number.replace("(0)", ""))
        unparenthesized = _PAREN_GROUP.sub("", number)
        if (
            8 <= digits <= 15
            and not _DOUBLE_SEPARATOR.search(number.replace("(", "").replace(")", ""))
            and "(" not in unparenthesized
            and ")" not in unparenthesized
        ):
            return len(number)
        cut = number.rfind(" ")
        if cut < 0:
            return None
        number = number[:cut].rstrip(" (.-")


#: the readers in the order an overlap is settled (KINDS): an email's digits are no phone
_READERS: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], Span | None]], ...] = (
    ("email", _EMAIL, _email),
    ("iban", _IBAN, _iban),
    ("card", _CARD, _card),
    ("ip", _IPV6, _ipv6),
    ("ip", _IPV4, _ipv4),
    ("phone", _PHONE, _phone),
)


def _spans(
    pattern: re.Pattern[str], read: Callable[[re.Match[str]], Span | None], text: str
) -> Iterator[Span]:
    """Every span `read` takes. A match it passes over is searched again from its next
    character, not its end: `0000 4111 1111 1111 1111` fails Luhn as four groups from the
    first, and holds a card from the second. Inside a token every pattern's start boundary
    fails at once, so the search moves on to the next token: this stays one pass."""
    at = 0
    while (match := pattern.search(text, at)) is not None:
        span = read(match)
        if span is None:
            at = match.start() + 1
        else:
            yield span
            at = max(span[1], match.start() + 1)


def find(text: str) -> list[Finding]:
    """The personal data in `text`, in order, never overlapping: where two detectors claim
    the same characters, the one earlier in KINDS keeps them."""
    # Unicode spaces, dashes and full-width forms read as their ASCII look-alikes (_SPACES).
    text = text.translate(_SPACES)
    taken = bytearray(len(text))
    found: list[Finding] = []
    #: IBAN near-misses: their digit groups are read as no phone, but a Luhn-valid card
    #: after a stray `DE89` is still a card
    near: list[tuple[int, int]] = []
    for kind, pattern, read in _READERS:
        if kind == "phone":
            for start, end in near:
                taken[start:end] = b"\x01" * (end - start)
        for start, end, real in _spans(pattern, read, text):
            if not real:
                near.append((start, end))
            elif taken.find(1, start, end) == -1:
                taken[start:end] = b"\x01" * (end - start)
                found.append(Finding(kind, start, end))
    if "%" in text:
        found += _encoded(text, taken)
    found.sort(key=lambda finding: finding.start)
    return found


#: a query value or path segment holding a percent-escape (`ana%40example.de`)
#: (starting only where a segment starts: a run of 100,000 characters is one try, not one a
#: character)
_ENCODED = re.compile(r"(?<![^\s&?=/#;])[^\s&?=/#;]*%[0-9A-Fa-f]{2}[^\s&?=/#;]*")


def _encoded(text: str, taken: bytearray) -> list[Finding]:
    """Personal data written URL-encoded (an email's `%40`, a phone's `%2B`, a card spaced
    with `%20`): each segment is decoded and searched, and one that holds any is found
    whole, as the kind found first in it."""
    found: list[Finding] = []
    for match in _ENCODED.finditer(text):
        start, end = match.span()
        if taken.find(1, start, end) != -1:
            continue
        decoded = urllib.parse.unquote(match.group())
        if decoded == match.group():
            continue
        inner = find(decoded)
        if inner:
            taken[start:end] = b"\x01" * (end - start)
            found.append(Finding(inner[0].kind, start, end))
    return found


# --- redaction --------------------------------------------------------------------------


def _identity(kind: str, value: str) -> str:
    """The same value written two ways gets one placeholder: `+44 20 7946 0958` and
    `+442079460958`, `Ana@Example.com` and `ana@example.com`."""
    if kind == "email":
        return value.lower()
    if kind == "iban":
        return value.replace(" ", "").upper()
    if kind == "ip":
        try:
            return str(ipaddress.ip_address(value.split("%", 1)[0]))
        except ValueError:  # pragma: no cover - find only yields addresses that parse
            return value
    return re.sub(r"\D", "", value)


class _Redactor:
    """One `redact` call's state: the placeholders given so far, and the counts."""

    def __init__(self, redact_keys: Collection[str]) -> None:
        self.keys = {key.casefold() for key in redact_keys}
        self.names: dict[tuple[str, str], str] = {}
        self.next: collections.Counter[str] = collections.Counter()
        self.counts: collections.Counter[str] = collections.Counter()

        #: the containers being walked, by id: one that holds itself is not walked again
        self.path: set[int] = set()

    def reserve(self, value: Any, depth: int = 0) -> None:
        """Keep the numbers of placeholders already in `value`, so a new one never reuses
        them (redacting a redacted text again changes nothing)."""
        if isinstance(value, str):
            for match in _PLACEHOLDERS.finditer(value):
                word, number = match.groups()
                self.next[word] = max(self.next[word], int(number))
            return
        if depth > MAX_DEPTH or id(value) in self.path:
            return
        if isinstance(value, Mapping | list | tuple):
            self.path.add(id(value))
            pairs = value.items() if isinstance(value, Mapping) else ((None, v) for v in value)
            for key, item in pairs:
                self.reserve(key, depth + 1)
                self.reserve(item, depth + 1)
            self.path.discard(id(value))

    def text(self, text: str) -> str:
        # Replacing can join what is left into a new finding (rarely: a number that a
        # placeholder now ends); read again until nothing is found.
        for _ in range(8):
            findings = find(text)
            if not findings:
                return text
            parts, at = [], 0
            for finding in findings:
                parts += [text[at : finding.start], self._placeholder(text, finding)]
                at = finding.end
            parts.append(text[at:])
            text = "".join(parts)
        return text  # pragma: no cover - each pass leaves fewer characters a finding can use

    def _placeholder(self, text: str, finding: Finding) -> str:
        self.counts[finding.kind] += 1
        identity = (finding.kind, _identity(finding.kind, text[finding.start : finding.end]))
        name = self.names.get(identity)
        if name is None:
            word = PLACEHOLDER[finding.kind]
            self.next[word] += 1
            name = self.names[identity] = f"<{word}_{self.next[word]}>"
        return name

    def value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping | list | tuple):
            if depth >= MAX_DEPTH or id(value) in self.path:
                self.counts["deep"] += 1
                return REDACTED_DEEP
            self.path.add(id(value))
            try:
                return self._container(value, depth)
            finally:
                self.path.discard(id(value))
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64:
            # A card number stored as a JSON number is still one (a card has at most 19
            # digits; a longer int is no card, and may be too long for str()).
            redacted = self.text(str(value))
            return value if redacted == str(value) else redacted
        return value

    def _container(self, value: Mapping[Any, Any] | list[Any] | tuple[Any, ...], depth: int) -> Any:
        if isinstance(value, Mapping):
            result = {}
            for key, item in value.items():
                if isinstance(key, str) and key.casefold() in self.keys:
                    self.counts["key"] += 1
                    result[self.text(key)] = REDACTED_KEY
                else:
                    new_key = self.text(key) if isinstance(key, str) else key
                    result[new_key] = self.value(item, depth + 1)
            return result
        items = [self.value(item, depth + 1) for item in value]
        return items if isinstance(value, list) else tuple(items)


def redact(value: Any, redact_keys: Collection[str] = ()) -> Redaction:
    """`value` with its personal data replaced by placeholders, and the counts per kind.

    Walks strings, mappings (keys too), lists and tuples, MAX_DEPTH containers deep; an
    int that holds a finding becomes the redacted string. The value of any mapping key
    named in `redact_keys` (case-insensitive, at any depth) becomes `<REDACTED_KEY>`
    whole. The same value gets the same placeholder throughout the call; placeholders
    already in `value` keep their numbers, so `redact(redact(x).value, keys)` changes
    nothing and counts only the keys it names again. The input is not modified. Kinds
    counted: KINDS, "key", and "deep" (a container MAX_DEPTH containers down, or one that
    holds itself: replaced unread by `<REDACTED_DEEP>`).
    """
    redactor = _Redactor(redact_keys)
    redactor.reserve(value)
    return Redaction(redactor.value(value, 0), redactor.counts)


def redact_text(text: str) -> str:
    """One text with its personal data replaced (`redact` for a lone string)."""
    result: str = redact(text).value
    return result

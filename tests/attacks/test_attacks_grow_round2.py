"""Round-2 attacks on the round-1 fixes: `casegate add`'s secret masking, gate.pii, the
draft's one-key-at-a-time rendering, `casegate suite`'s names, the source size bounds.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from typing import Any

import pytest

from gate import secrets
from gate.cli import main
from gate.grow.draft import Draft, make_case, render
from gate.pii import redact_text
from gate.yamlfile import load_yaml
from tests.attacks.test_attacks_grow_round1 import add_peak_kb
from tests.conftest import Project, case

LIVE_KEY = "sk-proj-4f1c9d2b7a0e8c6b5d3a1f9e7c5b3a1d"
#: a credential by its published shape only (not one of the suite's own keys)
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _line(text: str, output: str = "wrong answer", metadata: dict[str, str] | None = None) -> str:
    request = {"model": "m", "messages": [{"role": "user", "content": text}]}
    response = {"choices": [{"message": {"role": "assistant", "content": output}}]}
    record = {"request": request, "response": response}
    if metadata is not None:
        record["metadata"] = metadata
    return json.dumps(record) + "\n"


@pytest.fixture
def grow(project: Project) -> Project:
    project.write_cases([case("known", "what are your opening hours", contains="9")])
    return project


@pytest.fixture(autouse=True)
def _no_remembered_keys() -> object:
    secrets.forget_all()
    yield
    secrets.forget_all()


def _everything(grow: Project, captured: Any) -> str:
    written = "".join(
        p.read_text() for p in (grow.root / "cases").glob("*.yaml") if p.name != "cases.yaml"
    )
    return str(captured.out) + str(captured.err) + written


# --- 1. secrets: fields that skip _without_secrets ----------------------------------------


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_token_in_a_log_records_request_id_never_reaches_the_draft(
    grow: Project, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    """A log line's `metadata.request_id` (or `id`, `trace_id`) becomes the exchange's ids,
    read before _without_secrets and never passed through it: the draft's `provenance:`
    quotes ids[0] (`casegate add from log x.jsonl:1 (request ghp_…)`), so a token a
    logging middleware put in the id field is written into the committed case."""
    log = grow.root / "ids.jsonl"
    log.write_text(_line("where is my parcel", metadata={"request_id": GITHUB_TOKEN}))
    args = ["add", "--from-log", str(log), "--force"] + (["--dry-run"] if dry_run else [])
    assert main(args) == 0
    assert GITHUB_TOKEN not in _everything(grow, capsys.readouterr())


def test_a_batch_custom_id_holding_the_suites_key_never_reaches_the_draft(
    grow: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Batch API line's custom_id is an id as well: the same path into `provenance:`."""
    monkeypatch.setenv("OPENAI_API_KEY", LIVE_KEY)
    request = {"model": "m", "messages": [{"role": "user", "content": "refund my order"}]}
    body = {"choices": [{"message": {"role": "assistant", "content": "no"}}]}
    log = grow.root / "batch.jsonl"
    log.write_text(
        json.dumps({"custom_id": LIVE_KEY, "request": request, "response": {"body": body}}) + "\n"
    )
    assert main(["add", "--from-log", str(log), "--force", "--dry-run"]) == 0
    assert LIVE_KEY not in _everything(grow, capsys.readouterr())


# --- 1. secrets: a key split or escaped in the text -----------------------------------------

_INVISIBLE = re.compile(r"[\s\u200b-\u200d\u2060\ufeff]")


@pytest.mark.parametrize("split", ["\u200b", "\n", "\u00ad"])
def test_the_suites_key_split_by_an_invisible_character_or_a_line_wrap_is_masked(
    grow: Project,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    split: str,
) -> None:
    """A log wrapped at a fixed width, or text pasted through a chat UI that inserts a
    zero-width space or a soft hyphen, holds the key in two pieces: the exact-match mask
    (gate.secrets) and the shapes (20+ key characters after `sk-proj-`) both miss it, and
    the draft quotes it whole to anyone who reads past the break. With U+200B the proposed
    case id (NFKD, ASCII only) even joins the pieces back into the key itself."""
    monkeypatch.setenv("OPENAI_API_KEY", LIVE_KEY)
    broken = LIVE_KEY[:12] + split + LIVE_KEY[12:]
    log = grow.root / "wrapped.jsonl"
    log.write_text(_line(f"{broken} is my key and it fails", output=f"bad key {broken}"))
    assert main(["add", "--from-log", str(log), "--force"]) == 0
    everything = _INVISIBLE.sub("", _everything(grow, capsys.readouterr()))
    everything += " ".join(p.name for p in (grow.root / "cases").glob("*.yaml"))
    assert LIVE_KEY not in everything.replace("\\u200b", "").replace("\\n", "")


@pytest.mark.parametrize("before", ["\\n", "\\t", "%3D", "%22", "api_key_"], ids=repr)
def test_a_credential_after_an_escape_or_url_encoding_is_masked(
    grow: Project, capsys: pytest.CaptureFixture[str], before: str
) -> None:
    """_SECRET_SHAPES starts with `\\b`: a token right after a word character is not one.
    A serialized payload quoted in a message (`{\\"error\\": \\"…:\\nghp_…\\"}`), a URL's
    query (`?key%3Dghp_…`), or a variable name glued to it puts a letter or digit before
    it, and the token is written as it was."""
    log = grow.root / "escaped.jsonl"
    log.write_text(_line(f"the call failed: {before}{GITHUB_TOKEN} what now"))
    assert main(["add", "--from-log", str(log), "--force", "--dry-run"]) == 0
    assert GITHUB_TOKEN not in _everything(grow, capsys.readouterr())


def test_defended_a_json_escaped_key_is_decoded_then_masked(
    grow: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", LIVE_KEY)
    escaped = "".join(f"\\u{ord(c):04x}" for c in LIVE_KEY)
    log = grow.root / "json-escaped.jsonl"
    line = _line("KEY is my key").replace("KEY", escaped)
    log.write_text(line)
    assert main(["add", "--from-log", str(log), "--force", "--dry-run"]) == 0
    assert LIVE_KEY not in _everything(grow, capsys.readouterr())


def test_defended_a_key_in_tool_call_arguments_is_not_drafted(
    grow: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", LIVE_KEY)
    request = {"model": "m", "messages": [{"role": "user", "content": "call it"}]}
    call = {"function": {"name": "lookup", "arguments": json.dumps({"key": LIVE_KEY})}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    log = grow.root / "tools.jsonl"
    log.write_text(
        json.dumps({"request": request, "response": {"choices": [{"message": message}]}}) + "\n"
    )
    assert main(["add", "--from-log", str(log), "--force", "--dry-run"]) == 0
    assert LIVE_KEY not in _everything(grow, capsys.readouterr())


# --- 2. gate.pii: spaces and digits the fix still misses -------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # French typography writes phone numbers with a thin space (U+2009)
        ("appelez +33\u20091\u200942\u200968\u200953\u200900", "42\u200968\u200953"),
        ("card 4111\u20021111\u20021111\u20021111 thanks", "4111\u20021111"),
        # CJK text: the ideographic space, full-width digits and @ (an IME's default)
        ("カード 4111\u30001111\u30001111\u30001111 です", "4111\u30001111"),
        ("カード ４１１１ １１１１ １１１１ １１１１ です", "１１１１ １１１１"),
        ("メール ａｎａ＠ｅｘａｍｐｌｅ．ｃｏｍ まで", "ａｎａ＠ｅｘａｍｐｌｅ"),
        ("mail ana＠example.com please", "ana＠example"),
        # a word processor's en dash, a formatted number's non-breaking hyphen (U+2011)
        ("call 415\u2013555\u20130132 now", "555\u20130132"),
        ("call (415) 555\u20110132 now", "555\u20110132"),
    ],
    ids=[
        "thin-space-phone",
        "en-space-card",
        "ideographic-space-card",
        "fullwidth-card",
        "fullwidth-email",
        "fullwidth-at",
        "en-dash-phone",
        "nb-hyphen-phone",
    ],
)
def test_personal_data_with_other_unicode_spaces_dashes_or_fullwidth_forms_is_redacted(
    text: str, secret: str
) -> None:
    """find() reads only NBSP, U+2007 and U+202F as spaces and the card and phone patterns
    are ASCII: U+2000–U+200A and U+3000 between groups, or full-width digits and `＠`
    (what a Japanese or Chinese input method types by default), hide the same number or
    address from every detector. Mapping Unicode spaces to a space and the full-width forms
    U+FF01–U+FF5E to ASCII is one character for one, as the NBSP fix already is; so is
    reading the Unicode dashes (U+2010–U+2015, U+2212) as `-`."""
    assert secret not in redact_text(text)


def test_defended_the_unicode_email_pattern_is_linear_on_adversarial_text() -> None:
    """Bounded work, not time: the text is scanned once per detector (each start boundary
    fails inside a token). Figures are reported by the round's notes, not asserted."""
    shapes = ["a@" * 50_000, "a." * 50_000 + "@", "é" * 99_999 + "@", ("a" * 63 + "@") * 1500]
    for shape in shapes:
        out = subprocess.run(
            [sys.executable, "-c", "import sys; from gate.pii import find; find(sys.stdin.read())"],
            input=shape,
            text=True,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert out.returncode == 0


# --- 5. the draft must load back as the draft ------------------------------------------------


@pytest.mark.parametrize("text", ["my order never came...", "see http:...", "x\n..."], ids=repr)
def test_a_text_ending_in_an_ellipsis_drafts_as_written(text: str) -> None:
    """The `|+` fix strips a trailing `...\\n` from every key's dump, not just PyYAML's
    document-end marker: a plain scalar ending in `...` (a message trailing off, the most
    common ending there is) loses its ellipsis in the draft's input and in the proposed
    not_contains, and `see http:...` becomes `question: see http:`, which does not load:
    the suite it joins stops validating."""
    drafted = make_case("c1", {"question": text}, {"not_contains": text}, "p", dt.date(2026, 1, 1))
    [read] = load_yaml(render([Draft(drafted, {})], []))
    assert read == drafted


@pytest.mark.parametrize(
    "text",
    ["a\n---\nb", "  lead\nx", "key: v\n- x", "x\r\ny", "%YAML 1.1\n---", "\n\nx"],
    ids=repr,
)
def test_defended_document_markers_indentation_and_keys_in_a_text_draft_as_written(
    text: str,
) -> None:
    drafted = make_case("c1", {text: text}, {"not_contains": text}, text, dt.date(2026, 1, 1))
    [read] = load_yaml(render([Draft(drafted, {"expect": [text]})], [text]))
    assert read == drafted


# --- 4. casegate suite: names ---------------------------------------------------------------


def test_defended_line_separators_and_unicode_spaces_before_a_command_in_a_tag(
    grow: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ["\u2028::error::x", "\x85::error::x", "\u3000::error::x", "\t::warning::y"]
    grow.write_cases([case("a", "q", contains="x", fields_={"tags": names})])
    assert main(["suite"]) == 0
    out = capsys.readouterr().out
    for line in re.split(r"[\n\r\u2028\u2029\x85\x0b\x0c]", out):
        assert not line.strip().startswith("::"), line


# --- 6. memory under the container count ---------------------------------------------------


def test_a_source_of_short_strings_does_not_take_gigabytes(grow: Project) -> None:
    """Round 1 counted only `{` and `[` (now MAX_VALUES counts `,` too), but a two-letter string costs as much as a small
    object: `"ab",` is 5 bytes of JSON and ~60 of Python (a 51-byte str and its list slot),
    one container for the lot. 32 MB peaks past the 400 MB the round-1 test allows `{},`,
    and the 256 MB a source may be takes ~4.5 GB (measured: 613 MB for 32 MB)."""
    count = 32 * 1024 * 1024 // 5
    source = grow.root / "spans.json"
    # One escaped lone surrogate makes `parsed` copy every list once more (_whole).
    source.write_text('{"resourceSpans": ["\\ud800", ' + '"ab",' * count + '"ab"]}')
    peak_kb = add_peak_kb(grow, source)
    assert peak_kb < 400 * 1024, f"peak {peak_kb / 1024:.0f} MB for a 32 MB source"


def test_the_proposed_case_id_never_rejoins_a_key_split_by_a_zero_width_space(
    grow: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """propose_id NFKD-normalises and drops what is not ASCII, so `sk-proj-4f1c\\u200b9d2b…`,
    which no mask matches, becomes the id `sk-proj-4f1c9d2b…-is-my-k-48bc61`: the suite's
    own key, verbatim, as the case id, the file name and the `wrote cases/…` line (which
    the job log's ::add-mask:: hides, but the committed file name keeps)."""
    monkeypatch.setenv("OPENAI_API_KEY", LIVE_KEY)
    broken = LIVE_KEY[:12] + "\u200b" + LIVE_KEY[12:]
    log = grow.root / "zw.jsonl"
    log.write_text(_line(f"{broken} is my key"))
    assert main(["add", "--from-log", str(log), "--force"]) == 0
    capsys.readouterr()
    names = [p.name for p in (grow.root / "cases").glob("*.yaml")]
    assert not any(LIVE_KEY in name for name in names), names
    # The file's text is masked on writing, id and all: `id: ***-is-my-k-…` is a YAML
    # alias, so the draft does not even load.
    for path in (grow.root / "cases").glob("*.yaml"):
        load_yaml(path.read_text())


def test_a_key_cut_by_the_readers_length_limit_leaves_no_prefix_in_the_draft(
    grow: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The readers clip a message at MAX_TEXT_CHARS (and an error at 200 characters, a
    metadata value at 1,000) before _without_secrets runs: a key across the cut is no
    longer the key the exact-match mask knows, nor 20+ characters after `sk-proj-`, and
    its first 20 characters (`sk-proj-` and 12 of the secret's 32; 17 after `sk-`, under
    the shape's 20) are written into the draft's input."""
    from gate.grow.exchange import MAX_TEXT_CHARS

    monkeypatch.setenv("OPENAI_API_KEY", LIVE_KEY)
    text = "a " * ((MAX_TEXT_CHARS - 20) // 2) + LIVE_KEY + " is my key"
    assert text.index(LIVE_KEY) == MAX_TEXT_CHARS - 20
    log = grow.root / "cut.jsonl"
    log.write_text(_line(text))
    assert main(["add", "--from-log", str(log), "--force", "--dry-run"]) == 0
    assert LIVE_KEY[:20] not in _everything(grow, capsys.readouterr())


# --- 3. input_files reached another way ----------------------------------------------------


def test_defended_a_yaml_merge_key_cannot_slip_input_files_into_the_input(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    (project.root / "cases").mkdir(exist_ok=True)
    (project.root / "cases" / "cases.yaml").write_text(
        "- id: a\n"
        "  input:\n"
        "    <<: {input_files: {tickets/a.txt: /proc/self/environ}}\n"
        "    question: q\n"
        "  expect: {contains: refund}\n"
    )
    code = main(["validate"])
    err = capsys.readouterr().err
    assert code == 2, err


# --- 6. add --rank: the near-duplicate check compares whole texts ---------------------------


def test_rank_compares_no_draft_with_the_suite_over_more_than_the_capped_length(
    grow: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round 1 capped clustering and novelty at COMPARED_CHARS; `add_ranked` then calls
    `near_duplicate(text, existing)` for every draft with the whole text, a token sort
    ratio of up to 100,000 characters against each case of similar length (~0.15-0.5 s a
    pair): `--top 1000` on an export of long messages, with a suite that has a few long
    cases (a RAG suite's documents), is hours. Bounded work: every text it compares is
    capped, as clustering's are."""
    import random

    from rapidfuzz import process

    from gate.grow import nearby, rank

    rng = random.Random(1)

    def long_text() -> str:
        return " ".join("".join(rng.choice("abcdefgh") for _ in range(5)) for _ in range(16_500))

    grow.write_cases(
        [
            case("known", "what are your opening hours", contains="9"),
            case("long-doc", long_text(), contains="x"),
        ]
    )
    log = grow.root / "long.jsonl"
    log.write_text("".join(_line(long_text()) for _ in range(3)))
    compared: list[int] = []
    real = process.extractOne

    def counting(query, choices, *args, **kwargs):  # type: ignore[no-untyped-def]
        compared.append(max(len(query), *(len(c) for c in dict(choices).values())))
        return real(query, choices, *args, **kwargs)

    monkeypatch.setattr(nearby.process, "extractOne", counting)  # type: ignore[attr-defined]
    assert main(["add", "--from-log", str(log), "--rank", "--dry-run", "--force"]) == 0
    assert compared and max(compared) <= rank.COMPARED_CHARS, compared


# --- 1. secrets: a LangSmith run's id and its named inputs' keys ------------------------------


@pytest.mark.parametrize("where", ["run-id", "input-key"])
def test_a_token_as_a_langsmith_run_id_or_input_name_never_reaches_the_draft(
    grow: Project, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """_without_secrets masks the values of `fields` (a chain's named inputs), not their
    names; with an `input_schema:` the draft takes the fields whole, names and all. A run's
    id goes into `provenance:` (`casegate add from langsmith runs.json run ghp_…`)."""
    import yaml

    data = yaml.safe_load(grow.config_path.read_text())
    data["input_schema"] = {
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    }
    grow.config_path.write_text(yaml.safe_dump(data))
    inputs = {"question": "can I get a refund"}
    if where == "input-key":
        inputs[GITHUB_TOKEN] = "x"
    run = {
        "id": GITHUB_TOKEN if where == "run-id" else "run-1",
        "run_type": "chain",
        "inputs": inputs,
        "outputs": {"output": "no"},
    }
    source = grow.root / "runs.json"
    source.write_text(json.dumps([run]))
    assert main(["add", "--from-langsmith", str(source), "--force", "--dry-run"]) == 0
    assert GITHUB_TOKEN not in _everything(grow, capsys.readouterr())


def test_defended_defaults_cannot_give_every_case_an_input(
    grow: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    data = yaml.safe_load(grow.config_path.read_text())
    data["defaults"] = {"input": {"input_files": {"tickets/a.txt": "/proc/self/environ"}}}
    grow.config_path.write_text(yaml.safe_dump(data))
    assert main(["validate"]) == 2


# --- 2. gate.pii: URL-encoded data, and ids that skip redaction --------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("GET /password-reset?email=ana.mueller%40example.de&x=1", "ana.mueller%40example.de"),
        ("GET /call?to=%2B442079460958 failed", "442079460958"),
        ("POST /pay?card=4111%201111%201111%201111 declined", "4111%201111%201111%201111"),
    ],
    ids=["email-%40", "phone-%2B", "card-%20"],
)
def test_personal_data_in_a_url_encoded_query_is_redacted(text: str, secret: str) -> None:
    """Request logs quote URLs (a tool call's fetch, a link the user pasted, the app's
    own request line), where `@` is `%40`, `+` is `%2B` and a space is `%20`: no detector
    reads through the encoding, and the `%2B`/`%20` glue a word character to the number,
    so the start boundary fails even where the digits are plain."""
    assert secret not in redact_text(text)


def test_an_email_as_a_logs_trace_id_is_redacted_from_the_draft(
    grow: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """`_redacted` walks messages, output, tool calls, error, flag, fields and metadata,
    but not `ids`: a trace keyed on the user's address (`trace_id: ana@example.com`, a
    session id that is the login) is quoted by the draft's `provenance:` and by stderr."""
    log = grow.root / "trace.jsonl"
    log.write_text(_line("where is my parcel", metadata={"trace_id": "ana.mueller@example.de"}))
    assert main(["add", "--from-log", str(log), "--force"]) == 0
    assert "ana.mueller@example.de" not in _everything(grow, capsys.readouterr())


# --- 1/2. --from-results: the failed checks' reasons quote the output ------------------------


@pytest.mark.parametrize("quoted", ["ana.mueller@example.de", GITHUB_TOKEN], ids=["email", "token"])
def test_a_failed_checks_reason_quoting_the_output_is_redacted_in_the_draft(
    project: Project, capsys: pytest.CaptureFixture[str], quoted: str
) -> None:
    """`--from-results` masks and redacts the failing output (an Exchange), but the draft's
    `# failed CHECK: REASON` comments are the results file's reasons as they are, and a
    reason may quote the output: starts_with shows its first 40 characters, a judge its
    rationale. A system that answers with a customer's address (or echoes a token) puts
    it in the committed draft's comments, where `# the output was:` is redacted."""
    project.write_system(
        f"def answer(case_input, system):\n    return {quoted!r} + ' is on file for you'\n"
    )
    expected = "Sorry, I cannot share account details with you"
    project.write_cases([case("privacy", "what email do you have for me", starts_with=expected)])
    assert main(["run", "--mode", "live", "--out", "r.json", "--quiet"]) in (0, 1)
    capsys.readouterr()
    assert main(["add", "--from-results", "r.json", "--case", "privacy", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "# the output was: " in out and "failed starts_with" in out
    assert quoted not in out


# --- 1. credential shapes the list leaves out ------------------------------------------------

PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"
    "\n-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("token", "inner"),
    [
        ("sk_live_" + "51H8xYzAbCdEfGhIjKlMnOpQrStUvWxYz0123", "51H8xYzAbCdEfGhIjKlMnOpQrSt"),
        ("AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "SyA1b2C3d4E5f6G7h8I9j0K1l2M3"),
        ("hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "AbCdEfGhIjKlMnOpQrStUvWxYz0"),
        (PRIVATE_KEY, "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"),
    ],
    ids=["stripe-secret", "google-api-key", "huggingface", "pem-private-key"],
)
def test_common_credential_shapes_beyond_the_listed_providers_are_masked(
    grow: Project, capsys: pytest.CaptureFixture[str], token: str, inner: str
) -> None:
    """_SECRET_SHAPES knows OpenAI, Anthropic, GitHub, AWS key ids, Slack and JWTs: a
    Stripe secret key (`sk_live_`, underscore: not `sk-`), a Google API key (`AIza…`), a
    Hugging Face token and a PEM private key block — what a support log or a developer's
    pasted traceback holds as often — are written into the draft as they are."""
    log = grow.root / "creds.jsonl"
    log.write_text(_line(f"my config is: {token} - why does it fail"))
    assert main(["add", "--from-log", str(log), "--force", "--dry-run"]) == 0
    assert inner not in _everything(grow, capsys.readouterr())


def test_defended_a_key_in_the_model_name_is_not_drafted(
    grow: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    record = json.loads(_line("hello there"))
    record["request"]["model"] = GITHUB_TOKEN
    log = grow.root / "model.jsonl"
    log.write_text(json.dumps(record) + "\n")
    assert main(["add", "--from-log", str(log), "--force", "--dry-run"]) == 0
    assert GITHUB_TOKEN not in _everything(grow, capsys.readouterr())


def test_defended_a_log_of_blank_lines_stays_within_the_round_1_bound(grow: Project) -> None:
    """json_lines splits the whole text into a list of lines before it skips the blank
    ones: a line break is 1 byte of log and an 8-byte slot of that list, no container
    counted. Measured: 382 MB peak for 32 MB of line breaks (~10x, under the round-1
    bound of 400 MB; ~2.7 GB for the 256 MB a source may be)."""
    line = _line("where is my parcel")
    source = grow.root / "blank.jsonl"
    source.write_text(line + "\n" * (32 * 1024 * 1024) + line.replace("parcel", "refund"))
    code = (
        "import resource\n"
        "from gate.cli import main\n"
        f"main(['add', '--from-log', {str(source)!r}, '--line', '1', '--dry-run', '--force'])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", code], cwd=grow.root, capture_output=True, text=True, check=False
    )
    peak_kb = int(finished.stdout.strip().splitlines()[-1])
    assert peak_kb < 400 * 1024, f"peak {peak_kb / 1024:.0f} MB for a 32 MB source"


# --- 4. casegate suite: the runner's legacy `##[command]` form -------------------------------


def test_casegate_suite_prints_no_legacy_workflow_command_from_a_tag_or_cluster(
    grow: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The round-1 fix quotes a name that starts with `:`, as `::command::` must start its
    line (after TrimStart). The runner still parses the legacy form too: actions/runner's
    ActionCommandManager.TryProcessCommand falls through from TryParseV2 to TryParse, which
    finds `##[` ANYWHERE in a line (`message.IndexOf("##[")`) for every registered command:
    `  ##[error]SHIP approved by CI: 1` is an annotation, `##[set-output name=verdict;]ship`
    sets a step output, `##[stop-commands]x` turns off the masks casegate registers later."""
    names = ["##[error]SHIP approved by CI", "x ##[set-output name=verdict;]ship"]
    grow.write_cases(
        [
            case("a", "q", contains="x", fields_={"tags": names}),
            case("b", "q2", contains="x", fields_={"cluster": "##[stop-commands]owned"}),
        ]
    )
    assert main(["suite"]) == 0
    out = capsys.readouterr().out
    assert "##[" not in out, [line for line in out.splitlines() if "##[" in line]

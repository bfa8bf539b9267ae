"""Each source's published shape, read into exchanges (tests/data/grow holds the fixtures)."""

from __future__ import annotations

from pathlib import Path

from gate.grow.logs import read_log
from gate.grow.otel import read_otel
from gate.grow.platforms import read_langfuse, read_langsmith

DATA = Path(__file__).resolve().parents[1] / "data" / "grow"


def test_a_request_log_reads_both_shapes_and_joins_a_batch_line_with_its_request() -> None:
    first, second, batch = read_log(DATA / "requests.jsonl")
    assert (first.line, first.kind, first.model) == (1, "log", "gpt-4.1-mini")
    assert first.user_text() == "Can I get my refund as store credit instead of on my card?"
    assert first.output is not None and first.output.startswith("Refunds are issued")
    assert (first.input_tokens, first.output_tokens) == (41, 14)
    assert first.flagged == "user.feedback=negative"
    assert first.metadata["env"] == "prod" and first.ids == ("req-7f3a",)
    # content as a list of parts, a tool call and no text
    assert second.user_text() == "Where is order A12345?"
    assert second.tool_calls == ("lookup_order",) and second.output == ""
    assert second.flagged is None
    # the Batch API output line (line 4) took its messages from the input line (line 3)
    assert (batch.kind, batch.line, batch.ids) == ("batch", 4, ("batch-req-1", "batch_req_abc"))
    assert batch.user_text() == "Do you ship to Norway?"
    assert batch.output == "Yes, we ship to Norway within 2 days."


def test_otel_reads_the_current_attributes_and_both_older_event_forms() -> None:
    spans = {e.ids[0]: e for e in read_otel(DATA / "otel.json")}
    # the HTTP span has no gen_ai.* attribute: not a model call
    assert set(spans) == {"eee19b7ec3c1b174", "b7ad6b7169203331", "c1d2e3f4a5b6c7d8"}
    new = spans["eee19b7ec3c1b174"]
    assert [m.role for m in new.messages] == ["system", "user"]
    assert new.user_text() == "My parcel arrived damaged, what now?"
    assert new.output == "Please send the parcel back at your own cost."
    assert new.tool_calls == ("open_ticket",)
    assert new.error == "span status ERROR: content filter tripped"
    assert new.flagged == "casegate.flagged=true"
    assert (new.model, new.input_tokens, new.output_tokens) == ("gpt-4.1-mini", 52, 31)
    assert new.ids[1] == "5b8efff798038103d269b633813fc60c"  # the trace id picks it too
    assert new.metadata["service.name"] == "support-bot"  # the resource's, for --select
    prompt_events = spans["b7ad6b7169203331"]
    assert prompt_events.user_text() == "How long do refunds take?"
    assert prompt_events.output == "Refunds take 30 business days."
    assert prompt_events.error is None and prompt_events.tokens() == 32
    message_events = spans["c1d2e3f4a5b6c7d8"]
    assert [m.role for m in message_events.messages] == ["system", "user"]
    assert message_events.output == "No, addresses cannot be changed."


def test_langsmith_keeps_the_model_calls_and_gives_them_the_root_runs_feedback() -> None:
    runs = {e.ids[0]: e for e in read_langsmith(DATA / "langsmith_runs.json")}
    assert set(runs) == {
        "3f0e2a9b-6c4d-4e8f-a1b2-c3d4e5f60718",
        "aa11bb22-cc33-4d44-8e55-ff6677889900",
    }
    chat = runs["3f0e2a9b-6c4d-4e8f-a1b2-c3d4e5f60718"]
    assert [m.role for m in chat.messages] == ["system", "user"]  # LangChain's serialised form
    assert chat.output == "The warranty is five years."
    assert chat.flagged == "feedback user_score avg 0"  # from the chain run it ran under
    assert chat.fields == {"question": "Is the warranty two years?"}
    assert chat.model == "gpt-4o-mini" and chat.cost_usd == 8.1e-06
    failed = runs["aa11bb22-cc33-4d44-8e55-ff6677889900"]
    assert failed.error == "run error: RateLimitError: 429 Too Many Requests"
    assert failed.output is None


def test_langfuse_reads_a_traces_generations_and_a_lone_observation() -> None:
    scored, errored = read_langfuse(DATA / "langfuse_traces.json")
    assert scored.ids == ("obs-gen-1", "trace-2c9f")  # the SPAN observation is not a call
    assert scored.user_text() == "Can I return sale items?"
    assert scored.output == "Sale items cannot be returned."
    assert scored.flagged == "score user-feedback=0"
    assert (scored.input_tokens, scored.output_tokens, scored.cost_usd) == (30, 8, 0.00042)
    assert errored.error == "level ERROR: upstream timeout"
    assert errored.user_text() == "What is your phone number?"
    assert errored.output is None

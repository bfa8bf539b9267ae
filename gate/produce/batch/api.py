"""One provider's batch API behind one protocol: submit, poll, read the results.

An adapter turns every SDK failure into a `Transient` (worth polling again) or a
`SystemCallError` (not), through the provider's own `ChatProvider.failure`, so a
batch reports an outage in the words a call would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from gate.outputs import Output

if TYPE_CHECKING:
    from gate.systems.chat import ChatProvider


@dataclass(frozen=True, slots=True)
class Status:
    """Where a batch is. `finished` counts requests done either way, `failed` the
    errored ones among them, when the provider says (0 until it does)."""

    ended: bool
    state: str
    finished: int = 0
    failed: int = 0
    #: why the whole batch failed (OpenAI's `failed`: the input did not validate)
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Line:
    """One result line: an output, or the reason there is none. `custom_id` is None for
    a line that could not be read at all."""

    custom_id: str | None
    output: Output | None = None
    error: str | None = None


class BatchAPI(Protocol):
    @property
    def provider(self) -> str: ...

    @property
    def limit(self) -> int:
        """The most requests one batch may hold."""
        ...

    def submit(self, requests: Sequence[tuple[str, dict[str, Any]]]) -> str:
        """Submit (custom id, request body) pairs; returns the provider's batch id."""
        ...

    def status(self, batch_id: str) -> Status: ...

    def results(self, batch_id: str, status: Status) -> list[Line]:
        """Every line of an ended batch's results (and errors), in any order."""
        ...


T = TypeVar("T")


class ProviderBatches:
    """What both providers' batch adapters share: the live system's client, and its
    failures reported as a call's would be (SystemCallError, with the reason)."""

    def __init__(self, system: ChatProvider) -> None:
        self.system = system
        self.client = system.client

    def _call(self, action: Callable[[], T]) -> T:
        try:
            return action()
        except Exception as exc:
            raise self.system.failure(exc) from None


def short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

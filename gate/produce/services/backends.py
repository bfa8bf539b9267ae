"""Who answers a service request: OpenAI's API through its SDK, or a python callable.

Both are built only in live and record modes, and only in the process that runs
the suite (the supervised child under `check`): a python target is the suite's
own code, and replay never needs either.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from gate import secrets
from gate.errors import SystemCallError
from gate.suite.pins import ServicePin
from gate.systems.retry import RetryPolicy, Transient, retry_after_seconds

T = TypeVar("T")

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: exceptions that mean a response body was not what the API promises
MALFORMED = (AttributeError, KeyError, TypeError, ValueError, IndexError)


class ServiceError(SystemCallError):
    """A service could not answer: the sample becomes an error, named after the service."""

    def __init__(self, service: str, reason: str) -> None:
        super().__init__(reason)
        self.service = service


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class OpenAIBackend:
    """The official `openai` SDK, with casegate's one retry policy (the SDK's is off)."""

    def __init__(self, pin: ServicePin, service: str) -> None:
        self.service = service
        self.variable = pin.api_key_env or DEFAULT_KEY_ENV
        key = secrets.read_key(self.variable, service)
        self.module = importlib.import_module("openai")  # first use only: replay never loads it
        options: dict[str, Any] = {"api_key": key, "timeout": pin.timeout_s, "max_retries": 0}
        if pin.base_url:
            options["base_url"] = pin.base_url
        self.client = self.module.OpenAI(**options)
        self.timeout_s = pin.timeout_s
        self.retry = RetryPolicy(pin.max_retries)

    def call(self, request: Callable[[Any], T]) -> T:
        """`request(client)` sends and parses; retried on 408/409/429/5xx, timeouts, a
        malformed body; ServiceError after the last attempt or on any other failure."""

        def attempt() -> T:
            try:
                return request(self.client)
            except Transient:
                raise
            except Exception as exc:
                raise self._failure(exc) from None

        try:
            return self.retry.call(attempt)
        except SystemCallError as exc:
            raise ServiceError(self.service, secrets.redact(str(exc))) from None

    def _failure(self, exc: Exception) -> Exception:
        sdk = self.module
        if isinstance(exc, sdk.APIStatusError):
            status = exc.status_code
            detail = secrets.redact(_short(str(getattr(exc, "message", exc))))
            reason = f"openai API answered HTTP {status}: {detail}"
            if status in (408, 409, 429) or status >= 500:
                response = getattr(exc, "response", None)
                return Transient(reason, retry_after_seconds(getattr(response, "headers", None)))
            if status in (401, 403):
                reason += f" (check the key in {self.variable})"
            return SystemCallError(reason)
        if isinstance(exc, sdk.APITimeoutError):
            return Transient(f"openai API timed out after {self.timeout_s:g}s")
        if isinstance(exc, sdk.APIConnectionError):
            cause = exc.__cause__ or exc
            return Transient(f"cannot reach the openai API: {_short(str(cause), 120)}")
        if isinstance(exc, MALFORMED):
            return Transient(f"malformed response body ({type(exc).__name__}: {_short(str(exc))})")
        return SystemCallError(secrets.redact(f"{type(exc).__name__}: {_short(str(exc))}"))


class PythonBackend:
    """`target: module:function`, called with a list of texts, under the pin's timeout."""

    def __init__(self, pin: ServicePin, service: str, root: Path) -> None:
        from gate.usercode import load_callable

        assert pin.target is not None  # ServicePin.problems refuses a python pin without one
        self.service = service
        self.target = pin.target
        self.timeout_s = pin.timeout_s
        self.function = load_callable(pin.target, f"{service}.target", root)

    def call(self, texts: Sequence[str]) -> Any:
        from gate.systems.python import call_with_timeout

        try:
            return call_with_timeout(lambda: self.function(list(texts)), self.timeout_s)
        except SystemCallError as exc:
            raise ServiceError(self.service, f"{self.target}: {exc}") from None
        except Exception as exc:  # the suite's own code: its failure is that sample's error
            raise ServiceError(
                self.service, secrets.redact(f"{self.target} raised {type(exc).__name__}: {exc}")
            ) from None
        except SystemExit as exc:
            raise ServiceError(
                self.service, f"{self.target} called sys.exit({exc.code!r})"
            ) from None

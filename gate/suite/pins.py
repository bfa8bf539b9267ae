"""`embeddings:` and `moderation:` in the config: the services some checks measure with.

They are part of the instrument, like the judge pin: their provider, model and
target are in the key of every recorded vector or score, and a pull request that
changes them changes the ruler. Pure data: this module imports no provider.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Provider = Literal["openai", "python"]


class ServicePin(BaseModel):
    """What `embeddings:` and `moderation:` share: who answers, and how it is reached."""

    model_config = ConfigDict(extra="forbid")

    #: `openai` (the service's API) or `python` (a function of yours)
    provider: Provider = "openai"
    #: openai: the model id; python: an optional label, recorded and shown
    model: str | None = Field(default=None, min_length=1)
    #: python: `module:function` beside the config
    target: str | None = Field(default=None, min_length=1)
    #: openai: another endpoint speaking the same API (a gateway, a local server)
    base_url: str | None = None
    #: openai: the environment variable holding the key (default OPENAI_API_KEY)
    api_key_env: str | None = Field(default=None, min_length=1)
    #: seconds a call may take
    timeout_s: float = Field(default=60.0, gt=0)
    #: retries of a failed call (rate limits, 5xx), with backoff
    max_retries: int = Field(default=4, ge=0, le=20)

    def problems(self, key: str) -> list[str]:
        """What the provider needs and the pin lacks (or names in vain), as `key.field: …`."""
        found = []
        if self.provider == "openai":
            if self.model is None:
                found.append(f"{key}.model is required for provider 'openai' (a model id)")
            if self.target is not None:
                found.append(f"{key}.target is only for provider 'python'")
        else:
            if self.target is None:
                found.append(f"{key}.target is required for provider 'python' (module:function)")
            for name in ("base_url", "api_key_env"):
                if getattr(self, name) is not None:
                    found.append(f"{key}.{name} is only for provider 'openai'")
        return found

    def describe(self) -> str:
        if self.provider == "python":
            label = f" ({self.model})" if self.model else ""
            return f"python {self.target}{label}"
        return f"openai {self.model}"

    def identity(self) -> dict[str, object]:
        """What the service is, for recording keys: not how it is reached."""
        return self.model_dump(include={"provider", "model", "target"}, exclude_none=True)


class EmbeddingsPin(ServicePin):
    """`embeddings:`: the model `similar` (method embedding) compares texts with."""


class ModerationPin(ServicePin):
    """`moderation:`: the classifier the `moderation` check scores outputs with."""

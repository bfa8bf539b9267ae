"""What a batch answer cost: `pricing:`'s `batch_input`/`batch_output`, per million tokens.

casegate guesses no provider's discount: a price without its batch figures costs a
batch answer at the normal price, and the run says once which key to add.
"""

from __future__ import annotations

from gate.outputs import Output
from gate.suite.config import LoadedConfig


def price_key(loaded: LoadedConfig, model: str | None) -> str | None:
    """The `pricing:` entry `LoadedConfig.cost_of` would use for this model."""
    pricing = loaded.config.pricing
    for name in (model or "", loaded.config.system.model or ""):
        if name in pricing:
            return name
    return None


def batch_cost(loaded: LoadedConfig, output: Output) -> tuple[float | None, list[str]]:
    """(cost, keys to add): the cost at batch prices (None when unknown, as `cost_of`
    says), and each `pricing.MODEL.batch_*` key that was missing (its normal price used)."""
    key = price_key(loaded, output.model)
    if key is None or (output.input_tokens is None and output.output_tokens is None):
        return None, []
    price = loaded.config.pricing[key]
    missing = [
        f"pricing.{key}.{name}"
        for name, value in (
            ("batch_input", price.batch_input),
            ("batch_output", price.batch_output),
        )
        if value is None
    ]
    per_input = price.input if price.batch_input is None else price.batch_input
    per_output = price.output if price.batch_output is None else price.batch_output
    cost = ((output.input_tokens or 0) * per_input + (output.output_tokens or 0) * per_output) / 1e6
    return cost, missing

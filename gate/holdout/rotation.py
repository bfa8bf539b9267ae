"""The seeded swap between the readable cases and the slice.

The same seed over the same cases chooses the same swap: both sides are sorted by
id before a `random.Random(seed)` draws from them, so a rotation can be repeated
(and checked) from its log line. The slice keeps its size: as many readable cases
move in as held-out cases move out.
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def swap_size(fraction: float, held: int, readable: int) -> int:
    """How many cases move each way: `fraction` of the slice (at least one), as far as
    the readable side can give."""
    if not 0 < fraction <= 1:
        raise ValueError(f"the fraction must be above 0 and at most 1, not {fraction}")
    return min(max(1, round(fraction * held)), held, readable)


def choose(
    held: Sequence[str], readable: Sequence[str], fraction: float, seed: int
) -> tuple[list[str], list[str]]:
    """(held-out ids that move out, readable ids that move in), both sorted."""
    count = swap_size(fraction, len(held), len(readable))
    draw = random.Random(seed)
    leaving = draw.sample(sorted(held), count)
    arriving = draw.sample(sorted(readable), count)
    return sorted(leaving), sorted(arriving)

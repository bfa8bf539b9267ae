"""`--shard I/N`: one of N slices of the suite, for a CI matrix of N jobs.

A case belongs to the shard its id hashes to, so adding or removing a case never
moves another one between shards, and every job computes the same partition
without talking to the others. A shard's results are a part, never a verdict:
`casegate merge` joins all N parts into one run, which alone can be gated.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from gate.errors import ConfigError

#: more jobs than this is not a matrix GitHub will run (256 jobs per matrix)
MAX_SHARDS = 256
_SPEC = re.compile(r"([0-9]{1,4})/([0-9]{1,4})")


def shard_of(case_id: str, count: int) -> int:
    """The 1-based shard `case_id` belongs to among `count`."""
    digest = hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


@dataclass(frozen=True, slots=True)
class Shard:
    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`I/N` as typed on the command line or in the Action's `shard` input."""
        match = _SPEC.fullmatch(text.strip())
        if match is None:
            raise ConfigError(
                f"--shard {text!r}: expected I/N, e.g. 2/4 for the second of four shards"
            )
        return cls.of(int(match[1]), int(match[2]), f"--shard {text.strip()}")

    @classmethod
    def of(cls, index: Any, count: Any, where: str = "shard") -> Shard:
        if (
            type(index) is not int  # a results file's JSON: a bool or a float is not a shard
            or type(count) is not int
            or not 1 <= count <= MAX_SHARDS
            or not 1 <= index <= count
        ):
            raise ConfigError(
                f"{where}: expected I/N with 1 <= I <= N <= {MAX_SHARDS}, found {index!r}/{count!r}"
            )
        return cls(index, count)

    @classmethod
    def stored(cls, data: Any, where: str) -> Shard | None:
        """The shard a results file records (`shard: {index, count}`), or None."""
        if data is None:
            return None
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: `shard` must be a mapping of index and count")
        return cls.of(data.get("index"), data.get("count"), where)

    def includes(self, case_id: str) -> bool:
        return shard_of(case_id, self.count) == self.index

    def to_dict(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

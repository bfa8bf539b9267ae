"""The embeddings service: texts to vectors, compared by cosine similarity.

Vectors are held as 32-bit floats, the precision the API returns them in, and
recorded as base64 of their little-endian bytes: one line per vector instead of
1,536, and the same numbers whether a score is computed live or from a
recording, so a replayed score is exactly the recorded run's.
"""

from __future__ import annotations

import base64
import math
import numbers
import struct
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from gate.produce.services.backends import OpenAIBackend, PythonBackend, ServiceError
from gate.produce.services.recorded import RecordedService

Vector = tuple[float, ...]
#: more dimensions than any embedding model has: a bigger answer is a bug, not a vector
MAX_DIMENSIONS = 65_536
_FLOAT32_MAX = 3.4028234663852886e38


def plain(value: Any) -> Any:
    """A NumPy array (what most embedding libraries return) as nested lists; else as is."""
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value


def as_float32(values: Any) -> Vector:
    """Finite numbers as 32-bit floats; ValueError naming what is wrong."""
    values = plain(values)
    if not isinstance(values, Sequence) or isinstance(values, str | bytes):
        raise ValueError(f"a vector must be a list of numbers, not {type(values).__name__}")
    if not 0 < len(values) <= MAX_DIMENSIONS:
        raise ValueError(f"a vector must have 1 to {MAX_DIMENSIONS:,} numbers, not {len(values)}")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(
                f"a vector holds {type(value).__name__} {repr(value)[:40]}, not a number"
            )
        if not _finite(value) or abs(float(value)) > _FLOAT32_MAX:
            raise ValueError(f"a vector holds {repr(value)[:40]}, not a finite 32-bit number")
    packed = struct.pack(f"<{len(values)}f", *(float(value) for value in values))
    return struct.unpack(f"<{len(values)}f", packed)


def _finite(value: numbers.Real) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int past any float
        return False


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity in [-1, 1]; ValueError for vectors of different sizes or a zero one."""
    if len(a) != len(b):
        raise ValueError(f"the vectors have {len(a)} and {len(b)} dimensions")
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if norm == 0:
        raise ValueError("a vector is all zeros, so no angle can be measured")
    return max(-1.0, min(1.0, math.fsum(x * y for x, y in zip(a, b, strict=True)) / norm))


class Embedder(RecordedService):
    service: ClassVar[str] = "embeddings"
    noun: ClassVar[str] = "embedding"

    def similarity(self, case_id: str, reference: str, text: str) -> float:
        """Cosine similarity of the two texts' embeddings; ServiceError when there are none."""
        first, second = self.answers(case_id, [reference, text])
        try:
            return cosine(first, second)
        except ValueError as exc:
            raise ServiceError(self.service, f"{self.describe()}: {exc}") from None

    def ask(self, backend: OpenAIBackend | PythonBackend, texts: list[str]) -> list[Vector]:
        if isinstance(backend, PythonBackend):
            return _vectors(backend.call(texts), len(texts), backend.target)
        model = self.pin.model

        def request(client: Any) -> list[Vector]:
            # Floats, not the SDK's default base64: every OpenAI-compatible server speaks them.
            response = client.embeddings.create(model=model, input=texts, encoding_format="float")
            data = sorted(response.data, key=lambda item: item.index)
            if len(data) != len(texts):
                raise ValueError(f"{len(data)} embeddings for {len(texts)} texts")
            return [as_float32(item.embedding) for item in data]

        return backend.call(request)

    def encode(self, value: Vector) -> dict[str, Any]:
        packed = struct.pack(f"<{len(value)}f", *value)
        return {"dimensions": len(value), "vector": base64.b64encode(packed).decode("ascii")}

    def decode(self, entry: Mapping[str, Any]) -> Vector:
        packed = base64.b64decode(entry["vector"], validate=True)
        count = len(packed) // 4
        if count * 4 != len(packed) or count != entry["dimensions"] or count == 0:
            raise ValueError("its vector does not hold `dimensions` 32-bit numbers")
        return as_float32(struct.unpack(f"<{count}f", packed))


def _vectors(value: Any, count: int, target: str) -> list[Vector]:
    value = plain(value)
    if not isinstance(value, Sequence) or isinstance(value, str | bytes) or len(value) != count:
        raise ServiceError(
            "embeddings",
            f"{target} returned {_shape(value)} for {count} texts; "
            "return one vector (a list of numbers) per text",
        )
    try:
        return [as_float32(vector) for vector in value]
    except ValueError as exc:
        raise ServiceError("embeddings", f"{target}: {exc}") from None


def _shape(value: Any) -> str:
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return f"{len(value)} item(s)"
    return type(value).__name__

"""`gate.files.parse_json` for documents read by the thousand: case lines, recordings.

parse_json walks every document after parsing it to refuse nesting deeper than
MAX_DEPTH. A text with no more than MAX_DEPTH brackets cannot nest that deep, so for
it the walk is skipped; anything else, and any text json.loads refuses, goes through
parse_json itself, so the result and every error message are parse_json's.
"""

from __future__ import annotations

import json
from typing import Any

from gate.files import MAX_DEPTH, parse_json
from gate.files import _unique_keys as unique_keys


def parse_json_unique(text: str | bytes) -> Any:
    """`parse_json(text, unique_keys=True)`, faster for small documents."""
    if isinstance(text, bytes):
        brackets = text.count(b"{") + text.count(b"[")
    else:
        brackets = text.count("{") + text.count("[")
    if brackets <= MAX_DEPTH:
        try:
            return json.loads(text, object_pairs_hook=unique_keys)
        except ValueError:
            pass  # parse_json raises it again, in its own words
    return parse_json(text, unique_keys=True)

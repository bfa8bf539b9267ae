"""Building many long-lived records without the cyclic garbage collector rescanning them.

Python's collector runs after every few hundred new container objects and walks the
generations it collects. Loading 10,000 cases or judging 10,000 recordings creates
objects that all live until the run ends, so each pass finds nothing to free, and the
passes took 18-20% of a replay. Inside `bulk()` the collector is off; on leaving it,
what was built is frozen (`gc.freeze`): later collections no longer walk it. A small
suite's records are left to the collector as usual: freezing keeps whatever else is
alive at that moment, cyclic garbage included, for the rest of the process.

Reference counting still frees everything acyclic at once, so memory does not grow
with the collector off: the records built here (cases, outputs, results) hold no
reference cycles.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

#: New container objects (net) past which freezing pays: 1,000 cases build about 30,000.
FREEZE_AFTER = 20_000


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """No automatic collection inside; what survives is frozen on the way out.

    Nested uses are free: only the outermost one turns the collector back on.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if gc.get_count()[0] >= FREEZE_AFTER:
            gc.freeze()
        gc.enable()

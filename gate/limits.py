"""How large a file casegate reads may be, checked before a byte of it is parsed.

Parsing costs a multiple of a file's size in memory (a YAML or JSON document becomes
Python objects; see bench/load_memory.py), so a file far larger than any real one is
refused unread, with one line naming it and the limit, rather than left to exhaust the
runner's memory. Each reader raises its own error type (CaseFileError, ConfigError,
ResultsError), so the CLI and the Action report it as any other bad file: exit 2.
"""

from __future__ import annotations

import os
from pathlib import Path

from gate.errors import CasegateError

MB = 1_000_000

#: A case file: the example suite's cases are about 250 bytes each, so 20 MB is some
#: 80,000 cases in one file, past anything written by hand or by `casegate import`.
#: A larger suite spreads over several files (`cases:` takes folders and globs).
MAX_CASE_FILE_BYTES = 20 * MB
#: The config is a page of settings; 20 MB leaves room for any `pricing:` table.
MAX_CONFIG_BYTES = 20 * MB
#: A recording holds one case's responses (every sample, system and embedding): the
#: example suite's are 2-5 kB each; 20 MB is several thousand long responses.
MAX_RECORDING_BYTES = 20 * MB
#: A results file (or baseline) holds every case's outputs: about 1.3 kB a case with one
#: sample, so a 100,000-case run (the largest docs/speed.md's figures measure) writes
#: about 130 MB, and with more samples more. It is casegate's own output, read back by
#: `compare`, `gate` and `check`: the limit only stops what no run of a real suite writes.
MAX_RESULTS_BYTES = 256 * MB
#: Any other YAML document casegate parses (e.g. a config read from the base commit).
MAX_YAML_BYTES = 20 * MB
#: A case's input file (`input_files:`: a ticket, a document, an image): hashed into the
#: recording key and the ruler, read in 1 MB pieces, so the limit bounds the time a load
#: spends hashing, not its memory. 50 MB holds a long PDF or a minute of audio.
MAX_INPUT_FILE_BYTES = 50 * MB
#: Input files one case may name, its own and the defaults' together.
MAX_INPUT_FILES = 100


def over(size: int, limit: int, what: str, fix: str) -> str:
    """Why a file is refused: `25.3 MB, more than the 20 MB a case file may be: FIX`."""
    return f"{size / MB:,.1f} MB, more than the {limit / MB:,.0f} MB {what} may be: {fix}"


def too_large(shown: object, size: int, limit: int, what: str, fix: str) -> str:
    """The one-line refusal, naming the file: `PATH: 25.3 MB, more than …`."""
    return f"{shown}: {over(size, limit, what, fix)}"


def read_limited(
    path: Path | str,
    limit: int,
    what: str,
    fix: str,
    error: type[CasegateError],
    shown: object | None = None,
) -> bytes:
    """The file's bytes; `error` (one line naming the file and the limit) when it is larger.

    At most `limit + 1` bytes are read, so a file that grows meanwhile, a pipe or a device
    cannot get past the limit; a file larger than 64 kB is measured first, and refused
    unread when it is past the limit. OSErrors (FileNotFoundError included) pass through
    for the caller to word. Plain system calls, and none more than it needs: a replay
    reads one recording a case (a buffered file object costs twice the time, and even
    `fstat` is a tenth of it on a sandboxed runner).
    """
    first = min(1 << 16, limit + 1)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        chunk = os.read(descriptor, first)
        chunks, read, size = [chunk], len(chunk), 0
        if read == first:  # more may follow: the size says how much, or that it is too much
            size = os.fstat(descriptor).st_size
            if size > limit:
                raise error(too_large(shown or path, size, limit, what, fix))
        while chunk and read <= limit:
            # The rest in one call when the size is known (a pipe's is not: 64 kB a call).
            chunk = os.read(descriptor, min(max(size - read, 1 << 16), limit + 1 - read))
            chunks.append(chunk)
            read += len(chunk)
    finally:
        os.close(descriptor)
    if read > limit:
        raise error(too_large(shown or path, read, limit, what, fix))
    return chunks[0] if len(chunks) == 2 and not chunks[1] else b"".join(chunks)

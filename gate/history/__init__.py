"""The results history: one committed JSONL line per case per run, and a SQLite cache of it.

`records` (the versioned line), `export` (the JSONL file, the source of truth), `store`
(the SQLite cache rebuilt from it), `queries` (timelines, trends, flips), `locate` (which
export a command or a pull request reads), `report` (the pull request's History section),
`commands` and `parser` (`casegate history …`).
"""

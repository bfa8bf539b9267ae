"""The stages put together: `casegate check` (and the Action) as one pipeline.

Each stage lives in the folder of its kind (gate.suite, gate.produce, gate.judging,
gate.deciding, gate.reporting); this package only orders them and passes what one
stage built to the next.
"""

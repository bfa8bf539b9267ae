"""Judging outputs: each sample through the suite's checks (gate.checks), the pinned LLM
judge and its calibration, the pairwise judge, and the separate process that judges a pull
request's outputs from the base tree."""

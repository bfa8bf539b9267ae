"""Outputs are samples from a distribution: the gate under noise.

`stats` (the tests, written out rather than taken from scipy), `analysis` (the
comparison of repeated samples: which drops are regressions), `adaptive`
(`samples: auto`: how many samples each case gets) and `confirm` (confirmation
reruns of what a live check flagged).
"""

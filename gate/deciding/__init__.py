"""Deciding: the case-by-case comparison, the statistics under noise, the written gate rule,
the ruler a pull request is judged by, the recheck of a run and the baseline's staleness."""

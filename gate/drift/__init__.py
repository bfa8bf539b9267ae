"""Drift: the recordings replayed against the live system, on a schedule, and their age."""

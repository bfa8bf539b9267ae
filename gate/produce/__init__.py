"""Producing outputs: the run, its supervised process and sandbox, recordings and replay,
shards and their merge and the batch APIs, calling the systems under test (gate.systems)."""

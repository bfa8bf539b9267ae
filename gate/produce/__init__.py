"""Producing outputs: the run, its supervised process and sandbox, recordings and replay,
retries, shards and their merge, the batch APIs, and the systems under test (adapters)."""

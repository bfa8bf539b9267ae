"""Telling people: the markdown, JSON and text reports, JUnit, `show`, diffs, the terminal."""

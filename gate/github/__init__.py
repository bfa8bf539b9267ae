"""casegate on GitHub: the Action's entrypoint (`python -I -m gate.github.action`), the
REST API it writes the sticky comment and the drift issue with (`api`), a fork's report
posted from its artifact (`forkcomment`) and the drift issue (`driftissue`)."""

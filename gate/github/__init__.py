"""casegate on GitHub: the Action's entrypoint (`python -I -m gate.github.action`; what it
tells the runner in `publish`, the ruler read from the base in `ruling`, the token kept out
of the environment in `tokenpipe`, `command: baseline` in `baseline`), the REST API it
writes the sticky comment and the drift issue with (`api`), a fork's report posted from
its artifact (`forkcomment`) and the drift issue (`driftissue`)."""

# The casegate GitHub Action. GitHub builds it from `action.yml` (`image: Dockerfile`)
# and runs it with the workspace mounted at /github/workspace; per its rules for
# container actions there is no USER and no WORKDIR here.
#
# Stage 1 builds the venv from the source. Only the venv is copied on: the source
# (and, offline, the wheelhouse) stays in this stage's layers, which the image does
# not keep. A multi-stage build, not `RUN --mount`: the offline test builds with the
# classic builder, which has no mounts.
# The base is pinned by digest (the multi-arch index of python:3.12-slim), so a tag moved
# upstream cannot change what GitHub builds. To move it: `docker buildx imagetools inspect
# python:3.12-slim` prints the index digest; the container test passes its own BASE.
ARG BASE=python:3.12-slim@sha256:78387bc3881b8273120a12ebe6c1ab22b018ccc2c9adf565ae1ac9b536e184ea
FROM ${BASE} AS build
# Debian's Python refuses system-wide pip installs: casegate lives in its own venv.
# PIP_OFFLINE="--no-index --find-links /opt/casegate-src/.wheelhouse" builds without an index.
ARG PIP_OFFLINE=""
COPY . /opt/casegate-src/
# PIP_OFFLINE is deliberately unquoted: it holds several options.
# hadolint ignore=SC2086
RUN python3 -m venv /opt/casegate \
    && /opt/casegate/bin/pip install --no-cache-dir --disable-pip-version-check \
       $PIP_OFFLINE --requirement /opt/casegate-src/requirements.lock \
    && /opt/casegate/bin/pip install --no-cache-dir --disable-pip-version-check \
       $PIP_OFFLINE --no-deps /opt/casegate-src \
    && /opt/casegate/bin/pip uninstall --yes pip

# Stage 2, the image: the same base (the venv's interpreter is the base's), git, the venv.
FROM ${BASE}
# git reads the baseline from a pull request's base commit. Base images that
# already carry git (the offline test image does) skip the download.
# hadolint ignore=DL3008
RUN if ! command -v git >/dev/null 2>&1; then \
      apt-get update \
      && apt-get install -y --no-install-recommends git ca-certificates \
      && rm -rf /var/lib/apt/lists/*; \
    fi
COPY --from=build /opt/casegate /opt/casegate

# -I: an isolated interpreter. The workspace (the pull request's checkout) is the
# working directory; without -I a `gate/` or `tabulate.py` in it would be imported
# in place of casegate's own code. User code is imported on purpose, from the
# config's folder, by gate.usercode.
ENTRYPOINT ["/opt/casegate/bin/python", "-I", "-m", "gate.github.action"]

# trainop operator image. Built here without Docker by `make image` (hack/image/build.sh: buildah, on a
# Debian bookworm base made with mmdebstrap); with Docker: `docker build -t ghcr.io/trainop/trainop:0.1.0 .`
# BASE is any image with Python >= 3.11 and its venv module as python3 (Debian bookworm's python3 and
# python3-venv, or python:3.11-slim).
# Runs as a non-root user on a read-only root filesystem (manifests/base/deployment.yaml mounts /tmp).
ARG BASE=docker.io/library/python:3.11-slim-bookworm

FROM ${BASE} AS build
# Behind a TLS-intercepting proxy, the CA bundle pip should trust (a path the build mounts); unset,
# pip trusts its own bundle. hack/image/build.sh passes the host's $PIP_CERT this way.
ARG PIP_CERT
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# trainop and its runtime dependencies only (no dev or framework extras) in a venv the final stage
# copies whole; bytecode compiled now, since the running image cannot write it. pip is not needed there.
RUN python3 -m venv /opt/trainop \
 && /opt/trainop/bin/pip install -q . \
 && /opt/trainop/bin/python -m compileall -q /opt/trainop/lib \
 && /opt/trainop/bin/pip uninstall -q -y pip \
 && /opt/trainop/bin/trainop --version

FROM ${BASE}
ENV PATH=/opt/trainop/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /opt/trainop /opt/trainop
# 65532 is the conventional "nonroot" uid of distroless images; the Deployment asks for it too.
USER 65532:65532
EXPOSE 8080 8081 9443
ENTRYPOINT ["python", "-m", "trainop.operator"]

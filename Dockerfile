# trainop operator image: `docker build -t ghcr.io/trainop/trainop:0.1.0 .`
# Runs as a non-root user on a read-only root filesystem (manifests/base/deployment.yaml mounts /tmp).
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# Wheels for trainop and its runtime dependencies only (no dev or framework extras).
RUN pip wheel --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
RUN pip install --no-index --find-links /wheels trainop && rm -rf /wheels
# 65532 is the conventional "nonroot" uid of distroless images; the Deployment asks for it too.
USER 65532:65532
EXPOSE 8080 8081 9443
ENTRYPOINT ["python", "-m", "trainop.operator"]

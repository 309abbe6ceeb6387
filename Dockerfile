# syntax=docker/dockerfile:1
# The toolcall-proxy image. Configured by environment variables only (see service/settings.py):
#   docker run -p 8000:8000 -e UPSTREAM_BASE_URL=http://model-server:8001/v1 toolcall-proxy:0.1.0
# With no UPSTREAM_BASE_URL it answers from its embedded demo upstream (a stand-in, not a model).

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
WORKDIR /src
# Dependencies first, in their own layer, so a code change does not fetch them again.
# Wheels only, checked against the lock's hashes: nothing is compiled, nothing unpinned slips in.
COPY requirements.lock ./
RUN pip wheel --no-cache-dir --require-hashes --only-binary=:all: \
        --wheel-dir /wheels --requirement requirements.lock
COPY . ./
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PROXY_HOST=0.0.0.0 \
    PROXY_PORT=8000
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin proxy
# Bind-mounting the wheels keeps them out of the final image's layers.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    --mount=type=bind,source=requirements.lock,target=/tmp/requirements.lock \
    pip install --no-cache-dir --no-index --find-links=/wheels \
        --require-hashes --requirement /tmp/requirements.lock \
    && pip install --no-cache-dir --no-index --no-deps /wheels/toolcall_proxy-*.whl
USER 10001
EXPOSE 8000
# The slim image has no curl; the standard library does the request.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ['PROXY_PORT'] + '/healthz', timeout=4)"]
CMD ["toolcall-proxy"]

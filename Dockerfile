# SubLane in a container: `docker build -t sublane .` then
#   docker run -d --name sublane -p 127.0.0.1:8080:8080 -v sublane-data:/data \
#     -e SUBLANE_ADMIN_USERNAME=admin -e SUBLANE_ADMIN_PASSWORD='choose-a-long-one' sublane
# The data folder (database and credentials.key) is the /data volume; everything else is rebuilt.
# Any `sublane` command runs the same way: `docker exec sublane sublane backup /data/backups/today`.
# docs/deploy.md puts a TLS reverse proxy in front of it.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The workspace packages the gateway needs (not the simulator, which only tests use), installed
# together so that their sublane-* dependencies resolve to these folders, pinned by constraints.txt.
WORKDIR /src
COPY constraints.txt ./
COPY packages/sublane-core packages/sublane-core
COPY packages/sublane-scheduler packages/sublane-scheduler
COPY packages/sublane-quota packages/sublane-quota
COPY packages/sublane-providers packages/sublane-providers
COPY packages/sublane-protocols packages/sublane-protocols
COPY packages/sublane-history packages/sublane-history
COPY packages/sublane-pricing packages/sublane-pricing
COPY packages/sublane-web packages/sublane-web
COPY apps/gateway apps/gateway
RUN pip install -c constraints.txt \
        ./packages/sublane-core ./packages/sublane-scheduler ./packages/sublane-quota \
        ./packages/sublane-providers ./packages/sublane-providers/codex ./packages/sublane-providers/claude \
        ./packages/sublane-providers/antigravity ./packages/sublane-protocols ./packages/sublane-history \
        ./packages/sublane-pricing ./packages/sublane-web ./apps/gateway \
        ./packages/sublane-providers/openai \
    && rm -rf /src

# A user of its own, owning nothing but the data folder (0700, as SubLane keeps it: OPS-7).
RUN useradd --system --uid 10001 --user-group --home-dir /data --no-create-home --shell /usr/sbin/nologin sublane \
    && mkdir -p /data \
    && chown sublane:sublane /data \
    && chmod 0700 /data

ENV SUBLANE_DATA_DIR=/data \
    SUBLANE_PORT=8080 \
    SUBLANE_LOG_FORMAT=json
USER sublane
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080

# Liveness only (the process answers); load balancers should ask /readyz (docs/deploy.md).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('SUBLANE_PORT', '8080'), timeout=4)"]

ENTRYPOINT ["sublane"]
CMD ["serve", "--host", "0.0.0.0"]

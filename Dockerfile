# Herald's container image. Two stages: the first compiles the Opus addon (it needs a C toolchain), the second
# carries only Node, the production dependencies and Herald's sources, and runs as the unprivileged `node` user.
# Build: docker build -t herald .   Run: see compose.yaml and docs/operating.md, "Container".

FROM node:24-bookworm-slim AS build
WORKDIR /app
# @discordjs/opus has no prebuilt binary for every platform: it is compiled here, against this image's Node.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY patches ./patches
COPY src ./src
COPY commands ./commands
COPY scripts ./scripts
# As scripts/setup.sh does: every dependency without lifecycle scripts, Herald's documented patches to them
# (patches/README.md; the build fails if one no longer applies rather than shipping unpatched code), the addon,
# the bundle `npm start` runs (scripts/build.ts: dist/, from the patched dependencies), then the development
# dependencies (patch-package and the bundler among them) pruned away.
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npx --no -- patch-package --error-on-fail \
 && npm rebuild @discordjs/opus \
 && node -e 'require("@discordjs/opus"); console.log("opus addon ok")' \
 && node scripts/build.ts --force \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    DATABASE_URL=sqlite:/app/data/herald.sqlite \
    METRICS_PORT=9464 \
    METRICS_HOST=0.0.0.0
WORKDIR /app
# jemalloc in place of glibc's malloc, preloaded into every Herald process (shards inherit the environment): DAVE's
# library allocates and frees for every voice frame, and glibc's malloc and free took a third of that call's CPU
# (docs/performance.md). The link gives it one path on every architecture; `npm run doctor` says which one runs.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libjemalloc2 \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(find /usr/lib -name libjemalloc.so.2 | head -n 1)" /usr/local/lib/libjemalloc.so.2
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# The sources beside the bundle: `npm run doctor` and `npm run deploy-commands` run them.
COPY src ./src
COPY commands ./commands
COPY scripts ./scripts
RUN mkdir -p /app/data && chown node:node /app/data
USER node
VOLUME ["/app/data"]
EXPOSE 9464
# /healthz answers while the process runs; orchestrators should use /readyz for readiness.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.METRICS_PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The bundle, as `npm start` runs it (a restart loads a few files, not a thousand modules): one process by default;
# SHARD_PROCESSES=auto runs twice the container's cores as shard processes under one manager (which serves
# METRICS_PORT), as many as its memory limit holds at 512 MB each.
CMD ["node", "dist/index.js"]

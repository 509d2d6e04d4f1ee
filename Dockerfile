# syntax=docker/dockerfile:1
# Node 24 LTS by default; BASE_IMAGE lets a build use a local base with Node 24 and npm in
# /usr/local, Debian bookworm underneath (scripts/local-base-image.sh makes one without a registry).
ARG BASE_IMAGE=node:24-bookworm-slim
# Build stage: compile native modules (better-sqlite3) with the toolchain, compile TypeScript to
# dist/ and bundle the console into ui-dist/ (npm run build does both), then drop dev dependencies.
FROM ${BASE_IMAGE} AS build
WORKDIR /app
# Behind a TLS-inspecting proxy, pass its CA for npm: --build-arg NODE_EXTRA_CA_CERTS=/path (mounted).
ARG NODE_EXTRA_CA_CERTS
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# The lockfile names the client's workspace; npm ci needs its package.json (not its sources).
COPY packages/client/package.json ./packages/client/
# A native module with no prebuilt binary for this platform (better-sqlite3 where its download
# is out of reach) compiles against the headers that come with Node, downloading none: node-gyp
# reads its options from npm_package_config_node_gyp_* (npm 11 warns of an npm_config_nodedir).
# No notice of newer npm releases in the build's output.
ENV npm_package_config_node_gyp_nodedir=/usr/local npm_config_update_notifier=false
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
# Every file npm run build runs: a script it calls that is not copied fails the image's build.
COPY scripts/build.mjs scripts/build-ui.mjs ./scripts/
COPY src ./src
COPY ui ./ui
COPY migrations ./migrations
COPY migrations-pg ./migrations-pg
RUN npm run build && npm prune --omit=dev

# Runtime stage: no compiler, no TypeScript, a non-root user, bubblewrap for the bash sandbox, data on a volume.
FROM ${BASE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8787 \
    DATABASE_PATH=/data/subagentd.db \
    WORKSPACES_DIR=/data/workspaces \
    AGENTS_DIR=/app/agents
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system subagentd && useradd --system --gid subagentd --home /data subagentd \
 && mkdir -p /data/workspaces /app/agents && chown -R subagentd:subagentd /data
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/package.json ./
COPY --from=build /app/dist ./dist
# The console (/ui), found beside dist/: without it /ui answers 503 console_not_built.
COPY --from=build /app/ui-dist ./ui-dist
COPY --from=build /app/migrations ./migrations
COPY --from=build /app/migrations-pg ./migrations-pg
USER subagentd
VOLUME ["/data"]
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/server.js"]

# Container image of the service: compiled in a build stage, run on Node.js 22 LTS (slim) with production dependencies only.
# NODE_IMAGE=node:20-bookworm-slim still works; Node.js 20 is past its end of life.
ARG NODE_IMAGE=node:22-bookworm-slim

# ---- build: all dependencies, TypeScript → dist/, the operator console (console/, Vite) → dist/console/
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY console ./console
RUN npm run build

# ---- runtime: production dependencies (bcrypt loads its prebuilt binary), dist/ and migrations/, non-root
FROM ${NODE_IMAGE} AS runtime
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The command line and the lock simulator as commands (package.json `bin`), runnable without a build step:
# `docker compose exec app acs tenant create acme`.
RUN chmod 0755 dist/cli.js dist/simulator/cli.js \
 && ln -s /app/dist/cli.js /usr/local/bin/acs \
 && ln -s /app/dist/simulator/cli.js /usr/local/bin/acs-simulate
# Applied at start; dist/db/migrate.js reads them from ../../migrations, i.e. /app/migrations.
COPY migrations ./migrations

# The embedded database (used when DATABASE_URL is unset) and its generated SECRETS_KEY live in DATA_DIR.
RUN mkdir -p /data && chown node:node /data
# Every interface, so the port can be published: the server then refuses to start until PUBLIC_URL names the address
# phones, apps and locks reach it at (locks trust that issuer; README, "Docker"), or ALLOW_LOOPBACK_PUBLIC_URL=true.
ENV HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
VOLUME ["/data"]

# The official image's unprivileged user (uid 1000); the application files stay root-owned and read-only to it.
USER node
EXPOSE 8080

# Slim images have no curl: Node's fetch does the probe. Liveness only; /readyz also checks the database.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

CMD ["node", "--max-semi-space-size=64", "dist/server.js"]

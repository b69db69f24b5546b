# The API image: the server bundled ahead of time by esbuild with its dependencies (scripts/build.mjs,
# dist/) in a build stage; in another, the production dependencies the bundle leaves outside (pino's
# transports, ws' add-ons; not the optional embedded PGlite); and a slim non-root runtime that runs
# `node dist/main.js` with neither TypeScript tooling nor PGlite: it serves a Postgres
# (DATABASE_URL), or with no PROVIDERS_CONFIG the demo's simulators. .dockerignore keeps the
# host's node_modules, .data, dist and .git out of the context. scripts/build-image-root.sh runs
# these same steps without Docker.
FROM node:20-bookworm-slim AS build
WORKDIR /app
# patches first: npm ci's postinstall (scripts/apply-patches.mjs) applies patches/ to the installed
# packages and patches-optional/ to the optional ones that are installed (none in the deps stage),
# then runs scripts/pglite-template.mjs (a no-op here: the embedded database's template is for npm start).
COPY package.json package-lock.json ./
COPY patches ./patches
COPY patches-optional ./patches-optional
COPY scripts/apply-patches.mjs scripts/pglite-template.mjs ./scripts/
RUN npm ci --no-audit --no-fund
COPY src ./src
COPY scripts ./scripts
# Bundles the server into dist/ and the live view page into dist/web (src/web/build.ts).
RUN node scripts/build.mjs dist

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
COPY patches-optional ./patches-optional
COPY scripts/apply-patches.mjs scripts/pglite-template.mjs ./scripts/
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force

FROM node:20-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=4000
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY migrations ./migrations
USER node
EXPOSE 4000
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD node -e "fetch('http://127.0.0.1:4000/readyz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
# Compose and Kubernetes stop a container with SIGTERM: the server drains and exits 0 (docs/operations.md, "Running in production").
STOPSIGNAL SIGTERM
CMD ["node", "dist/main.js"]

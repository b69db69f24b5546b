# The API image: production dependencies in one stage, the live view page bundled in another
# (esbuild is a dev tool), and a slim non-root runtime that copies both.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
# patches/ first: npm ci's postinstall applies them (patch-package) to the installed driver.
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm ci --omit=dev --no-audit --no-fund && npm install --no-save tsx@4.23.15

FROM node:20-bookworm-slim AS web
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY src ./src
RUN npx tsx src/web/build.ts dist/web

FROM node:20-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=4000
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=web /app/dist/web ./dist/web
COPY package.json tsconfig.json ./
COPY src ./src
COPY migrations ./migrations
COPY schema ./schema
USER node
EXPOSE 4000
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD node -e "fetch('http://127.0.0.1:4000/readyz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
# Compose and Kubernetes stop a container with SIGTERM: the server drains and exits 0 (README, "Running in production").
STOPSIGNAL SIGTERM
CMD ["node", "--import", "tsx", "src/main.ts"]

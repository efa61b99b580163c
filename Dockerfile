# syntax=docker/dockerfile:1
# Panels API on Node 22: `docker build -t panels .` then
#   docker run -p 3001:3001 -v panels-data:/app/data \
#     -e JWT_SECRET=<at least 32 characters> -e ENCRYPTION_KEY=<secret> panels

# --- build: all dependencies, bundle src/runtime/node.ts into dist/runtime/node.js -------------------
FROM node:22-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# --- runtime: the bundle, its one dependency outside the bundle (native libSQL) and the migrations ----
# dist/package.json and dist/package-lock.json are written by the build: @libsql/client and its
# dependencies only, cut from the project's lockfile (scripts/build.ts), so the image stays small.
FROM node:22-slim AS runtime
ENV NODE_ENV=production \
    PORT=3001 \
    DATABASE_URL=file:/app/data/panels.db \
    FILES_DIR=/app/data/files
WORKDIR /app
COPY --from=build /app/dist ./dist
RUN cd dist && npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY migrations ./migrations
RUN mkdir -p /app/data/files && chown -R node:node /app/data
USER node
EXPOSE 3001
VOLUME /app/data
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3001) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1: SIGTERM from `docker stop` reaches the graceful shutdown directly.
CMD ["node", "dist/runtime/node.js"]

# One image for the three processes of delivery-orchestrator; docker-compose.yml runs it three
# times with a different command:
#   worker     node --import tsx worker/main.ts      (the default CMD below)
#   bridge     node --import tsx bridge/main.ts
#   simulator  node --import tsx simulator/main.ts
# TypeScript runs through tsx, a runtime dependency: there is no build step. Settings come from
# the environment only (see temporal/connection.ts, provider/config.ts, bridge/config.ts and
# simulator/config.ts); nothing secret is baked into the image.
FROM node:20-bookworm-slim

WORKDIR /app

# Dependencies first, so that a source change does not reinstall them. The lockfile's versions,
# through `npm install` rather than `npm ci`: the lockfile is written on machines whose registry
# serves only Linux builds of native packages, so it lacks other platforms' optional entries,
# which `npm ci` refuses. Dev dependencies (jest, eslint, typescript, ...) are not needed to run.
COPY package.json package-lock.json ./
RUN npm install --omit=dev --no-audit --no-fund && npm cache clean --force

# The source (.dockerignore keeps out node_modules, local data, test artifacts and .git). It stays
# owned by root, so the services below can read it but not change it.
COPY . .

# Run as the unprivileged `node` user (uid 1000) of the base image; nothing here needs root.
USER node

CMD ["node", "--import", "tsx", "worker/main.ts"]

# syntax=docker/dockerfile:1
# One image, one CLI: tailnet-operator serve | agent | render.
FROM node:22-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json

FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

FROM node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
COPY bin ./bin
# render reads the Composite- and DecoratorControllers to play Metacontroller's loop offline
COPY compositecontrollers ./compositecontrollers
COPY decoratorcontrollers ./decoratorcontrollers
# Non-root (the "node" user of the base image is uid 1000; the manifests run as 65532 with a
# read-only root filesystem, which needs nothing writable here).
USER 65532:65532
EXPOSE 8080 9080
ENTRYPOINT ["node", "/app/bin/tailnet-operator.js"]
CMD ["serve"]

FROM sless/nodejs20
COPY --chown=10001:10001 package.json package-lock.json /app/function/
ARG npm_config_registry
RUN npm ci --omit=dev --no-audit --no-fund --no-update-notifier --ignore-scripts
COPY . /app/function/

FROM sless/nodejs20
COPY --chown=10001:10001 package.json /app/function/
ARG npm_config_registry
RUN npm install --omit=dev --no-audit --no-fund --no-update-notifier --ignore-scripts
COPY . /app/function/

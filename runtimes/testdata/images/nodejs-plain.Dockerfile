FROM sless/nodejs20
COPY . /app/function/

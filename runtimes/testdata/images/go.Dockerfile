FROM sless/go1.23
COPY . /app/function/

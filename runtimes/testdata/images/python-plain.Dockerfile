FROM sless/python3.11
COPY . /app/function/

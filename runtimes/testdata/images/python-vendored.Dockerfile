FROM sless/python3.11
COPY . /app/function/
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
RUN pip --no-cache-dir install --no-input --disable-pip-version-check --no-warn-script-location --progress-bar off --target /app/python-deps -r requirements.txt
COPY . /app/function/
ENV PYTHONPATH=/app/python-deps

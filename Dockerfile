# runjournal server on the embedded file backend, journals on a volume.
# Mirrors the README: install the package with its [server] extra, run `runjournal serve`.
FROM python:3.11-slim

WORKDIR /src
COPY pyproject.toml README.md ./
COPY proto ./proto
COPY client ./client
COPY server ./server
RUN pip install --no-cache-dir '.[server]' && useradd --system --uid 10001 runjournal \
    && mkdir /data && chown runjournal /data

USER runjournal
VOLUME ["/data"]
EXPOSE 50051
# Listen on every interface inside the container; publish the port to choose who reaches it.
ENTRYPOINT ["runjournal", "serve", "--data-dir", "/data", "--listen", "0.0.0.0:50051"]

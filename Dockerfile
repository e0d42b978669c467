# syntax=docker/dockerfile:1
# A static baton binary on a minimal, non-root image.
#   docker build -t baton .
#   docker run -p 8080:8080 -v baton-data:/data baton
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same script CI runs (.ci/run), so the two builds cannot drift apart.
RUN scripts/build /out/baton && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/baton /usr/local/bin/baton
# The data volume must belong to the non-root user the server runs as.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME ["/data"]
# 8080: HTTP API, dashboard, metrics. 2379/2380: etcd client and peer.
EXPOSE 8080 2379 2380
ENV BATON_DATA_DIR=/data \
    BATON_HTTP_ADDR=0.0.0.0:8080
ENTRYPOINT ["/usr/local/bin/baton"]
CMD ["serve"]

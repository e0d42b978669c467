# syntax=docker/dockerfile:1
# A static baton binary on a minimal, non-root image.
#   docker build -t baton .
#   docker run -p 127.0.0.1:8080:8080 -v baton-data:/data baton
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
# The client and problem modules, which go.mod replaces with these folders.
COPY client/go.mod client/
COPY problem/go.mod problem/
RUN go mod download
COPY . .
# The same script CI runs (.ci/run), so the two builds cannot drift apart.
# etcd wants its data dir readable by its user alone (0700).
RUN scripts/build /out/baton && mkdir -p -m 0700 /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/baton /usr/local/bin/baton
# The data volume must belong to the non-root user the server runs as.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME ["/data"]
# 8080: HTTP API, dashboard, metrics. 2380: etcd peer. etcd's client port
# (--client-url, 2379) is for tools on the node's machine; publish it only
# when served with --client-trusted-ca (docs/SECURITY.md).
EXPOSE 8080 2380
ENV BATON_DATA_DIR=/data \
    BATON_HTTP_ADDR=0.0.0.0:8080
# Ready means this node's etcd member has a leader and answers (GET /readyz).
# "baton healthcheck" finds the node from BATON_HTTP_ADDR (0.0.0.0 is checked
# on 127.0.0.1), over https:// when BATON_TLS_CERT is set; give it
# BATON_CACERT (and BATON_CERT/BATON_KEY with --tls-client-ca) then. Exec
# form: the distroless image has no shell.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/usr/local/bin/baton","healthcheck"]
ENTRYPOINT ["/usr/local/bin/baton"]
CMD ["serve"]

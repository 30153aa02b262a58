# LiveList in a container: built in the official Swift image with the standard library linked statically,
# run in Debian slim with only the binary (stripped; Public/ and Templates/ are compiled into it) and the
# libraries it links.
#
#     docker build -t livelist .
#     docker run -p 8080:8080 -v livelist-data:/data -e LIVELIST_WRITE_TOKEN=secret livelist
#
# CI builds this very file with podman (Tests/Container/test_container.sh, on local stand-ins for the two base
# images) and runs the image: as its user with a volume, /healthz, a page, writes, the HEALTHCHECK,
# SIGTERM, and docker-compose.yml behind nginx. Nothing here may depend on that machine.

# ---- build ----
FROM swift:6.3-bookworm AS build
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get -q update \
    && apt-get -q install -y libssl-dev zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /build
# The manifest first, so that the resolved dependencies stay cached while only the sources change.
COPY Package.* ./
RUN swift package resolve
COPY Sources ./Sources
COPY Plugins ./Plugins
COPY Public ./Public
COPY Templates ./Templates
COPY Tests ./Tests
# Without symbol tables and debug sections (a quarter of the binary): nothing in the image reads them.
RUN swift build -c release --static-swift-stdlib -Xlinker --strip-all --product livelist

# ---- run ----
FROM debian:bookworm-slim
# What `ldd livelist` names besides libc, libm, libgcc_s and libstdc++ (already in the slim image), and the
# CA roots that `sslrootcert=system` (the default) trusts for a managed PostgreSQL.
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get -q update \
    && apt-get -q install -y --no-install-recommends libssl3 zlib1g ca-certificates \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --system --user-group --uid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin livelist \
    && mkdir -p /data \
    && chown livelist:livelist /data
WORKDIR /app
COPY --from=build /build/.build/release/livelist /app/livelist
# Configuration comes from the environment (every flag has a LIVELIST_ variable). Inside the container
# the server listens on all addresses; set LIVELIST_WRITE_TOKEN (docker run -e) so that writes need
# "Authorization: Bearer TOKEN": without a token the server refuses every write from the network.
ENV LIVELIST_HOST=0.0.0.0 \
    LIVELIST_PORT=8080 \
    LIVELIST_DATA=/data \
    LIVELIST_LOG_LEVEL=info
USER livelist
EXPOSE 8080
VOLUME /data
# The slim image has no curl: the binary checks itself (GET /healthz on LIVELIST_PORT, exit 0 on 200; over
# TLS when LIVELIST_TLS_CERT is set, as the server then serves HTTPS).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/app/livelist", "healthcheck", "--timeout", "4"]
# Without a subcommand livelist serves; SIGTERM (docker stop) ends it gracefully.
ENTRYPOINT ["/app/livelist"]

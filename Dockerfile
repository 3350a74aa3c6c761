# statewatch in a container: Debian 12, built from source in one stage, run as an
# unprivileged user from a slim second stage with the data in a volume.
#
#   docker build -t statewatch .
#   docker run -p 7411:7411 -v statewatch-data:/var/lib/statewatch \
#     -v /path/to/token:/run/secrets/statewatch-token:ro statewatch
#
# The daemon listens on 0.0.0.0 inside the container, so it requires a bearer token: mount
# one at /run/secrets/statewatch-token (or override CMD). Any Host name is accepted since a
# token is required; `--allow-host NAME` added to CMD narrows it to the names given.

FROM debian:12 AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake g++ make pkg-config librocksdb-dev libflatbuffers-dev flatbuffers-compiler \
      libspdlog-dev libboost1.81-dev libboost-json1.81-dev libssl-dev libnats-dev libxxhash-dev \
      nodejs npm \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DSTATEWATCH_BUILD_TESTS=OFF \
      -DSTATEWATCH_BUILD_BENCH=OFF \
    && cmake --build /build -j"$(nproc)" --target statewatch_bin statewatch_man \
    && install -D -m 0755 /build/statewatch /out/usr/local/bin/statewatch \
    && install -D -m 0644 /build/statewatch.1 /out/usr/local/share/man/man1/statewatch.1

FROM debian:12-slim
# The runtime libraries of what the build linked (RocksDB pulls its compressors).
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      librocksdb7.8 libspdlog1.10 libboost-json1.81.0 libssl3 libnats3.4 libxxhash0 curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home-dir /var/lib/statewatch --shell /usr/sbin/nologin statewatch \
    && install -d -o statewatch -g statewatch -m 0750 /var/lib/statewatch
COPY --from=build /out/ /
USER statewatch
VOLUME /var/lib/statewatch
EXPOSE 7411
# The first check counts only after start-period: opening a large store takes a while.
HEALTHCHECK --interval=30s --timeout=3s --start-period=30s --retries=3 CMD curl -fsS http://127.0.0.1:7411/healthz || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/statewatch", "--data", "/var/lib/statewatch"]
CMD ["serve", "--listen", "0.0.0.0:7411", "--token-file", "/run/secrets/statewatch-token"]

# syntax=docker/dockerfile:1
#
# tensorgate container image.
#
#   docker build -t tensorgate:0.1.0 .
#   docker run --rm -p 8000:8000 -p 9090:9090 tensorgate:0.1.0          # the embedded demo
#   docker run --rm -p 8000:8000 -p 9090:9090 tensorgate:0.1.0 \
#       serve --config /etc/tensorgate/tensorgate.toml                   # the baked-in config
#   docker run --rm -p 8000:8000 -p 9090:9090 -v "$PWD/my.toml:/etc/tensorgate/tensorgate.toml:ro" \
#       tensorgate:0.1.0 serve --config /etc/tensorgate/tensorgate.toml  # your config
#
# `bash scripts/image.sh` builds it with Docker or Podman and checks that it runs; where no
# registry is reachable it builds local stand-ins for the two base images first (see there).
#
# Build arguments:
#   BUILDER_IMAGE  the image that compiles tensorgate: a Debian 12 with the Rust toolchain
#                  (cargo, rustc) on PATH and a C compiler (ring builds C).
#   RUNTIME_IMAGE  the image it runs in: glibc, libgcc, CA certificates. Default distroless cc
#                  (no shell, no package manager). The binary is a glibc-linked Rust executable
#                  whose TLS is rustls, so it needs nothing more.
#   BINARY_FROM    "builder" (default): compile in BUILDER_IMAGE; "prebuilt": take
#                  dist/tensorgate from the build context instead (built on the host with the
#                  same glibc or an older one; scripts/image.sh --builder host).
# Debian 12 on both stages keeps the builder's glibc (2.36) equal to the runtime's.

ARG RUST_VERSION=1.95
ARG BUILDER_IMAGE=docker.io/library/rust:${RUST_VERSION}-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot
ARG BINARY_FROM=builder

FROM ${BUILDER_IMAGE} AS builder
WORKDIR /src
COPY . .
# Cache mounts keep the crate registry and target/ between builds; the binary is copied out
# of the cached target/ because cache mounts are not part of the image layer.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked --bin tensorgate \
    && install -D -m 0755 target/release/tensorgate /out/tensorgate

FROM scratch AS prebuilt
COPY dist/tensorgate /out/tensorgate

FROM ${BINARY_FROM} AS binary

FROM ${RUNTIME_IMAGE}
COPY --from=binary /out/tensorgate /usr/local/bin/tensorgate
# Listens on every interface of the container (its own network namespace), so that
# `docker run -p` reaches `serve --config /etc/tensorgate/tensorgate.toml` too.
COPY config/container.toml /etc/tensorgate/tensorgate.toml
# A numeric uid (not distroless' "nonroot", 65532) so Kubernetes' runAsNonRoot can verify it
# and deploy/ can pin runAsUser: 10001. No /etc/passwd entry is needed.
USER 10001:10001
# 8000: the data port of the demo and of the baked-in config; 8080: the data port of `serve`
# in deploy/; 9090: admin (/healthz, /readyz, /metrics).
EXPOSE 8000 8080 9090
ENV RUST_LOG=info
ENTRYPOINT ["/usr/local/bin/tensorgate"]
# The embedded demo, listening on all interfaces so that `docker run -p` reaches it
# (the demo's own default is 127.0.0.1). Any arguments given to `docker run` replace these.
CMD ["--listen", "0.0.0.0:8000", "--admin-listen", "0.0.0.0:9090"]

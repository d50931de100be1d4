# syntax=docker/dockerfile:1
#
# tensorgate container image.
#
#   docker build -t tensorgate:0.1.0 .
#   docker run --rm -p 8000:8000 -p 9090:9090 tensorgate:0.1.0          # the embedded demo
#   docker run --rm -p 8080:8080 -p 9090:9090 -v "$PWD/my.toml:/etc/tensorgate/tensorgate.toml:ro" \
#       tensorgate:0.1.0 serve --config /etc/tensorgate/tensorgate.toml  # a real config
#
# Runtime base: distroless cc (glibc, libgcc, CA certificates, tzdata; no shell, no package
# manager). The binary is a glibc-linked Rust executable, so it needs nothing more, as long as
# its TLS (if any) is rustls: native-tls/OpenSSL would need libssl, which this base lacks.
# Debian 12 on both stages keeps the builder's glibc (2.36) equal to the runtime's.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS builder
WORKDIR /src
COPY . .
# Cache mounts keep the crate registry and target/ between builds (BuildKit); the binary is
# copied out of the cached target/ because cache mounts are not part of the image layer.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked --bin tensorgate \
    && install -D -m 0755 target/release/tensorgate /out/tensorgate

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=builder /out/tensorgate /usr/local/bin/tensorgate
COPY config/tensorgate.example.toml /etc/tensorgate/tensorgate.toml
# A numeric uid (not distroless' "nonroot", 65532) so Kubernetes' runAsNonRoot can verify it
# and deploy/ can pin runAsUser: 10001. No /etc/passwd entry is needed.
USER 10001:10001
# 8000: the demo's gateway; 8080: the data port of `serve` in deploy/; 9090: admin
# (/healthz, /readyz, /metrics).
EXPOSE 8000 8080 9090
ENV RUST_LOG=info
ENTRYPOINT ["/usr/local/bin/tensorgate"]
# The embedded demo, listening on all interfaces so that `docker run -p` reaches it
# (the demo's own default is 127.0.0.1). Any arguments given to `docker run` replace these.
CMD ["--listen", "0.0.0.0:8000", "--admin-listen", "0.0.0.0:9090"]

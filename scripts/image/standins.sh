#!/usr/bin/env bash
# Local stand-ins for the Dockerfile's base images, for machines that cannot
# reach a container registry. Sourced by scripts/image.sh; each function
# imports a root filesystem with `$ENGINE import` (the engine command is in
# the ENGINE array).
#
#   runtime_standin NAME   glibc, libgcc and Debian's CA certificates (the
#                          ca-certificates package's set) of this Debian
#                          host, and nothing else: what the distroless cc
#                          image holds that tensorgate uses.
#   builder_standin NAME   a debootstrapped Debian bookworm (minbase, gcc,
#                          libc6-dev, ca-certificates) with this host's Rust
#                          toolchain (rustc, cargo, the x86_64 standard
#                          library) in /usr/local/rust. The Debian mirror is
#                          the one this host's apt uses; the CA bundle is
#                          this host's (crates are fetched through whatever
#                          the host trusts).
#
# Both need root (the files keep their owners; debootstrap chroots).

# The Debian package files of $@ (files and symlinks only) copied under
# $root, the merged-/usr paths (/lib, /lib64, /bin, /sbin) kept as links.
copy_packages() {
  local root=$1 path dest
  shift
  mkdir -p "$root/usr/lib" "$root/usr/lib64" "$root/usr/bin" "$root/usr/sbin"
  for link in lib lib64 bin sbin; do
    [ -e "$root/$link" ] || ln -s "usr/$link" "$root/$link"
  done
  dpkg -L "$@" | while IFS= read -r path; do
    [ -f "$path" ] || [ -L "$path" ] || continue
    case $path in
      /usr/share/doc/* | /usr/share/man/* | /usr/share/lintian/* | /usr/share/locale/*) continue ;;
      /lib/* | /lib64/* | /bin/* | /sbin/*) dest="$root/usr$path" ;;
      *) dest="$root$path" ;;
    esac
    mkdir -p "$(dirname "$dest")"
    cp -a "$path" "$dest"
  done
}

runtime_standin() {
  local name=$1 root
  command -v dpkg >/dev/null || { echo "runtime stand-in: needs a Debian host (dpkg)" >&2; return 1; }
  root=$(mktemp -d "${TMPDIR:-/tmp}/tensorgate-runtime.XXXXXX")
  copy_packages "$root" libc6 libgcc-s1
  mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$root/etc/tensorgate"
  chmod 1777 "$root/tmp"
  # Debian's CA set as the package ships it (what distroless carries), not
  # this host's bundle, which may hold local additions.
  cat /usr/share/ca-certificates/mozilla/*.crt >"$root/etc/ssl/certs/ca-certificates.crt"
  # Users as distroless has them, plus the image's 10001.
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\ntensorgate:x:10001:10001:tensorgate:/nonexistent:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\ntensorgate:x:10001:\n' >"$root/etc/group"
  echo "runtime stand-in: $(du -sh "$root" | cut -f1) from libc6, libgcc-s1 and the CA bundle" >&2
  tar -C "$root" -c . | "${ENGINE[@]}" import - "$name" >/dev/null
  rm -rf "$root"
}

# The first Debian mirror in this host's apt sources.
debian_mirror() {
  cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
    2>/dev/null | awk '$1 == "URIs:" || $1 == "deb" { print $2 }' \
    | grep -E '/debian/?$' | head -n1 || true
}

builder_standin() {
  local name=$1 root mirror sysroot
  command -v debootstrap >/dev/null || { echo "builder stand-in: needs debootstrap" >&2; return 1; }
  mirror=$(debian_mirror)
  [ -n "$mirror" ] || { echo "builder stand-in: no Debian mirror in the apt sources" >&2; return 1; }
  root=$(mktemp -d "${TMPDIR:-/tmp}/tensorgate-builder.XXXXXX")
  echo "builder stand-in: debootstrap bookworm (a few minutes)" >&2
  debootstrap --variant=minbase --include=gcc,libc6-dev,ca-certificates,pkg-config \
    bookworm "$root" "$mirror" >"$root.log" 2>&1 \
    || { tail -n 20 "$root.log" >&2; rm -rf "$root" "$root.log"; return 1; }
  rm -f "$root.log"
  # The builder fetches crates: it trusts what this host trusts (a
  # TLS-inspecting proxy's CA included). The builder is never shipped.
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  sysroot=$(rustc --print sysroot)
  mkdir -p "$root/usr/local/rust/bin" "$root/usr/local/rust/lib/rustlib/x86_64-unknown-linux-gnu"
  cp -a "$sysroot/bin/rustc" "$sysroot/bin/cargo" "$root/usr/local/rust/bin/"
  cp -a "$sysroot/lib/"lib*.so* "$root/usr/local/rust/lib/"
  cp -a "$sysroot/lib/rustlib/x86_64-unknown-linux-gnu/lib" \
    "$root/usr/local/rust/lib/rustlib/x86_64-unknown-linux-gnu/"
  [ -d "$sysroot/lib/rustlib/x86_64-unknown-linux-gnu/bin" ] \
    && cp -a "$sysroot/lib/rustlib/x86_64-unknown-linux-gnu/bin" \
      "$root/usr/local/rust/lib/rustlib/x86_64-unknown-linux-gnu/"
  echo "builder stand-in: $(du -sh "$root" | cut -f1) with $(rustc --version)" >&2
  tar -C "$root" -c . | "${ENGINE[@]}" import \
    --change 'ENV PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV CARGO_HOME=/usr/local/cargo' \
    - "$name" >/dev/null
  rm -rf "$root"
}

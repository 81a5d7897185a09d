#!/usr/bin/env bash
# Builds the operator image without a Docker engine (issue 26): Debian bookworm's root filesystem made
# with mmdebstrap (python3 3.11 + venv) becomes the base, then buildah builds ./Dockerfile on it with
# --build-arg BASE=..., exactly as `docker build --build-arg BASE=... .` would. Writes an OCI archive and
# prints its size. Needs root (or sudo), and: apt-get install -y buildah mmdebstrap
#
#   hack/image/build.sh [--out dist/trainop-<version>.oci.tar] [--tag ghcr.io/trainop/trainop:<version>]
#
# The base is cached under ${XDG_CACHE_HOME:-~/.cache}/trainop/image (keyed by suite and packages; delete
# it to refresh the Debian packages); buildah's storage lives there too, apart from the system's.
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' src/trainop/__init__.py)
OUT=dist/trainop-${VERSION}.oci.tar
TAG=ghcr.io/trainop/trainop:${VERSION}
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --tag) TAG=$2; shift 2 ;;
    *) echo "build.sh: unknown argument $1 (use --out FILE, --tag NAME)" >&2; exit 2 ;;
  esac
done

for tool in buildah mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool is missing: apt-get install -y buildah mmdebstrap" >&2; exit 1; }
done
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

SUITE=bookworm
PACKAGES=python3,python3-venv
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/trainop/image
BASE_TAR=$CACHE/base-$SUITE-$(echo "$PACKAGES" | tr ',' '-').tar
BASE=localhost/trainop-base:$SUITE
# vfs: overlay mounts are not available in every container this runs in; chroot isolation likewise.
BUILDAH=($SUDO buildah --root "$CACHE/storage" --runroot "$CACHE/run" --storage-driver vfs)
mkdir -p "$CACHE" "$(dirname "$OUT")"

t0=$(date +%s)
stamp() { printf '[%s +%ss] %s\n' "$(date -u +%H:%M:%S)" "$(( $(date +%s) - t0 ))" "$*"; }

if [ ! -s "$BASE_TAR" ]; then
  stamp "base: mmdebstrap $SUITE ($PACKAGES) -> $BASE_TAR"
  # No docs, man pages or translations: the image never shows them.
  $SUDO mmdebstrap --variant=minbase --include="$PACKAGES" \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --aptopt='Acquire::Languages "none"' --format=tar "$SUITE" "$BASE_TAR.part"
  mv "$BASE_TAR.part" "$BASE_TAR"
fi
if ! "${BUILDAH[@]}" inspect --type image "$BASE" >/dev/null 2>&1; then
  stamp "base: importing $BASE_TAR as $BASE"
  ctr=$("${BUILDAH[@]}" from scratch)
  "${BUILDAH[@]}" add -q "$ctr" "$BASE_TAR" / >/dev/null
  "${BUILDAH[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd /bin/bash "$ctr"
  "${BUILDAH[@]}" commit --rm -q "$ctr" "$BASE" >/dev/null
fi

# pip inside the build trusts what pip here trusts: the host's $PIP_CERT (a proxy's CA), mounted for the
# RUN steps only (volumes are not committed into the image).
CA_ARGS=()
if [ -n "${PIP_CERT:-}" ] && [ -f "$PIP_CERT" ]; then
  CA_ARGS=(--volume "$PIP_CERT:/run/trainop-build-ca.crt:ro" --build-arg PIP_CERT=/run/trainop-build-ca.crt)
fi
stamp "image: buildah build --build-arg BASE=$BASE -t $TAG"
"${BUILDAH[@]}" build --isolation chroot --network host --layers=false "${CA_ARGS[@]}" \
  --build-arg "BASE=$BASE" -t "$TAG" -f Dockerfile .
rm -f "$OUT"
"${BUILDAH[@]}" push -q "$TAG" "oci-archive:$OUT:$TAG"
# The image a rebuild replaced (untagged) goes: vfs keeps every layer whole.
"${BUILDAH[@]}" rmi --prune >/dev/null 2>&1 || true
size=$(stat -c %s "$OUT")
stamp "image: $OUT ($TAG): $(( size / 1024 / 1024 )) MiB ($size bytes)"

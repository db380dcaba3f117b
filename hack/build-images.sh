#!/usr/bin/env bash
# Builds the product's images with no Docker daemon: ko's build library on a
# static, non-root base with no shell (hack/images/builder), one image index
# per image with an image for every platform asked for:
#   training-apiserver            ./cmd/apiserver
#   training-controller-manager   ./cmd/controller-manager
#   training-etcd                 ./cmd/training-etcd: etcd (go.etcd.io/etcd/server/v3, the main
#                                 module's, ETCD_VERSION) and its restore from a snapshot
#   training-dashboard            ./cmd/kubectl-training, for kubectl-training dashboard --in-cluster,
#                                 with the dashboard's front end (make dashboard builds it first)
# Each is written as an OCI archive, OUT/<name>.tar, and OUT/images.txt lists
# "name reference digest", one line each. The builds are reproducible: the
# images are dated at the commit's time, the binaries are built with
# -trimpath, and the same commit gives the same digests (make test checks).
#
# Usage: hack/build-images.sh [--platforms linux/amd64,linux/arm64] [--version V]
#                             [--repository ghcr.io/tensorstack] [--out DIR]
# The version defaults to `git describe --tags --always --dirty`, the output
# to _output/images/product.
set -euo pipefail

# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=hack/lib/build.sh
source "${REPO_ROOT}/hack/lib/build.sh"
# shellcheck source=hack/lib/images.sh
source "${REPO_ROOT}/hack/lib/images.sh"

platforms="linux/amd64,linux/arm64"
version=""
repository="${PRODUCT_IMAGE_REPOSITORY}"
out="${OUTPUT_DIR}/images/product"
while (($#)); do
  case "$1" in
    --platforms) platforms="$2"; shift 2 ;;
    --version) version="$2"; shift 2 ;;
    --repository) repository="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) die "unknown argument $1 (see the usage at the top of ${BASH_SOURCE[0]})" ;;
  esac
done
cd "${REPO_ROOT}"
[[ -n "${version}" ]] || version="$(git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
# The commit's time, so that a rebuild of the same commit is identical.
epoch="$(git log -1 --format=%ct 2>/dev/null || echo 0)"

build_image_builder go
mkdir -p "${out}"
start=${SECONDS}
common=(-platforms "${platforms}" -repository "${repository}" -tag "${version}" -revision "${revision}" -epoch "${epoch}" -out "${out}")
# training-dashboard embeds the dashboard's front end: built first, as for the
# plugin, so that the image needs no Node.js.
if command -v npm >/dev/null 2>&1; then
  make -C "${REPO_ROOT}" --no-print-directory dashboard >&2
else
  log "warning: npm not found: training-dashboard is built without the dashboard's front end (make dashboard)"
fi
log "building the product's images ${version} for ${platforms} into ${out#"${REPO_ROOT}/"}"
# ko logs every build and git's state on stderr; keep them out of the way.
mkdir -p "${BUILD_LOG_DIR}"
builder_log="${BUILD_LOG_DIR}/images.log"
{
  "${GO_IMAGE_BUILDER}" go "${common[@]}" -dir "${REPO_ROOT}" \
    -ldflag -s -ldflag -w -ldflag "-X tensorstack.dev/training/pkg/version.gitVersion=${version}" \
    -ldflag "-X go.etcd.io/etcd/api/v3/version.GitSHA=${ETCD_VERSION}" \
    ./cmd/apiserver=training-apiserver ./cmd/controller-manager=training-controller-manager \
    ./cmd/training-etcd=training-etcd ./cmd/kubectl-training=training-dashboard
} >"${out}/images.txt.tmp" 2>"${builder_log}" || { tail -n 20 "${builder_log}" >&2; die "building the images failed (log: ${builder_log#"${REPO_ROOT}/"})"; }
mv "${out}/images.txt.tmp" "${out}/images.txt"
while read -r name ref digest; do
  log "${ref}@${digest} ($(du -h "${out}/${name}.tar" | cut -f1))"
done <"${out}/images.txt"
log "images built in $((SECONDS - start))s"

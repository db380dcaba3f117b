#!/usr/bin/env bash
# Builds a release into _output/release/VERSION, with no Docker and no
# network but the Go module proxy:
#   images/<name>.tar        the images as OCI archives, one image index each
#                            (hack/build-images.sh), and images/images.txt
#   install.yaml             the default installation in one file
#                            (artifacts/deploy/overlays/managed-certs), every
#                            image named by its digest
#   dashboard.yaml           the optional dashboard in the cluster
#                            (artifacts/deploy/components/dashboard)
#   training-X.Y.Z.tgz       the Helm chart (artifacts/charts/training), the
#                            same installation with values, images by digest
#   kubectl-training_VERSION_<os>_<arch>.tar.gz   the kubectl plugin
#   training.yaml            the krew manifest, with the archives' URLs and sha256
#   tensorstack_training-V-py3-none-any.whl   the Python package (python/), V the
#                            release's version in Python's terms: 0.2.0, or 0.2.0+rc.1
#                            for v0.2.0-rc.1 (hack/test-python.sh tests it)
#   RELEASE-NOTES.md         CHANGELOG.md's section for VERSION (its
#                            "Unreleased" section while there is none)
#   checksums.txt            sha256 of every file above
# A release built twice from the same commit is the same, byte for byte.
#
# Usage: hack/release.sh VERSION
# Settings (environment):
#   RELEASE_IMAGE_PLATFORMS    default linux/amd64,linux/arm64
#   RELEASE_PLUGIN_PLATFORMS   default linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64
#   RELEASE_REPOSITORY         where the images are published, default ghcr.io/tensorstack
#   RELEASE_BASE_URL           where the plugin archives are published, default
#                              https://tensorstack.dev/training/releases/VERSION
#   RELEASE_DIR                default _output/release/VERSION
set -euo pipefail

# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=hack/lib/images.sh
source "${REPO_ROOT}/hack/lib/images.sh"
# shellcheck source=hack/lib/packages.sh
source "${REPO_ROOT}/hack/lib/packages.sh"
# shellcheck source=hack/lib/python.sh
source "${REPO_ROOT}/hack/lib/python.sh"

version="${1:-}"
[[ "${version}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  die "usage: hack/release.sh VERSION, a semantic version such as v0.2.0 or v0.2.0-rc.1 (got '${version}')"
image_platforms="${RELEASE_IMAGE_PLATFORMS:-linux/amd64,linux/arm64}"
plugin_platforms="${RELEASE_PLUGIN_PLATFORMS:-linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64}"
repository="${RELEASE_REPOSITORY:-${PRODUCT_IMAGE_REPOSITORY}}"
base_url="${RELEASE_BASE_URL:-https://tensorstack.dev/training/releases/${version}}"
out="${RELEASE_DIR:-${OUTPUT_DIR}/release/${version}}"
[[ "${out}" == /* ]] || out="${REPO_ROOT}/${out}"
# The pinned tools it packs with, and no other: kubectl renders install.yaml (kustomize), helm checks the chart.
"${REPO_ROOT}/hack/build-test-binaries.sh" kubectl helm
kubectl="${BIN_DIR}/kubectl"
cd "${REPO_ROOT}"
epoch="$(git log -1 --format=%ct 2>/dev/null || echo 0)"
start=${SECONDS}
rm -rf "${out}"
mkdir -p "${out}/images"
log "release ${version} into ${out#"${REPO_ROOT}/"}"

# 1. The images.
"${REPO_ROOT}/hack/build-images.sh" --platforms "${image_platforms}" --version "${version}" \
  --repository "${repository}" --out "${out}/images"
declare -A digests
while read -r name _ digest; do
  digests["${name}"]="${digest}"
done <"${out}/images/images.txt"

# 2. install.yaml: the default installation, each image pinned by digest
# (the tag stays for people reading it; the digest decides).
overlay="${out}/.install"
mkdir -p "${overlay}"
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "- $(realpath --relative-to="${overlay}" "${REPO_ROOT}/artifacts/deploy/overlays/managed-certs")"
  echo "images:"
  for name in training-apiserver training-controller-manager training-etcd training-dashboard; do
    [[ -n "${digests[${name}]:-}" ]] || die "no digest for ${name} in ${out}/images/images.txt"
    echo "- name: ${PRODUCT_IMAGE_REPOSITORY}/${name}"
    echo "  newName: ${repository}/${name}"
    echo "  newTag: ${version}"
    echo "  digest: ${digests[${name}]}"
  done
} >"${overlay}/kustomization.yaml"
{
  echo "# TensorStack Training ${version}: the default installation (3-member etcd, 2 apiservers, 2 controllers,"
  echo "# a serving certificate it keeps itself). Install or upgrade with"
  echo "#   kubectl apply --server-side -f install.yaml"
  echo "# Images from ${repository}; to install from another registry, push images/*.tar there and replace"
  echo "# '${repository}/' below (docs/install.md)."
  "${kubectl}" kustomize "${overlay}"
} >"${out}/install.yaml"
rm -rf "${overlay}"
grep -q "@sha256:" "${out}/install.yaml" || die "install.yaml names no image by digest"
if grep -E '^\s+image: ' "${out}/install.yaml" | grep -v '@sha256:' >&2; then
  die "install.yaml names the images above without a digest"
fi
log "install.yaml: $(grep -c '^kind: ' "${out}/install.yaml") objects"

# 2b. dashboard.yaml: the optional dashboard in the cluster
# (artifacts/deploy/components/dashboard), pinned by digest, applied beside
# install.yaml.
overlay="${out}/.dashboard"
mkdir -p "${overlay}"
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "components:"
  echo "- $(realpath --relative-to="${overlay}" "${REPO_ROOT}/artifacts/deploy/components/dashboard")"
  echo "images:"
  echo "- name: ${PRODUCT_IMAGE_REPOSITORY}/training-dashboard"
  echo "  newName: ${repository}/training-dashboard"
  echo "  newTag: ${version}"
  echo "  digest: ${digests[training-dashboard]}"
} >"${overlay}/kustomization.yaml"
{
  echo "# TensorStack Training ${version}: the dashboard in the cluster, optional. Apply it after install.yaml with"
  echo "#   kubectl apply --server-side -f dashboard.yaml"
  echo "# Users sign in with their own bearer tokens (docs/dashboard.md)."
  "${kubectl}" kustomize "${overlay}"
} >"${out}/dashboard.yaml"
rm -rf "${overlay}"
grep -q "training-dashboard:${version}@sha256:" "${out}/dashboard.yaml" || die "dashboard.yaml names its image without a digest"

# 3. The Helm chart: artifacts/charts/training with the manifests it links
# copied in (as its .helmignore leaves them), versioned as the release, every
# image pinned by digest. Packed here rather than by helm package, whose
# archives carry the time of packing.
helm="${BIN_DIR}/helm"
chart_version="${version#v}"
stage="${out}/.chart"
rm -rf "${stage}"
mkdir -p "${stage}"
cp -RL "${REPO_ROOT}/artifacts/charts/training" "${stage}/training"
find "${stage}/training/files" \( -name kustomization.yaml -o -name README.md -o -name '*.json' \) -delete
sed -i -e "s|^version: .*|version: ${chart_version}|" -e "s|^appVersion: .*|appVersion: ${version}|" "${stage}/training/Chart.yaml"
values="${stage}/training/values.yaml"
sed -i "s|^  registry: .*|  registry: ${repository}|" "${values}"
for name in training-apiserver training-controller-manager training-etcd training-dashboard; do
  sed -i "/^    repository: ${name}\$/{n;s|^    digest: \"\"\$|    digest: \"${digests[${name}]}\"|}" "${values}"
done
"${helm}" lint --strict "${stage}/training" --namespace tensorstack-system >/dev/null 2>&1 ||
  die "the release's chart does not lint: ${helm} lint --strict ${stage}/training --namespace tensorstack-system"
if "${helm}" template training "${stage}/training" --namespace tensorstack-system |
  grep -E '^\s+image: ' | grep -v "@sha256:" >&2; then
  die "the chart renders the images above without a digest"
fi
chart="training-${chart_version}.tgz"
find "${stage}" -exec touch -h -d "@${epoch}" {} +
tar --sort=name --mtime="@${epoch}" --owner=0 --group=0 --numeric-owner -C "${stage}" -cf - training | gzip -9n >"${out}/${chart}"
rm -rf "${stage}"
log "${chart}: $(du -h "${out}/${chart}" | cut -f1)"

# 4. The kubectl plugin for each platform, in reproducible archives, with the dashboard's front end embedded: built
# here with npm, so that the plugin needs no Node.js where it runs.
if command -v npm >/dev/null 2>&1; then
  make -C "${REPO_ROOT}" --no-print-directory dashboard
else
  log "warning: npm not found: the plugin's dashboard is built without its front end (make dashboard)"
fi
stage="${out}/.plugin"
IFS=, read -ra platforms <<<"${plugin_platforms}"
for platform in "${platforms[@]}"; do
  os="${platform%/*}" arch="${platform#*/}" exe=""
  [[ "${os}" == windows ]] && exe=".exe"
  rm -rf "${stage}"
  mkdir -p "${stage}"
  CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" go build -trimpath \
    -ldflags "-s -w -X tensorstack.dev/training/pkg/version.gitVersion=${version}" \
    -o "${stage}/kubectl-training${exe}" ./cmd/kubectl-training
  archive="kubectl-training_${version}_${os}_${arch}.tar.gz"
  touch -d "@${epoch}" "${stage}"/*
  tar --sort=name --mtime="@${epoch}" --owner=0 --group=0 --numeric-owner -C "${stage}" -cf - . | gzip -9n >"${out}/${archive}"
  log "${archive}: $(du -h "${out}/${archive}" | cut -f1)"
done
rm -rf "${stage}"

# 5. The krew manifest: the template's description, and a platform for
# each archive built.
{
  echo "# Krew plugin manifest of kubectl-training ${version} (hack/release.sh)."
  sed -n '/^apiVersion:/,/^  platforms:$/p' "${REPO_ROOT}/artifacts/krew/training.yaml" | sed '$d' |
    sed "s|^\(  version: \)v0\.0\.0 # RELEASE.*$|\1${version}|"
  echo "  platforms:"
  for platform in "${platforms[@]}"; do
    os="${platform%/*}" arch="${platform#*/}" exe=""
    [[ "${os}" == windows ]] && exe=".exe"
    archive="kubectl-training_${version}_${os}_${arch}.tar.gz"
    cat <<EOT
  - selector:
      matchLabels:
        os: ${os}
        arch: ${arch}
    uri: ${base_url}/${archive}
    sha256: "$(sha256sum "${out}/${archive}" | cut -d' ' -f1)"
    bin: kubectl-training${exe}
EOT
  done
} >"${out}/training.yaml"
if grep -q "# RELEASE\|00000000000000000000" "${out}/training.yaml"; then
  die "the krew manifest still has placeholders: ${out}/training.yaml"
fi

# 6. The Python package's wheel, with the release's version: a pre-release
# such as -rc.1 becomes a local version label, +rc.1, which Python's version
# rules accept for any label. The file dates come from the commit.
require_python_build
py_version="${version#v}"
if [[ "${py_version}" == *-* ]]; then
  pre="${py_version#*-}"
  py_version="${py_version%%-*}+${pre//-/.}"
fi
py_src="$(mktemp -d)"
cp -R "${REPO_ROOT}/python/." "${py_src}/"
sed -i "s/^version = \".*\"$/version = \"${py_version}\"/" "${py_src}/pyproject.toml"
grep -q "^version = \"${py_version}\"$" "${py_src}/pyproject.toml" || die "could not set the Python package's version"
wheel="$(SOURCE_DATE_EPOCH="${epoch}" build_python_wheel "${py_src}" "${out}")"
rm -rf "${py_src}"
log "${wheel##*/}: $(du -h "${wheel}" | cut -f1)"

# 7. Release notes: the CHANGELOG's section for this version.
notes="$(awk -v v="${version#v}" '
  /^## / { if (found) exit; if ($0 ~ "^## \\[?v?" v "\\]?( |$)") found = 1; next }
  found { print }
' CHANGELOG.md)"
from="${version}"
if [[ -z "${notes//[[:space:]]/}" ]]; then
  notes="$(awk '/^## / { if (found) exit; if ($0 ~ /^## Unreleased/) found = 1; next } found { print }' CHANGELOG.md)"
  from="Unreleased"
fi
[[ -n "${notes//[[:space:]]/}" ]] || die "CHANGELOG.md has no section for ${version} and no Unreleased section"
printf '# TensorStack Training %s\n%s\n' "${version}" "${notes}" >"${out}/RELEASE-NOTES.md"
log "release notes from CHANGELOG.md's ${from} section"

# 8. Checksums of everything published.
(cd "${out}" && find . -type f ! -name checksums.txt -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >checksums.txt)
log "release ${version} built in $((SECONDS - start))s: ${out#"${REPO_ROOT}/"}"

#!/usr/bin/env bash
# Makes the certificates of an installation without cert-manager, and the
# kustomize Components that install them, in _output/deploy-certs (see
# --help). The work is done by hack/deploycerts, built here with the
# project's certificate package (pkg/certs), so every certificate the
# project makes is made one way.
#
# Usage: hack/deploy-certs.sh [--out DIR] [--cluster-domain D] [--san NAME]...
#                             [--days N] [--renew] [--new-ca]
# Then: kubectl apply -k artifacts/deploy/overlays/generated-certs
set -euo pipefail

# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

(cd "${REPO_ROOT}" && go build -o "${BIN_DIR}/deploycerts" ./hack/deploycerts) || die "building hack/deploycerts failed"
OUTPUT_DIR="${OUTPUT_DIR}" exec "${BIN_DIR}/deploycerts" "$@"

#!/usr/bin/env bash
# Keeps the layering the architecture depends on (make lint):
#   - the API server links no controller code: it previews pods through
#     pkg/podbuilder, not through pkg/controller;
#   - pkg/podbuilder stays pure: no client, informer or controller in it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO="${GO:-go}"
module="$("${GO}" list -m)"
failed=0

# forbid PACKAGE PATTERN WHY: fails when PACKAGE depends on a package
# matching the extended regular expression PATTERN.
forbid() {
  local pkg="$1" pattern="$2" why="$3" deps found
  # A package that does not load has no dependencies to check: that is a failure, not a pass.
  if ! deps="$("${GO}" list -deps "${pkg}")"; then
    echo "${GO} list -deps ${pkg} failed; its imports cannot be checked" >&2
    exit 1
  fi
  found="$(grep -E "${pattern}" <<<"${deps}")" || [[ $? -eq 1 ]] # 1: no match
  if [[ -n "${found}" ]]; then
    echo "${pkg} must not depend on ${pattern} (${why}); it does through:" >&2
    echo "${found}" | sed 's/^/  /' >&2
    failed=1
  fi
}

forbid ./cmd/apiserver "^${module}/pkg/controller(/|$)" "the API server does not link the controller"
forbid ./pkg/podbuilder "^${module}/pkg/(controller|generated/(clientset|informers|listers))(/|$)|^k8s.io/client-go/" \
  "the pod builder is pure"

if ((failed)); then
  exit 1
fi
echo "imports: the API server links no controller; the pod builder is pure"

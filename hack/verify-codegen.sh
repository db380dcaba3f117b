#!/usr/bin/env bash
# Fails when the generated code in the tree differs from what
# hack/update-codegen.sh produces from the current types.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRATCH=$(mktemp -d)
trap 'rm -rf "${SCRATCH}"' EXIT

# Generate into a copy so a stale tree is reported, not silently fixed.
tar -C "${ROOT}" --exclude=./_output --exclude=./.git -cf - . | tar -C "${SCRATCH}" -xf -
(cd "${SCRATCH}" && hack/update-codegen.sh >/dev/null)

if ! diff -Naupr "${ROOT}/pkg" "${SCRATCH}/pkg" || \
   ! diff -Naupr "${ROOT}/artifacts" "${SCRATCH}/artifacts" || \
   ! diff -Naupr "${ROOT}/hack/local" "${SCRATCH}/hack/local" || \
   ! diff -Naup "${ROOT}/python/src/tensorstack/training/_kinds.py" "${SCRATCH}/python/src/tensorstack/training/_kinds.py" || \
   ! diff -Naup "${ROOT}/hack/api-rule-violations.list" "${SCRATCH}/hack/api-rule-violations.list"; then
    echo "Generated code is stale: run hack/update-codegen.sh (make update-codegen)." >&2
    exit 1
fi
echo "Generated code is up to date."

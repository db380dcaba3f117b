#!/usr/bin/env bash
# Regenerates deepcopy, conversion, defaults, OpenAPI, clientset, listers,
# informers and apply configurations from the types in pkg/apis.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
MODULE=tensorstack.dev/training
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"
# PodTemplateSpec pulls in core/v1 and intstr; their model names live in the
# read-only module cache.
KUBE_CODEGEN_READONLY_PKGS+=(k8s.io/api/core/v1 k8s.io/apimachinery/pkg/util/intstr)

kube::codegen::gen_helpers \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

kube::codegen::gen_openapi \
    --extra-pkgs k8s.io/api/core/v1 \
    --extra-pkgs k8s.io/apimachinery/pkg/util/intstr \
    --output-dir "${ROOT}/pkg/generated/openapi" \
    --output-pkg "${MODULE}/pkg/generated/openapi" \
    --output-model-name-file zz_generated.model_name.go \
    --report-filename "${ROOT}/hack/api-rule-violations.list" \
    --update-report \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

# Core types inside our types get client-go's apply configurations, so an
# apply configuration of a job is declarative all the way down.
CORE_APPLYCONFIGS=k8s.io/client-go/applyconfigurations/core/v1
APPLYCONFIG_EXTERNALS="k8s.io/api/core/v1.PodTemplateSpec:${CORE_APPLYCONFIGS}"
APPLYCONFIG_EXTERNALS+=",k8s.io/api/core/v1.ResourceRequirements:${CORE_APPLYCONFIGS}"
APPLYCONFIG_EXTERNALS+=",k8s.io/api/core/v1.ObjectReference:${CORE_APPLYCONFIGS}"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --applyconfig-externals "${APPLYCONFIG_EXTERNALS}" \
    --applyconfig-openapi-schema <(go run ./pkg/generated/openapi/cmd/models-schema) \
    --output-dir "${ROOT}/pkg/generated" \
    --output-pkg "${MODULE}/pkg/generated" \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

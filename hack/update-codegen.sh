#!/usr/bin/env bash
# Regenerates deepcopy, conversion, defaults, protobuf, OpenAPI, clientset,
# listers, informers and apply configurations from the types in pkg/apis.
# Needs protoc (Debian: protobuf-compiler), which it installs when run as
# root and otherwise names.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
MODULE=tensorstack.dev/training
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

# shellcheck source=hack/lib/common.sh
source "${ROOT}/hack/lib/common.sh"
# shellcheck source=hack/lib/packages.sh
source "${ROOT}/hack/lib/packages.sh"
require_packages "generating the protobuf code" protobuf-compiler:protoc

# Every temporary file of the run goes in one directory, removed on exit:
# kube_codegen.sh's gen_openapi makes a report with mktemp even when it
# writes the report in place (--update-report), and never removes it.
SCRATCH_DIR=$(mktemp -d)
trap 'rm -rf "${SCRATCH_DIR}"' EXIT
export TMPDIR="${SCRATCH_DIR}"

# The module cache holds a module's source only once it is downloaded; a
# fresh machine has not downloaded code-generator, a tool no build imports.
go mod download k8s.io/code-generator
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
[[ -f "${CODEGEN_PKG}/kube_codegen.sh" ]] || die "k8s.io/code-generator is not in the module cache (${CODEGEN_PKG:-no directory})"
# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"
# PodTemplateSpec pulls in core/v1 and intstr; their model names live in the
# read-only module cache.
KUBE_CODEGEN_READONLY_PKGS+=(k8s.io/api/core/v1 k8s.io/apimachinery/pkg/util/intstr)

kube::codegen::gen_helpers \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

# gen_protobuf writes generated.proto and generated.pb.go, and the protobuf
# struct tags, for the packages under $1 whose doc.go says
# +k8s:protobuf-gen=package. kube_codegen.sh has no protobuf step, so this
# drives go-to-protobuf itself.
gen_protobuf() (
    local in_dir="$1"
    local pkgs=()
    while read -r dir; do
        pkgs+=("$(cd "${dir}" && go list -find .)")
    done < <(
        grep -rl --include doc.go -e '^// +k8s:protobuf-gen=package' "${in_dir}" \
            | xargs -r -n1 dirname | LC_ALL=C sort -u
    )
    if [ "${#pkgs[@]}" == 0 ]; then
        return 0
    fi
    if ! command -v protoc >/dev/null; then
        echo "protoc not found: install protobuf-compiler" >&2
        return 1
    fi

    # go-to-protobuf runs protoc-gen-gogo and goimports from PATH. goimports,
    # when missing, is taken at the x/tools version code-generator uses.
    export PATH="${GOBIN}:${PATH}"
    (
        cd "${CODEGEN_PKG}"
        GO111MODULE=on go install \
            k8s.io/code-generator/cmd/go-to-protobuf \
            k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo
        if ! command -v goimports >/dev/null; then
            GO111MODULE=on go install \
                "golang.org/x/tools/cmd/goimports@$(go list -m -f '{{.Version}}' golang.org/x/tools)"
        fi
    )
    local gogo
    gogo=$(cd "${CODEGEN_PKG}" && go list -m -f '{{.Dir}}' github.com/gogo/protobuf)

    # protoc finds a .proto by its Go import path below --output-dir. A
    # scratch tree of symlinks lays this module and the module cache's
    # k8s.io/api, k8s.io/apimachinery and gogoproto out that way, so nothing
    # is written outside this repository.
    local tree
    tree=$(mktemp -d) # in SCRATCH_DIR
    mkdir -p "${tree}/k8s.io" "${tree}/github.com/gogo" "${tree}/$(dirname "${MODULE}")"
    ln -s "${ROOT}" "${tree}/${MODULE}"
    ln -s "$(go list -m -f '{{.Dir}}' k8s.io/api)" "${tree}/k8s.io/api"
    ln -s "$(go list -m -f '{{.Dir}}' k8s.io/apimachinery)" "${tree}/k8s.io/apimachinery"
    ln -s "${gogo}" "${tree}/github.com/gogo/protobuf"

    # The packages our types refer to, all in the read-only module cache,
    # are named with a leading "-": go-to-protobuf reads their types but
    # neither cleans nor regenerates their protobuf files.
    local refs=(
        k8s.io/apimachinery/pkg/util/intstr
        k8s.io/apimachinery/pkg/api/resource
        k8s.io/apimachinery/pkg/runtime/schema
        k8s.io/apimachinery/pkg/runtime
        k8s.io/apimachinery/pkg/apis/meta/v1
        k8s.io/api/core/v1
    )
    # gogo.proto imports google/protobuf/descriptor.proto; gogo's copy of it
    # comes with the module, so protoc's own include files are not needed.
    echo "Generating protobuf code for ${#pkgs[@]} targets"
    go-to-protobuf \
        --go-header-file "${BOILERPLATE}" \
        --output-dir "${tree}" \
        --proto-import "${gogo}/protobuf" \
        --apimachinery-packages "$(IFS=,; echo "${refs[*]/#/-}")" \
        --packages "$(IFS=,; echo "${pkgs[*]}")"

    # protoc-gen-gogo names a message's Go type by its own camel case, which
    # capitalizes a letter after a digit (message T9kScheduler becomes
    # T9KScheduler). Give the generated methods back the Go type's name.
    # go-to-protobuf cannot match such a type, so the protobuf tags of its
    # fields are kept by hand in types.go.
    local pkg message gogo_name
    for pkg in "${pkgs[@]}"; do
        while read -r message; do
            # shellcheck disable=SC2001 # upper-casing has no expansion form
            gogo_name=$(sed 's/\([0-9]\)\([a-z]\)/\1\u\2/g' <<< "${message}")
            sed -i "s/\b${gogo_name}\b/${message}/g" "${tree}/${pkg}/generated.pb.go"
        done < <(sed -n 's/^message \([A-Za-z0-9]*[0-9][a-z][A-Za-z0-9]*\) {$/\1/p' "${tree}/${pkg}/generated.proto")
    done
)

gen_protobuf "${ROOT}/pkg/apis"

kube::codegen::gen_openapi \
    --extra-pkgs k8s.io/api/core/v1 \
    --extra-pkgs k8s.io/api/autoscaling/v1 \
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

# The clientset asks for protobuf, falling back to JSON, as client-go's
# clientsets do for the built-in kinds.
kube::codegen::gen_client \
    --with-watch \
    --prefers-protobuf \
    --with-applyconfig \
    --applyconfig-externals "${APPLYCONFIG_EXTERNALS}" \
    --applyconfig-openapi-schema <(go run ./pkg/generated/openapi/cmd/models-schema) \
    --output-dir "${ROOT}/pkg/generated" \
    --output-pkg "${MODULE}/pkg/generated" \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

# The manifests' lists of kinds (the roles, the local stack's Kueue
# configuration) and the Python client's table follow the table of kinds,
# pkg/apis/batch.Kinds.
mapfile -t KIND_LISTS < <(grep -rlF --include='*.yaml' '# kinds (hack/update-codegen.sh):' "${ROOT}/artifacts" "${ROOT}/hack/local")
go run ./hack/kindlists -python python/src/tensorstack/training/_kinds.py "${KIND_LISTS[@]}"

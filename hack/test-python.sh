#!/usr/bin/env bash
# Builds the Python client (python/) into a wheel in _output/python and runs
# its tests against what the wheel holds, with Debian's Python
# (/usr/bin/python3: the interpreter that sees Debian's python3-kubernetes;
# a python3 earlier on PATH may be another one). Run as root, it installs the
# Debian packages it needs (hack/lib/packages.sh).
#
# Usage: hack/test-python.sh          the unit tests (python/tests)
#        hack/test-python.sh e2e      the e2e tests (python/tests/e2e) against the
#                                     running stack that KUBECONFIG and E2E_LOCAL_DIR
#                                     name (hack/test-e2e.sh runs it so)
#        hack/test-python.sh wheel    only the wheel (make python)
set -euo pipefail
mode="${1:-unit}"

# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=hack/lib/packages.sh
source "${REPO_ROOT}/hack/lib/packages.sh"
# shellcheck source=hack/lib/python.sh
source "${REPO_ROOT}/hack/lib/python.sh"

require_python_build
# IPython: train(func) is shown to ship a function from a real notebook
# session's cells.
[[ "${mode}" == wheel ]] || require_packages "the Python client's tests" python3-kubernetes:"${PYTHON_DIST}/kubernetes" \
  python3-yaml:"${PYTHON_DIST}/yaml" python3-pytest:"${PYTHON_DIST}/pytest" python3-ipython:"${PYTHON_DIST}/IPython"

out="${OUTPUT_DIR}/python"
rm -rf "${out}"
mkdir -p "${out}"
wheel="$(build_python_wheel "${REPO_ROOT}/python" "${out}")"
log "built ${wheel#"${REPO_ROOT}/"} ($(stat -c %s "${wheel}") bytes)"
[[ "${mode}" != wheel ]] || exit 0

# The tests import the package from the unpacked wheel, so that a module
# the wheel leaves out fails them.
unpacked="$(mktemp -d)"
trap 'rm -rf "${unpacked}"' EXIT
"${PYTHON}" -m zipfile -e "${wheel}" "${unpacked}"
cd "${REPO_ROOT}/python"
case "${mode}" in
  unit) tests=(tests --ignore=tests/e2e) ;;
  e2e)
    [[ -n "${KUBECONFIG:-}" && -n "${E2E_LOCAL_DIR:-}" ]] || die "e2e: KUBECONFIG and E2E_LOCAL_DIR must name a running stack"
    tests=(tests/e2e -rs)
    ;;
  *) die "usage: hack/test-python.sh [e2e | wheel]" ;;
esac
# The tests' temporary directories go with the unpacked wheel, not into
# pytest's default /tmp/pytest-of-<user>, which it keeps.
PYTHONPATH="${unpacked}" PYTHONDONTWRITEBYTECODE=1 "${PYTHON}" -m pytest -q -p no:cacheprovider \
  --basetemp="${unpacked}/.pytest-tmp" "${tests[@]}"

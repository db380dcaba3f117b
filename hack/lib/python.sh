#!/usr/bin/env bash
# The Python package (python/) as a wheel, for hack/test-python.sh, the
# training image (hack/build-node-images.sh) and releases (hack/release.sh).
# Source it after hack/lib/common.sh and hack/lib/packages.sh.

# Debian's own interpreter: the one that sees Debian's python3-* packages (a
# python3 earlier on PATH may be another).
PYTHON=/usr/bin/python3
PYTHON_DIST=/usr/lib/python3/dist-packages

# require_python_build makes sure Debian's build and hatchling are there.
require_python_build() {
  require_packages "the Python package's wheel" python3:"${PYTHON}" python3-build:"${PYTHON_DIST}/build" \
    python3-hatchling:"${PYTHON_DIST}/hatchling"
}

# build_python_wheel SOURCE OUTDIR builds the wheel of the package in SOURCE
# (python/ or a copy of it) into OUTDIR, which must exist, and prints its
# path. File dates follow SOURCE_DATE_EPOCH when it is set. Debian ships no
# python3-editables, which hatchling's metadata lists for editable installs
# only: the wheel needs none of it, so build's dependency check is off.
build_python_wheel() {
  local src="$1" out="$2" build_log
  build_log="$(mktemp)"
  if ! "${PYTHON}" -m build --wheel --no-isolation --skip-dependency-check --outdir "${out}" "${src}" >"${build_log}" 2>&1; then
    tail -n 20 "${build_log}" >&2
    rm -f "${build_log}"
    die "building the Python package's wheel from ${src} failed"
  fi
  rm -f "${build_log}"
  ls "${out}"/tensorstack_training-*.whl
}

#!/usr/bin/env bash
# The real node's images: names, archives and what goes into them. Source
# it after hack/lib/common.sh.
# shellcheck disable=SC2034

IMAGES_DIR="${OUTPUT_DIR}/images"
PAUSE_IMAGE="localhost/tensorstack/pause:v1"
PAUSE_ARCHIVE="${IMAGES_DIR}/pause.tar"
# The image the examples that really train run (artifacts/examples).
TRAINING_IMAGE="localhost/tensorstack/training:v1"
TRAINING_ARCHIVE="${IMAGES_DIR}/training.tar"
# Images under this prefix exist only on the real node; the local stack's
# admission policy sends pods running them there (hack/local/real-node-policy.yaml).
REAL_NODE_IMAGE_PREFIX="localhost/tensorstack/"
DEBIAN_SUITE="bookworm"
DEBIAN_MIRROR="http://deb.debian.org/debian"
# Debian's PyTorch 1.13 (CPU, gloo; torch.distributed.run is torchrun),
# XGBoost 1.7 (its collective and the Python tracker), and Open MPI 4.1 with
# mpi4py and an SSH server for MPIJob's launcher.
TRAINING_PACKAGES=(python3 python3-torch python3-xgboost openmpi-bin python3-mpi4py openssh-server)
# Packages the training packages depend on but never run, installed as
# empty stubs: Debian's SciPy (for XGBoost) depends on Pythran, a compiler
# it needs only to be built, which would bring gcc, clang and Python's
# headers: half a gigabyte.
TRAINING_STUB_PACKAGES=(python3-pythran)

# A second training image with Open MPI 5 (Debian trixie's, whose mpirun
# starts its ranks with PRRTE and reads its own variables), to prove that an
# MPIJob's ranks reach the workers with either major version. Only the MPI
# packages, mpi4py (with NumPy, which the example script uses) and an SSH
# server: no PyTorch. Built where NODE_IMAGE_MPI5=1 asks for it (the test
# builds do) or it is built already; a real node imports it when it is built.
MPI5_IMAGE="localhost/tensorstack/training-mpi5:v1"
MPI5_ARCHIVE="${IMAGES_DIR}/training-mpi5.tar"
MPI5_DEBIAN_SUITE="trixie"
MPI5_PACKAGES=(python3 python3-numpy python3-mpi4py openmpi-bin openssh-server)
# UCX (which trixie's libmpi links) depends on AMD's HIP runtime, which
# brings LLVM 17, comgr and Z3: 235 MB. Only UCX's perftest plugin for ROCm
# links it, which neither mpirun nor a rank ever loads. A stub's version
# follows its "=": UCX asks for at least 4.5.2, and trixie's libc6 breaks
# any below 5.7.1-5+b1.
MPI5_STUB_PACKAGES=(libamdhip64-5=5.7.1-99~tensorstack.stub)

# The image builder (hack/images/builder: go-containerregistry, and ko for the
# product's images), built into _output/bin by build_image_builder; needs
# hack/lib/build.sh. Two builds of it:
#   IMAGE_BUILDER     without ko (-tags noko): layers, images of layers, push,
#                     digest. The real nodes' images, which a first make run
#                     waits for, need only these; ko brings six in seven of the
#                     builder's packages (a cold compile of 98 s beside make
#                     build on 2 cores, against about 15 s without it).
#   GO_IMAGE_BUILDER  the whole builder, for the product's images (builder go).
IMAGE_BUILDER="${BIN_DIR}/builder"
GO_IMAGE_BUILDER="${BIN_DIR}/builder-go"
IMAGE_BUILDER_DIR="${REPO_ROOT}/hack/images/builder"

# build_image_builder [go] builds IMAGE_BUILDER, or with go GO_IMAGE_BUILDER,
# unless it is up to date. With the caller's GOFLAGS (-trimpath, no DWARF), so
# that it shares the compiled libraries of every other build.
build_image_builder() {
  local version name=builder tags=noko
  [[ "${1:-}" != go ]] || name=builder-go tags=""
  version="$(cat "${IMAGE_BUILDER_DIR}"/*.go | sha256sum | cut -c1-12)${tags:++${tags}}"
  build_total=$((build_total + 1))
  GOFLAGS="${GOFLAGS:+${GOFLAGS} }-mod=mod" build_one "${name}" "${version}" "${IMAGE_BUILDER_DIR}" . "" "${tags}"
}

# image_builder_stamp prints the built IMAGE_BUILDER's version stamp, for the
# keys of images it makes: a change of the builder rebuilds them.
image_builder_stamp() {
  cat "${BIN_DIR}/.builder.version"
}

# Where the product's images are published (hack/build-images.sh,
# hack/release.sh); a release's install.yaml names them here, by digest.
PRODUCT_IMAGE_REPOSITORY="ghcr.io/tensorstack"

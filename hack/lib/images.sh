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
# Debian's PyTorch 1.13 (CPU, gloo; torch.distributed.run is torchrun).
TRAINING_PACKAGES=(python3 python3-torch)

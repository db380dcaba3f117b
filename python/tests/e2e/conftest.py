# Copyright The TensorStack Training Authors.
# Licensed under the Apache License, Version 2.0.
"""The e2e tests run against a local stack (hack/test-e2e.sh sets
KUBECONFIG and E2E_LOCAL_DIR); each test gets a namespace of its own."""

import os
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

@pytest.fixture(scope="session")
def admin_api():
    if not os.environ.get("E2E_LOCAL_DIR") or not os.environ.get("KUBECONFIG"):
        pytest.skip("no local stack (run by hack/test-e2e.sh)")
    k8s_config.load_kube_config()
    return k8s.ApiClient()


@pytest.fixture
def namespace(admin_api):
    name = f"e2e-py-{uuid.uuid4().hex[:8]}"
    core = k8s.CoreV1Api(admin_api)
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)


@pytest.fixture
def real_node():
    if os.environ.get("E2E_REAL_NODE") != "1":
        pytest.skip("the stack runs no real node (its training image runs only there)")

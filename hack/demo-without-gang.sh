#!/usr/bin/env bash
# Shows the problem gang scheduling solves, on a running local stack
# (make local-up): two TensorFlow jobs of six one-GPU pods each, on two fake
# nodes with four GPUs each (eight in all). Without spec.scheduler.t9kScheduler
# the pods are placed one by one and the jobs split the GPUs: the second job
# holds the two GPUs left with pods that cannot train without their peers
# (a run here: 6 and 2 placed; when both start together, 4 and 4, and real
# synchronous training then waits forever). With GANG=1 the same jobs ask
# for gang scheduling: one gets all six, the other none. Prints the placed
# pods per job, then deletes what it created.
#
# Usage: hack/demo-without-gang.sh            (no gang scheduling)
#        GANG=1 hack/demo-without-gang.sh     (the same with t9kScheduler)
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/lib/common.sh
source "${HACK_DIR}/lib/common.sh"
# shellcheck source=hack/lib/local.sh
source "${HACK_DIR}/lib/local.sh"

[[ -f "${LOCAL_STATE_FILE}" ]] || die "no local control plane; start one with make local-up"
load_settings
mode=off
[[ "${GANG:-0}" == 1 ]] && mode=on
NS="demo-gang-${mode}"
POOL="demo-gang-${mode}"

cleanup() {
  kubectl_local delete namespace "${NS}" --ignore-not-found --wait=false >/dev/null || true
  kubectl_local delete node "${POOL}-0" "${POOL}-1" --ignore-not-found >/dev/null || true
}
trap cleanup EXIT

kubectl_local create namespace "${NS}" >/dev/null
for i in 0 1; do
  kubectl_local apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: ${POOL}-${i}
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {type: kwok, e2e.tensorstack.dev/pool: ${POOL}, kubernetes.io/hostname: ${POOL}-${i}}
spec:
  taints: [{key: e2e.tensorstack.dev/pool, value: ${POOL}, effect: NoSchedule}]
status:
  capacity: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "4"}
  allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "4"}
EOF
done

scheduler=""
if [[ "${GANG:-0}" == 1 ]]; then
  scheduler='  scheduler: {t9kScheduler: {queue: default}}'
fi
template='
    template:
      spec:
        nodeSelector: {e2e.tensorstack.dev/pool: '"${POOL}"'}
        tolerations: [{key: e2e.tensorstack.dev/pool, value: '"${POOL}"', effect: NoSchedule}]
        containers:
        - name: tensorflow
          image: busybox
          resources: {limits: {nvidia.com/gpu: 1}}'
for job in job-a job-b; do
  kubectl_local -n "${NS}" apply -f - >/dev/null <<EOF
apiVersion: batch.tensorstack.dev/v1beta1
kind: TensorFlowTrainingJob
metadata: {name: ${job}}
spec:
${scheduler}
  replicaSpecs:
  - type: chief
    replicas: 1${template}
  - type: worker
    replicas: 5${template}
EOF
done

log "two jobs of 6 one-GPU pods on 8 GPUs, gang scheduling ${mode}; waiting 15 s"
sleep 15
for job in job-a job-b; do
  placed="$(kubectl_local -n "${NS}" get pods -l "batch.tensorstack.dev/job-name=${job}" \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true)"
  log "${job}: ${placed} of 6 pods placed"
done
kubectl_local -n "${NS}" get tj

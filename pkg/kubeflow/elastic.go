/*
Copyright The TensorStack Training Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kubeflow

import (
	"fmt"
	"strconv"
	"strings"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// convertedElasticPolicy is what elasticPolicy becomes.
type convertedElasticPolicy struct {
	config *v1beta1.ElasticConfig
	// procPerNode is the deprecated elasticPolicy.nProcPerNode, when given.
	procPerNode *procPerNodeSetting
}

// convertElasticPolicy converts elasticPolicy: the range of replicas into
// spec.elastic, the rendezvous settings into torchrun's.
func convertElasticPolicy(spec *object, jobName string, replicas []v1beta1.ReplicaSpec, torchrun torchrunTarget, w *warnings) (convertedElasticPolicy, error) {
	var out convertedElasticPolicy
	value, path, present := spec.take("elasticPolicy")
	if !present {
		return out, nil
	}
	policy, err := newObject(path, value)
	if err != nil {
		return out, err
	}
	if out.config, err = elasticRange(policy, replicas); err != nil {
		return out, err
	}

	backend, present, err := policy.takeString("rdzvBackend")
	if err != nil {
		return out, err
	}
	if present {
		torchrun.set(policy.path.Child("rdzvBackend"), func(tc *v1beta1.TorchrunConfig) { tc.RdzvBackend = v1beta1.RendezvousBackend(backend) })
	}
	maxRestarts, present, err := policy.takeInt32("maxRestarts")
	if err != nil {
		return out, err
	}
	if present {
		torchrun.set(policy.path.Child("maxRestarts"), func(tc *v1beta1.TorchrunConfig) { tc.MaxRestarts = &maxRestarts })
	}
	nproc, present, err := policy.takeInt32("nProcPerNode")
	if err != nil {
		return out, err
	}
	if present {
		out.procPerNode = &procPerNodeSetting{strconv.Itoa(int(nproc)), policy.path.Child("nProcPerNode")}
	}
	if err := convertRendezvous(policy, jobName, torchrun, w); err != nil {
		return out, err
	}
	if _, path, present := policy.take("metrics"); present {
		w.notCarriedOver(path, "ours does not scale a job by metrics (Kubeflow creates a HorizontalPodAutoscaler for them)")
	}
	policy.reportLeftovers(w)
	return out, nil
}

// elasticRange takes minReplicas and maxReplicas, defaulted as Kubeflow does:
// a missing end is the other one, and without either both are the Worker
// replicas.
func elasticRange(policy *object, replicas []v1beta1.ReplicaSpec) (*v1beta1.ElasticConfig, error) {
	minReplicas, hasMin, err := policy.takeInt32("minReplicas")
	if err != nil {
		return nil, err
	}
	maxReplicas, hasMax, err := policy.takeInt32("maxReplicas")
	if err != nil {
		return nil, err
	}
	switch {
	case hasMin && !hasMax:
		maxReplicas = minReplicas
	case hasMax && !hasMin:
		minReplicas = maxReplicas
	case !hasMin && !hasMax:
		workers := -1
		for _, r := range replicas {
			if r.Type == v1beta1.ReplicaTypeWorker {
				workers = int(v1beta1.ReplicasOf(&r))
			}
		}
		if workers < 0 {
			return nil, fmt.Errorf("%s: needs minReplicas or maxReplicas: without them Kubeflow takes the Worker replicas, and there is no Worker", policy.path)
		}
		minReplicas, maxReplicas = int32(workers), int32(workers)
	}
	return &v1beta1.ElasticConfig{Enabled: true, MinReplicas: &minReplicas, MaxReplicas: &maxReplicas}, nil
}

// convertRendezvous turns the rendezvous id, configuration, standalone mode
// and endpoint into the torchrun options they stand for.
func convertRendezvous(policy *object, jobName string, torchrun torchrunTarget, w *warnings) error {
	id, present, err := policy.takeString("rdzvId")
	if err != nil {
		return err
	}
	if present {
		torchrun.addOption(policy.path.Child("rdzvId"), "--rdzv-id="+id)
	}
	conf, present, err := takeRendezvousConf(policy, w)
	if err != nil {
		return err
	}
	if present {
		torchrun.addOption(policy.path.Child("rdzvConf"), "--rdzv-conf="+conf)
	}
	standalone, _, err := policy.takeBool("standalone")
	if err != nil {
		return err
	}
	if standalone {
		torchrun.addOption(policy.path.Child("standalone"), "--standalone")
	}

	host, hasHost, err := policy.takeString("rdzvHost")
	if err != nil {
		return err
	}
	port, hasPort, err := policy.takeInt32("rdzvPort")
	if err != nil {
		return err
	}
	hostPath, portPath := policy.path.Child("rdzvHost"), policy.path.Child("rdzvPort")
	var why string
	switch {
	case hasHost && hasPort && jobName != "" && strings.HasPrefix(host, jobName+"-"):
		why = "it names a Service Kubeflow creates for the job, which ours does not; ours holds the rendezvous on the master replica (MASTER_ADDR)"
	case hasHost && hasPort:
		torchrun.addOption(hostPath, fmt.Sprintf("--rdzv-endpoint=%s:%d", host, port))
		// The port went into the same option: report it only where the
		// option could not be set.
		torchrun.set(portPath, func(*v1beta1.TorchrunConfig) {})
		return nil
	default:
		why = fmt.Sprintf("a rendezvous endpoint needs both rdzvHost and rdzvPort; ours holds the rendezvous on the master replica (MASTER_ADDR), "+
			"on its port named %s, else %d", strings.Join(batch.PyTorchPortNames(), " or "), batch.PyTorchDefaultPort)
	}
	if hasHost {
		w.notCarriedOver(hostPath, why)
	}
	if hasPort {
		w.notCarriedOver(portPath, why)
	}
	return nil
}

// takeRendezvousConf takes rdzvConf, a list of {key, value}, and writes it as
// torchrun's --rdzv-conf wants it: key1=value1,key2=value2.
func takeRendezvousConf(policy *object, w *warnings) (string, bool, error) {
	value, path, present := policy.take("rdzvConf")
	if !present {
		return "", false, nil
	}
	items, ok := value.([]interface{})
	if !ok {
		return "", false, fmt.Errorf("%s: must be a list of {key, value}, not %s", path, describe(value))
	}
	pairs := make([]string, 0, len(items))
	for i, item := range items {
		entry, err := newObject(path.Index(i), item)
		if err != nil {
			return "", false, err
		}
		key, _, err := entry.takeString("key")
		if err != nil {
			return "", false, err
		}
		value, _, err := entry.takeString("value")
		if err != nil {
			return "", false, err
		}
		entry.reportLeftovers(w)
		pairs = append(pairs, key+"="+value)
	}
	return strings.Join(pairs, ","), len(pairs) > 0, nil
}

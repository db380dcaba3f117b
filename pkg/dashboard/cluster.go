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

package dashboard

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	resourcehelper "k8s.io/component-helpers/resource"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The cluster page (GET /api/cluster) is the platform team's: every node
// with what it can hold and what its pods ask for, the training jobs that
// have pods on it, and the jobs that named it suspect. It needs the right
// to list nodes; without it the API's refusal is the answer.

// Page sizes of the lists the cluster view reads. A job is decoded whole
// (its status keeps recent progress, attempts and replicas), so its pages
// are smaller than those of nodes and pods.
const (
	clusterNodePage = 500
	clusterPodPage  = 500
	clusterJobPage  = 50
)

// clusterView is the answer of GET /api/cluster.
type clusterView struct {
	// Resources are the ones the nodes are shown with, in order: cpu,
	// memory, then every extended resource (nvidia.com/gpu, say) a node
	// offers or a pod asks for, by name.
	Resources []corev1.ResourceName `json:"resources"`
	Nodes     []nodeView            `json:"nodes"`
	// Totals are the sums over the nodes in the cluster, by resource.
	Totals map[corev1.ResourceName]resourceUse `json:"totals"`
	// PodsRefused is the API's refusal to list pods in every namespace:
	// then no node shows what is allocated on it, nor its jobs.
	PodsRefused *metav1.Status `json:"podsRefused,omitempty"`
	// JobsRefused are the API's refusals to list a kind of job in every
	// namespace: the suspect marks of those kinds are missing.
	JobsRefused []metav1.Status `json:"jobsRefused,omitempty"`
}

// nodeView is one node as the cluster page's table shows it.
type nodeView struct {
	Name string `json:"name"`
	// Ready is the status of the node's Ready condition: True, False, or
	// Unknown, also when the node reports none.
	Ready         corev1.ConditionStatus `json:"ready"`
	Unschedulable bool                   `json:"unschedulable,omitempty"`
	// Absent marks a node a job named suspect that is no longer in the
	// cluster: it has only its suspect marks.
	Absent    bool                                `json:"absent,omitempty"`
	Resources map[corev1.ResourceName]resourceUse `json:"resources"`
	// Pods counts the pods on the node that have not terminated, of jobs
	// or not.
	Pods     int           `json:"pods"`
	Jobs     []nodeJob     `json:"jobs"`
	Suspects []suspectMark `json:"suspects"`
}

// resourceUse is one resource of a node, or of the cluster.
type resourceUse struct {
	Allocatable resource.Quantity `json:"allocatable"`
	// Allocated sums the requests of the pods that have not terminated,
	// as the scheduler counts them.
	Allocated resource.Quantity `json:"allocated"`
	// Fraction is Allocated over Allocatable; absent when nothing of the
	// resource is allocatable.
	Fraction *float64 `json:"fraction,omitempty"`
}

// nodeJob is a training job with pods on a node.
type nodeJob struct {
	Kind string `json:"kind"`
	// Resource is empty for a kind this dashboard does not know: the page
	// then has no link for it.
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Pods      int    `json:"pods"`
}

// suspectMark is one job's entry for a node in its status.suspectNodes.
type suspectMark struct {
	Kind      string      `json:"kind"`
	Resource  string      `json:"resource"`
	Namespace string      `json:"namespace"`
	Job       string      `json:"job"`
	Reason    string      `json:"reason"`
	Message   string      `json:"message,omitempty"`
	Time      metav1.Time `json:"time"`
}

// cluster answers GET /api/cluster with the request's own clients. The
// nodes' list decides: its refusal (a 403 for a user who may not list
// nodes) is the answer. Pods and jobs the user may not list across
// namespaces are left out, with the API's refusals.
func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	view, err := s.readCluster(r.Context(), c)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, view)
}

func (s *Server) readCluster(ctx context.Context, c Clients) (clusterView, error) {
	nodes, err := listNodes(ctx, c)
	if err != nil {
		return clusterView{}, err
	}
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	view := clusterView{Nodes: make([]nodeView, 0, len(nodes))}
	allocatable := make(map[string]corev1.ResourceList, len(nodes))
	for i := range nodes {
		view.Nodes = append(view.Nodes, viewNode(&nodes[i]))
		allocatable[nodes[i].Name] = nodes[i].Status.Allocatable
	}
	byName := make(map[string]*nodeView, len(view.Nodes))
	for i := range view.Nodes {
		byName[view.Nodes[i].Name] = &view.Nodes[i]
	}

	allocated, err := allocatedOnNodes(ctx, c, byName)
	if apierrors.IsForbidden(err) {
		refused := statusOf(err)
		view.PodsRefused = &refused
	} else if err != nil {
		return clusterView{}, err
	}
	view.Resources = shownResources(allocatable, allocated)
	totalAllocatable, totalAllocated := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range view.Nodes {
		node := &view.Nodes[i]
		node.Resources = useOf(view.Resources, allocatable[node.Name], allocated[node.Name])
		for _, name := range view.Resources {
			addTo(totalAllocatable, name, allocatable[node.Name][name])
			addTo(totalAllocated, name, allocated[node.Name][name])
		}
	}
	view.Totals = useOf(view.Resources, totalAllocatable, totalAllocated)

	suspects, refused, err := s.listSuspects(ctx, c)
	if err != nil {
		return clusterView{}, err
	}
	view.JobsRefused = refused
	var absent []nodeView
	for name, marks := range suspects {
		// Newest first, as the job's page lists them.
		slices.SortFunc(marks, func(a, b suspectMark) int { return b.Time.Compare(a.Time.Time) })
		if node, ok := byName[name]; ok {
			node.Suspects = marks
			continue
		}
		absent = append(absent, nodeView{Name: name, Ready: corev1.ConditionUnknown, Absent: true,
			Resources: map[corev1.ResourceName]resourceUse{}, Jobs: []nodeJob{}, Suspects: marks})
	}
	slices.SortFunc(absent, func(a, b nodeView) int { return strings.Compare(a.Name, b.Name) })
	view.Nodes = append(view.Nodes, absent...)
	return view, nil
}

// allocatedOnNodes sums the requests of the pods on each of the nodes, as
// the scheduler counts them (init containers, sidecars and overhead
// included), and counts the pods and their jobs into the nodes' views.
func allocatedOnNodes(ctx context.Context, c Clients, byName map[string]*nodeView) (map[string]corev1.ResourceList, error) {
	allocated := map[string]corev1.ResourceList{}
	err := listPodsOnNodes(ctx, c, func(pod *corev1.Pod) {
		node, ok := byName[pod.Spec.NodeName]
		if !ok {
			return
		}
		node.Pods++
		node.addJobPod(pod)
		sum := allocated[node.Name]
		if sum == nil {
			sum = corev1.ResourceList{}
			allocated[node.Name] = sum
		}
		for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			addTo(sum, name, q)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, node := range byName {
		slices.SortFunc(node.Jobs, func(a, b nodeJob) int {
			return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.Kind, b.Kind))
		})
	}
	return allocated, nil
}

// listNodes reads every node, a page at a time.
func listNodes(ctx context.Context, c Clients) ([]corev1.Node, error) {
	var nodes []corev1.Node
	opts := metav1.ListOptions{Limit: clusterNodePage}
	for {
		list, err := c.Kube.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, list.Items...)
		if list.Continue == "" {
			return nodes, nil
		}
		opts.Continue = list.Continue
	}
}

func viewNode(node *corev1.Node) nodeView {
	view := nodeView{Name: node.Name, Ready: corev1.ConditionUnknown, Unschedulable: node.Spec.Unschedulable,
		Jobs: []nodeJob{}, Suspects: []suspectMark{}}
	for _, condition := range node.Status.Conditions {
		if condition.Type == corev1.NodeReady {
			view.Ready = condition.Status
		}
	}
	return view
}

// addJobPod counts pod for the training job its labels name, if any.
func (n *nodeView) addJobPod(pod *corev1.Pod) {
	name, kindName := pod.Labels[v1beta1.LabelJobName], pod.Labels[v1beta1.LabelJobKind]
	if name == "" || kindName == "" {
		return
	}
	for i := range n.Jobs {
		if j := &n.Jobs[i]; j.Name == name && j.Kind == kindName && j.Namespace == pod.Namespace {
			j.Pods++
			return
		}
	}
	job := nodeJob{Kind: kindName, Namespace: pod.Namespace, Name: name, Pods: 1}
	if kind, ok := kindByKind(kindName); ok {
		job.Resource = kind.Resource
	}
	n.Jobs = append(n.Jobs, job)
}

// listPodsOnNodes hands each pod of every namespace that is bound to a node
// and has not terminated to visit, a page at a time. The field selector
// leaves the others on the API server; they are checked again here all the
// same.
func listPodsOnNodes(ctx context.Context, c Clients, visit func(*corev1.Pod)) error {
	selector := fields.AndSelectors(
		fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	).String()
	opts := metav1.ListOptions{FieldSelector: selector, Limit: clusterPodPage}
	for {
		list, err := c.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range list.Items {
			pod := &list.Items[i]
			if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			visit(pod)
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// listSuspects reads the suspect nodes of every job of every kind, by node.
// A finished job has none (the controller clears them), so only the others
// are listed. A kind the user may not list across namespaces is left out,
// with the API's refusal.
func (s *Server) listSuspects(ctx context.Context, c Clients) (map[string][]suspectMark, []metav1.Status, error) {
	unfinished := fields.AndSelectors(
		fields.OneTermNotEqualSelector(batch.FieldStatusPhase, string(v1beta1.JobSucceeded)),
		fields.OneTermNotEqualSelector(batch.FieldStatusPhase, string(v1beta1.JobFailed)),
	).String()
	suspects := map[string][]suspectMark{}
	var refused []metav1.Status
	for _, kind := range jobKinds {
		opts := metav1.ListOptions{FieldSelector: unfinished, Limit: clusterJobPage}
		for {
			next, err := s.readSuspectPage(ctx, c, kind, opts, suspects)
			if apierrors.IsForbidden(err) {
				refused = append(refused, statusOf(err))
				break
			}
			if err != nil {
				return nil, nil, err
			}
			if next == "" {
				break
			}
			opts.Continue = next
		}
	}
	return suspects, refused, nil
}

// readSuspectPage reads one page of a kind's jobs into suspects, holding a
// list slot while the page is decoded, and returns the next page's token.
func (s *Server) readSuspectPage(ctx context.Context, c Clients, kind jobKind, opts metav1.ListOptions, suspects map[string][]suspectMark) (string, error) {
	release, err := s.lists.hold(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	list, err := kind.Client(c.Training, metav1.NamespaceAll).ListObject(ctx, opts)
	if err != nil {
		return "", err
	}
	err = meta.EachListItem(list, func(obj runtime.Object) error {
		job, ok := obj.(v1beta1.TrainingJob)
		if !ok {
			return nil
		}
		for _, n := range job.JobStatus().SuspectNodes {
			suspects[n.Name] = append(suspects[n.Name], suspectMark{Kind: kind.Name, Resource: kind.Resource,
				Namespace: job.GetNamespace(), Job: job.GetName(), Reason: n.Reason, Message: n.Message, Time: n.Time})
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	return listMeta.GetContinue(), nil
}

// shownResources are cpu, memory, then the extended resources any node
// offers or any pod asks for, by name.
func shownResources(lists ...map[string]corev1.ResourceList) []corev1.ResourceName {
	extended := map[corev1.ResourceName]bool{}
	for _, byNode := range lists {
		for _, list := range byNode {
			for name := range list {
				if isExtendedResource(name) {
					extended[name] = true
				}
			}
		}
	}
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	return append(names, slices.Sorted(maps.Keys(extended))...)
}

// isExtendedResource tells a resource a device plugin or an operator
// advertises (nvidia.com/gpu) from Kubernetes' own: it has a domain, and
// the domain is not Kubernetes'. Hugepages and ephemeral storage are not
// shown.
func isExtendedResource(name corev1.ResourceName) bool {
	domain, _, ok := strings.Cut(string(name), "/")
	if !ok {
		return false
	}
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

// useOf pairs what is allocatable with what is allocated, for each of names.
func useOf(names []corev1.ResourceName, allocatable, allocated corev1.ResourceList) map[corev1.ResourceName]resourceUse {
	use := make(map[corev1.ResourceName]resourceUse, len(names))
	for _, name := range names {
		capacity, asked := allocatable[name], allocated[name]
		u := resourceUse{Allocatable: capacity.DeepCopy(), Allocated: inFormat(asked, formatOf(name, capacity))}
		if capacity.Sign() > 0 {
			fraction := asked.AsApproximateFloat64() / capacity.AsApproximateFloat64()
			u.Fraction = &fraction
		}
		use[name] = u
	}
	return use
}

// formatOf is how a resource's quantities are written: as its allocatable
// is, else binary for memory and decimal for the others.
func formatOf(name corev1.ResourceName, allocatable resource.Quantity) resource.Format {
	if allocatable.Format != "" {
		return allocatable.Format
	}
	if name == corev1.ResourceMemory {
		return resource.BinarySI
	}
	return resource.DecimalSI
}

// inFormat writes q in format, so that a node's allocated memory reads
// 3Gi beside its allocatable 4Ti, whatever the pods' requests were
// written in.
func inFormat(q resource.Quantity, format resource.Format) resource.Quantity {
	if milli := q.MilliValue(); milli%1000 != 0 {
		return *resource.NewMilliQuantity(milli, format)
	}
	return *resource.NewQuantity(q.Value(), format)
}

func addTo(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	total := list[name]
	total.Add(q)
	list[name] = total
}

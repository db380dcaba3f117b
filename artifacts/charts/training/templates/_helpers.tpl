{{/*
The objects of one file of artifacts/deploy or artifacts/monitoring (under
files/ in the chart), as a dict whose "items" are the file's objects in their
order. The templates change what the values change and print the rest as
kustomize would, so that the two ways of installing stay one installation.
Usage: (include "training.objects" (list $ "deploy/base/etcd.yaml") | fromYaml).items
*/}}
{{- define "training.objects" -}}
{{- $root := index . 0 -}}
{{- $file := index . 1 -}}
{{- $content := $root.Files.Get (printf "files/%s" $file) -}}
{{- if not $content -}}
{{- fail (printf "the chart is incomplete: files/%s is missing" $file) -}}
{{- end -}}
{{- $items := list -}}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" $content -1 -}}
{{- $obj := fromYaml $doc -}}
{{- if hasKey $obj "Error" -}}
{{- fail (printf "files/%s: %s" $file $obj.Error) -}}
{{- end -}}
{{- if $obj.kind -}}
{{- $items = append $items $obj -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "items" $items) -}}
{{- end -}}

{{/*
One object of a file, by kind and name.
Usage: include "training.object" (list $ "deploy/base/apiserver.yaml" "Deployment" "training-apiserver") | fromYaml
*/}}
{{- define "training.object" -}}
{{- $root := index . 0 -}}
{{- $file := index . 1 -}}
{{- $kind := index . 2 -}}
{{- $name := index . 3 -}}
{{- $found := dict -}}
{{- range $obj := (include "training.objects" (list $root $file) | fromYaml).items -}}
{{- if and (eq $obj.kind $kind) (eq $obj.metadata.name $name) -}}
{{- $found = $obj -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- fail (printf "the chart is incomplete: no %s %s in files/%s" $kind $name $file) -}}
{{- end -}}
{{- toYaml $found -}}
{{- end -}}

{{/* The labels of every object: kustomize's part-of, and Helm's own. */}}
{{- define "training.labels" -}}
app.kubernetes.io/part-of: tensorstack-training
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/*
Prints one object as a YAML document with the chart's labels; a workload's
pod template and volume claim templates get part-of, as kustomize's labels
(includeTemplates) give them.
Usage: include "training.emit" (list $ $obj)
*/}}
{{- define "training.emit" -}}
{{- $root := index . 0 -}}
{{- $obj := index . 1 -}}
{{- $labels := merge (dict) ($obj.metadata.labels | default dict) (include "training.labels" $root | fromYaml) -}}
{{- $_ := set $obj.metadata "labels" $labels -}}
{{- if and $obj.spec (kindIs "map" $obj.spec) $obj.spec.template -}}
{{- $tmpl := $obj.spec.template -}}
{{- $_ := set $tmpl "metadata" ($tmpl.metadata | default dict) -}}
{{- $_ := set $tmpl.metadata "labels" (merge (dict) ($tmpl.metadata.labels | default dict) (dict "app.kubernetes.io/part-of" "tensorstack-training")) -}}
{{- range $claim := $obj.spec.volumeClaimTemplates -}}
{{- $_ := set $claim.metadata "labels" (merge (dict) ($claim.metadata.labels | default dict) (dict "app.kubernetes.io/part-of" "tensorstack-training")) -}}
{{- end -}}
{{- end }}
---
{{ toYaml $obj }}
{{- end -}}

{{/*
An image reference: <registry>/<repository>:<tag>@<digest>.
Usage: include "training.image" (list $ "apiserver")
*/}}
{{- define "training.image" -}}
{{- $root := index . 0 -}}
{{- $image := index $root.Values.images (index . 1) -}}
{{- $ref := printf "%s/%s:%s" (trimSuffix "/" $root.Values.images.registry) $image.repository ($root.Values.images.tag | default $root.Chart.AppVersion) -}}
{{- if $image.digest -}}
{{- $ref = printf "%s@%s" $ref $image.digest -}}
{{- end -}}
{{- $ref -}}
{{- end -}}

{{/*
Sets what the values say about a workload's pod and its first container:
image, pull policy and secrets, resources (when set), extra flags, node
selector and tolerations.
Usage: include "training.pod" (list $ $obj "apiserver" $.Values.apiserver) (prints nothing)
*/}}
{{- define "training.pod" -}}
{{- $root := index . 0 -}}
{{- $obj := index . 1 -}}
{{- $imageKey := index . 2 -}}
{{- $values := index . 3 -}}
{{- $pod := $obj.spec.template.spec -}}
{{- $container := index $pod.containers 0 -}}
{{- $_ := set $container "image" (include "training.image" (list $root $imageKey)) -}}
{{- with $root.Values.images.pullPolicy -}}
{{- $_ := set $container "imagePullPolicy" . -}}
{{- end -}}
{{- with $root.Values.images.pullSecrets -}}
{{- $_ := set $pod "imagePullSecrets" . -}}
{{- end -}}
{{- with $values.resources -}}
{{- $_ := set $container "resources" . -}}
{{- end -}}
{{- with $values.extraArgs -}}
{{- $_ := set $container "args" (concat $container.args .) -}}
{{- end -}}
{{- with $values.nodeSelector -}}
{{- $_ := set $pod "nodeSelector" . -}}
{{- end -}}
{{- with $values.tolerations -}}
{{- $_ := set $pod "tolerations" . -}}
{{- end -}}
{{- end -}}

{{/*
Replaces the flag --<name>=... in a container's args by --<name>=<value>,
keeping its place.
Usage: include "training.setFlag" (list $container "etcd-servers" $value) (prints nothing)
*/}}
{{- define "training.setFlag" -}}
{{- $container := index . 0 -}}
{{- $prefix := printf "--%s=" (index . 1) -}}
{{- $args := list -}}
{{- $found := false -}}
{{- range $arg := $container.args -}}
{{- if hasPrefix $prefix $arg -}}
{{- $args = append $args (printf "%s%s" $prefix (index $ 2)) -}}
{{- $found = true -}}
{{- else -}}
{{- $args = append $args $arg -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- fail (printf "the chart is incomplete: container %s has no flag %s" $container.name $prefix) -}}
{{- end -}}
{{- $_ := set $container "args" $args -}}
{{- end -}}

{{/* The etcd members' names, training-etcd-0 to training-etcd-<replicas-1>. */}}
{{- define "training.etcdMembers" -}}
{{- $members := list -}}
{{- range $i := until (int .Values.etcd.cluster.replicas) -}}
{{- $members = append $members (printf "training-etcd-%d" $i) -}}
{{- end -}}
{{- toYaml (dict "names" $members) -}}
{{- end -}}

{{/* The address of an etcd member on the headless Service. */}}
{{- define "training.etcdHost" -}}
{{- printf "%s.training-etcd.%s.svc" . "tensorstack-system" -}}
{{- end -}}

{{- /*
Applies components/etcd-restore's patch (restore.yaml: an init container and
a volume added to the pod) to the StatefulSet, with this installation's
image, members, claim and file.
*/ -}}
{{- define "training.etcdRestore" -}}
{{- $root := index . 0 -}}
{{- $obj := index . 1 -}}
{{- $initialCluster := index . 2 -}}
{{- $restore := $root.Values.etcd.cluster.restore -}}
{{- $pod := $obj.spec.template.spec -}}
{{- $file := "files/deploy/components/etcd-restore/restore.yaml" -}}
{{- range $op := fromYamlArray ($root.Files.Get $file) -}}
{{- $field := trimPrefix "/spec/template/spec/" $op.path -}}
{{- $values := $op.value -}}
{{- if hasSuffix "/-" $field -}}
{{- /* One item appended to the list. */ -}}
{{- $field = trimSuffix "/-" $field -}}
{{- $values = list $op.value -}}
{{- end -}}
{{- if or (ne $op.op "add") (eq $field $op.path) (contains "/" $field) -}}
{{- fail (printf "the chart cannot apply %s: %s %s" $file $op.op $op.path) -}}
{{- end -}}
{{- $_ := set $pod $field (concat (get $pod $field | default list) $values) -}}
{{- end -}}
{{- range $init := $pod.initContainers -}}
{{- if eq $init.name "restore" -}}
{{- $_ := set $init "image" (include "training.image" (list $root "etcd")) -}}
{{- with $root.Values.images.pullPolicy -}}
{{- $_ := set $init "imagePullPolicy" . -}}
{{- end -}}
{{- include "training.setFlag" (list $init "initial-cluster" $initialCluster) -}}
{{- include "training.setFlag" (list $init "snapshot" (printf "/var/run/training-etcd/restore/%s" $restore.snapshot)) -}}
{{- end -}}
{{- end -}}
{{- range $volume := $pod.volumes -}}
{{- if eq $volume.name "restore" -}}
{{- $_ := set $volume.persistentVolumeClaim "claimName" $restore.claimName -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Removes the flags --<name>=... of the given names from a container's args.
Usage: include "training.dropFlags" (list $container (list "etcd-cafile" ...)) (prints nothing)
*/}}
{{- define "training.dropFlags" -}}
{{- $container := index . 0 -}}
{{- $names := index . 1 -}}
{{- $args := list -}}
{{- range $arg := $container.args -}}
{{- $name := trimPrefix "--" (regexReplaceAll "=.*$" $arg "") -}}
{{- if not (has $name $names) -}}
{{- $args = append $args $arg -}}
{{- end -}}
{{- end -}}
{{- $_ := set $container "args" $args -}}
{{- end -}}

{{/*
Removes the volume of the given name from a pod, and its mounts from the
pod's first container.
Usage: include "training.dropVolume" (list $pod "etcd-client") (prints nothing)
*/}}
{{- define "training.dropVolume" -}}
{{- $pod := index . 0 -}}
{{- $name := index . 1 -}}
{{- $container := index $pod.containers 0 -}}
{{- $mounts := list -}}
{{- range $m := $container.volumeMounts -}}
{{- if ne $m.name $name -}}
{{- $mounts = append $mounts $m -}}
{{- end -}}
{{- end -}}
{{- $_ := set $container "volumeMounts" $mounts -}}
{{- $volumes := list -}}
{{- range $v := $pod.volumes -}}
{{- if ne $v.name $name -}}
{{- $volumes = append $volumes $v -}}
{{- end -}}
{{- end -}}
{{- $_ := set $pod "volumes" $volumes -}}
{{- end -}}

{{- /*
training.kueueEnabled: "true" when the controller-manager gets Kueue's RBAC:
kueue.enabled true, or auto on a cluster that serves kueue.x-k8s.io/v1beta2.
*/ -}}
{{- define "training.kueueEnabled" -}}
{{- $enabled := .Values.kueue.enabled -}}
{{- if or (eq (toString $enabled) "true") (and (eq (toString $enabled) "auto") (.Capabilities.APIVersions.Has "kueue.x-k8s.io/v1beta2")) -}}
true
{{- end -}}
{{- end -}}

{{/*
Names, labels and shared fragments. Kept free of resources: every resource has its own file.
*/}}

{{- define "fleet-status-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "fleet-status-exporter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "fleet-status-exporter.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "fleet-status-exporter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "fleet-status-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fleet-status-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "fleet-status-exporter.labels" -}}
helm.sh/chart: {{ include "fleet-status-exporter.chart" . }}
{{ include "fleet-status-exporter.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/component: metrics
app.kubernetes.io/part-of: {{ include "fleet-status-exporter.name" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.customLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "fleet-status-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fleet-status-exporter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "fleet-status-exporter.image" -}}
{{- $registry := .Values.image.registry }}
{{- with .Values.global }}{{ with .imageRegistry }}{{ $registry = . }}{{ end }}{{ end }}
{{- $ref := printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- if $registry }}{{ $ref = printf "%s/%s" $registry $ref }}{{ end }}
{{- if .Values.image.sha }}{{ $ref = printf "%s@sha256:%s" $ref .Values.image.sha }}{{ end }}
{{- $ref }}
{{- end }}

{{/*
Image pull secrets from global and image values; entries are names or {name: ...} objects.
*/}}
{{- define "fleet-status-exporter.imagePullSecrets" -}}
{{- $secrets := .Values.imagePullSecrets }}
{{- with .Values.global }}{{ with .imagePullSecrets }}{{ $secrets = concat . $secrets }}{{ end }}{{ end }}
{{- range $secrets }}
{{- if kindIs "string" . }}
- name: {{ . }}
{{- else }}
- name: {{ .name }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Namespaces the exporter watches, comma separated; empty means all namespaces (cluster mode).
Without an explicit list, useClusterRole=false confines the exporter to the release namespace.
*/}}
{{- define "fleet-status-exporter.watchNamespaces" -}}
{{- if .Values.namespaces }}
{{- join "," (uniq .Values.namespaces) }}
{{- else if not .Values.rbac.useClusterRole }}
{{- include "fleet-status-exporter.namespace" . }}
{{- end }}
{{- end }}

{{/*
Read-only rules on the namespaced resources the exporter watches. Discovery uses /apis, which
every authenticated user may read, so no CustomResourceDefinition access is needed.
*/}}
{{- define "fleet-status-exporter.namespacedRules" -}}
- apiGroups:
    - cluster.x-k8s.io
  resources:
    - clusterclasses
    - clusters
    - machinedeployments
    - machinedrainrules
    - machinehealthchecks
    - machinepools
    - machines
    - machinesets
  verbs: [get, list, watch]
- apiGroups:
    - controlplane.cluster.x-k8s.io
  resources:
    - kubeadmcontrolplanes
  verbs: [get, list, watch]
- apiGroups:
    - addons.cluster.x-k8s.io
  resources:
    - clusterresourcesets
    - clusterresourcesetbindings
  verbs: [get, list, watch]
- apiGroups:
    - ipam.cluster.x-k8s.io
  resources:
    - ipaddressclaims
  verbs: [get, list, watch]
{{- with .Values.rbac.infrastructureMachinePools }}
- apiGroups:
    - infrastructure.cluster.x-k8s.io
  resources:
    {{- toYaml (uniq .) | nindent 4 }}
  verbs: [get, list, watch]
{{- end }}
{{- range .Values.rbac.providers }}
{{- if .resources }}
- apiGroups:
    - {{ .apiGroup }}
  resources:
    {{- toYaml (uniq .resources) | nindent 4 }}
  verbs: [get, list, watch]
{{- end }}
{{- end }}
- apiGroups:
    - work.open-cluster-management.io
  resources:
    - manifestworkreplicasets
    - manifestworks
  verbs: [get, list, watch]
- apiGroups:
    - cluster.open-cluster-management.io
  resources:
    - placementdecisions
    - placements
  verbs: [get, list, watch]
- apiGroups:
    - addon.open-cluster-management.io
  resources:
    - managedclusteraddons
  verbs: [get, list, watch]
{{- with .Values.rbac.extraRules }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "fleet-status-exporter.clusterScopedRules" -}}
- apiGroups:
    - cluster.open-cluster-management.io
  resources:
    - managedclusters
  verbs: [get, list, watch]
- apiGroups:
    - runtime.cluster.x-k8s.io
  resources:
    - extensionconfigs
  verbs: [get, list, watch]
{{- end }}

{{/*
Name of the Secret holding the web configuration, empty when --web.config.file is not used.
*/}}
{{- define "fleet-status-exporter.webConfigSecret" -}}
{{- if .Values.webConfig.existingSecret }}
{{- .Values.webConfig.existingSecret }}
{{- else if .Values.webConfig.config }}
{{- printf "%s-web-config" (include "fleet-status-exporter.fullname" .) }}
{{- end }}
{{- end }}

{{/*
Resource-name suffix derived from a bundled file path: files/alerts/capi_alerts.yaml -> capi-alerts.
*/}}
{{- define "fleet-status-exporter.fileSuffix" -}}
{{- $stem := base . | splitList "." | initial | join "." | lower }}
{{- regexReplaceAll "[^a-z0-9-]+" $stem "-" | trimAll "-" }}
{{- end }}

{{/*
An HTTP probe; called with (dict "path" <path> "probe" <probe values> "probePort" <port or 0>).
With webConfig.probePort the probe goes to that plain-HTTP, probes-only port.
*/}}
{{- define "fleet-status-exporter.probe" -}}
httpGet:
  path: {{ .path }}
  {{- if .probePort }}
  port: probes
  scheme: HTTP
  {{- else }}
  port: http
  scheme: {{ .probe.httpGet.scheme | default "HTTP" }}
  {{- end }}
  {{- with .probe.httpGet.httpHeaders }}
  httpHeaders:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- range $field := list "initialDelaySeconds" "periodSeconds" "timeoutSeconds" "failureThreshold" "successThreshold" }}
{{- with index $.probe $field }}
{{ $field }}: {{ int . }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Name of the Secret holding the kubeconfig, empty when the exporter uses its ServiceAccount.
*/}}
{{- define "fleet-status-exporter.kubeconfigSecret" -}}
{{- if .Values.kubeconfig.enabled }}
{{- if .Values.kubeconfig.existingSecret }}
{{- .Values.kubeconfig.existingSecret }}
{{- else if .Values.kubeconfig.secret }}
{{- printf "%s-kubeconfig" (include "fleet-status-exporter.fullname" .) }}
{{- else }}
{{- fail "kubeconfig.enabled is true but neither kubeconfig.secret (the base64-encoded kubeconfig) nor kubeconfig.existingSecret is set" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Whether the chart grants the exporter read access in the cluster it runs in: not when it watches
another cluster through a kubeconfig, whose user needs the grants there.
*/}}
{{- define "fleet-status-exporter.rbac" -}}
{{- if and .Values.rbac.create (not .Values.kubeconfig.enabled) }}true{{ end }}
{{- end }}

{{/*
Checks of values that exclude each other; rendered by the pod template, so every workload fails.
*/}}
{{- define "fleet-status-exporter.validate" -}}
{{- if and .Values.metricAllowlist .Values.metricDenylist }}
{{- fail (printf "metricAllowlist (%s) and metricDenylist (%s) are both set: the exporter takes one or the other; keep one of them" (join "," .Values.metricAllowlist) (join "," .Values.metricDenylist)) }}
{{- end }}
{{- if and .Values.prometheus.monitor.enabled .Values.prometheus.podMonitor.enabled }}
{{- fail "prometheus.monitor.enabled and prometheus.podMonitor.enabled are both true: every pod would be scraped twice; enable one of them" }}
{{- end }}
{{- end }}

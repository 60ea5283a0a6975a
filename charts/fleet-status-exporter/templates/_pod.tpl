{{/*
Pod template shared by the Deployment (single or replicated) and the StatefulSet (autosharding).
*/}}
{{- define "fleet-status-exporter.podTemplate" -}}
{{- include "fleet-status-exporter.validate" . -}}
{{- $webSecret := include "fleet-status-exporter.webConfigSecret" . -}}
{{- $kubeconfigSecret := include "fleet-status-exporter.kubeconfigSecret" . -}}
metadata:
  labels:
    {{- include "fleet-status-exporter.labels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- $kubeconfigFromValues := and $kubeconfigSecret (not .Values.kubeconfig.existingSecret) }}
  {{- if or .Values.podAnnotations (and .Values.webConfig.config (not .Values.webConfig.existingSecret)) $kubeconfigFromValues }}
  annotations:
    {{- if and .Values.webConfig.config (not .Values.webConfig.existingSecret) }}
    checksum/web-config: {{ toJson .Values.webConfig.config | sha256sum }}
    {{- end }}
    {{- if $kubeconfigFromValues }}
    checksum/kubeconfig: {{ .Values.kubeconfig.secret | sha256sum }}
    {{- end }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
spec:
  serviceAccountName: {{ include "fleet-status-exporter.serviceAccountName" . }}
  automountServiceAccountToken: {{ .Values.automountServiceAccountToken }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- if .Values.securityContext.enabled }}
  securityContext:
    {{- toYaml (omit .Values.securityContext "enabled") | nindent 4 }}
  {{- end }}
  {{- with (include "fleet-status-exporter.imagePullSecrets" .) }}
  imagePullSecrets:
    {{- . | nindent 4 }}
  {{- end }}
  containers:
    - name: {{ include "fleet-status-exporter.name" . }}
      image: {{ include "fleet-status-exporter.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        - serve
        - --web.listen-address=:{{ int .Values.service.port }}
        - --log.level={{ .Values.logLevel }}
        - --log.format={{ .Values.logFormat }}
        {{- with .Values.telemetryPath }}
        - --web.telemetry-path={{ . }}
        {{- end }}
        {{- range compact (splitList "," (include "fleet-status-exporter.watchNamespaces" .)) }}
        - --namespace={{ . }}
        {{- end }}
        {{- range .Values.excludeResources }}
        - --exclude-resource={{ . }}
        {{- end }}
        {{- if .Values.autosharding.enabled }}
        - --shard=auto
        - --total-shards={{ int .Values.replicas }}
        {{- end }}
        {{- if $webSecret }}
        - --web.config.file={{ .Values.webConfig.mountPath }}/{{ .Values.webConfig.key }}
        {{- end }}
        {{- if .Values.webConfig.probePort }}
        - --web.probe-address=:{{ int .Values.webConfig.probePort }}
        {{- end }}
        {{- if $kubeconfigSecret }}
        - --kubeconfig={{ .Values.kubeconfig.mountPath }}/{{ .Values.kubeconfig.key }}
        {{- end }}
        {{- /* Quoted: regular expressions may hold what YAML reads otherwise (": ", " #"). */}}
        {{- with .Values.metricAllowlist }}
        - {{ printf "--metric-allowlist=%s" (join "," .) | toJson }}
        {{- end }}
        {{- with .Values.metricDenylist }}
        - {{ printf "--metric-denylist=%s" (join "," .) | toJson }}
        {{- end }}
        {{- with .Values.metricLabelsAllowlist }}
        - {{ printf "--metric-labels-allowlist=%s" (join "," .) | toJson }}
        {{- end }}
        {{- with .Values.metricAnnotationsAllowList }}
        - {{ printf "--metric-annotations-allowlist=%s" (join "," .) | toJson }}
        {{- end }}
        {{- with .Values.extraArgs }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- if or .Values.autosharding.enabled .Values.env }}
      env:
        {{- if .Values.autosharding.enabled }}
        # --shard auto reads the shard ordinal from the pod name suffix.
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        {{- end }}
        {{- with .Values.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
      ports:
        - name: http
          containerPort: {{ int .Values.service.port }}
          protocol: TCP
        {{- if .Values.webConfig.probePort }}
        # /healthz and /readyz only, plain HTTP: the kubelet presents no client certificate.
        - name: probes
          containerPort: {{ int .Values.webConfig.probePort }}
          protocol: TCP
        {{- end }}
      livenessProbe:
        {{- include "fleet-status-exporter.probe" (dict "path" "/healthz" "probe" .Values.livenessProbe "probePort" .Values.webConfig.probePort) | nindent 8 }}
      readinessProbe:
        {{- include "fleet-status-exporter.probe" (dict "path" "/readyz" "probe" .Values.readinessProbe "probePort" .Values.webConfig.probePort) | nindent 8 }}
      {{- with .Values.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.containerSecurityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        # The root filesystem is read-only; the Kubernetes client writes certificates from
        # kubeconfig data to temporary files.
        - name: tmp
          mountPath: /tmp
        {{- if $webSecret }}
        - name: web-config
          mountPath: {{ .Values.webConfig.mountPath }}
          readOnly: true
        {{- end }}
        {{- if $kubeconfigSecret }}
        - name: kubeconfig
          mountPath: {{ .Values.kubeconfig.mountPath }}
          readOnly: true
        {{- end }}
        {{- with .Values.volumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: tmp
      emptyDir:
        sizeLimit: 16Mi
    {{- if $webSecret }}
    - name: web-config
      secret:
        secretName: {{ $webSecret }}
        items:
          - key: {{ .Values.webConfig.key }}
            path: {{ .Values.webConfig.key }}
    {{- end }}
    {{- if $kubeconfigSecret }}
    - name: kubeconfig
      secret:
        secretName: {{ $kubeconfigSecret }}
        items:
          - key: {{ .Values.kubeconfig.key }}
            path: {{ .Values.kubeconfig.key }}
    {{- end }}
    {{- with .Values.volumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

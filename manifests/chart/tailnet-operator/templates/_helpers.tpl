{{/*
Names are fixed rather than derived from the release: the CompositeControllers call the hooks at
http://tailnet-operator.<namespace>:8080, and the kustomize install uses the same names.
*/}}
{{- define "tailnet-operator.name" -}}tailnet-operator{{- end -}}

{{- define "tailnet-operator.selectorLabels" -}}
app.kubernetes.io/name: tailnet-operator
app.kubernetes.io/component: operator
{{- end -}}

{{- define "tailnet-operator.labels" -}}
{{ include "tailnet-operator.selectorLabels" . }}
app.kubernetes.io/part-of: tailnet-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels for cluster-wide and monitoring objects that do not select the operator pods. */}}
{{- define "tailnet-operator.commonLabels" -}}
app.kubernetes.io/name: tailnet-operator
app.kubernetes.io/part-of: tailnet-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "tailnet-operator.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Secret name and key holding the hook token, or empty when hooks are unauthenticated. */}}
{{- define "tailnet-operator.hookTokenSecret" -}}
{{- if .Values.hookToken.existingSecret -}}
{{ .Values.hookToken.existingSecret }}
{{- else if or .Values.hookToken.value .Values.hookToken.generate -}}
tailnet-operator-hook-token
{{- end -}}
{{- end -}}

{{- define "tailnet-operator.hookTokenKey" -}}
{{- if .Values.hookToken.existingSecret -}}
{{ .Values.hookToken.existingSecretKey | default "token" }}
{{- else -}}
token
{{- end -}}
{{- end -}}

{{/*
The operator configuration file (docs: api.md, Operator configuration), rendered from values so
that scrapeFrom, metricsPeers and the expiry thresholds reach the operator.
*/}}
{{- define "tailnet-operator.config" -}}
{{- $config := dict
  "operatorNamespace" .Release.Namespace
  "clusterName" (.Values.clusterName | default "default")
  "logLevel" .Values.logLevel
  "images" (dict
    "agent" (.Values.images.agent | default (include "tailnet-operator.image" .))
    "tailscale" .Values.images.tailscale
    "coredns" .Values.images.coredns)
  "tailscale" (dict "noLogsNoSupport" .Values.tailscale.noLogsNoSupport)
  "headscale" (dict
    "timeoutSeconds" .Values.headscale.timeoutSeconds
    "cacheTTLSeconds" .Values.headscale.cacheTTLSeconds
    "slowPartTTLSeconds" .Values.headscale.slowPartTTLSeconds)
  "monitoring" (dict
    "podMonitor" (dict "scrapeFrom" (.Values.monitoring.podMonitor.scrapeFrom | default list))
    "rules" (dict
      "apiKeyExpiryWarningSeconds" .Values.monitoring.rules.apiKeyExpiryWarningSeconds
      "authKeyExpiryWarningSeconds" .Values.monitoring.rules.authKeyExpiryWarningSeconds))
  "networkPolicy" (dict
    "isolateOperator" .Values.networkPolicy.enabled
    "metricsPeers" (.Values.networkPolicy.metricsPeers | default list))
  "services" (dict "defaultLoadBalancerClass" (.Values.decoratorControllers.defaultLoadBalancerClass | default false))
-}}
{{ toYaml $config }}
{{- end -}}

{{/*
Bundled alert groups: files/alerts.yaml is the single source (monitoring/rules.yaml and the
kustomize component are rendered from it). Its ${…} placeholders take values here; Prometheus'
own {{ $labels }} templates pass through untouched because the file is not run through tpl.
*/}}
{{- define "tailnet-operator.bundledRules" -}}
{{- $r := .Values.monitoring.rules -}}
{{- .Files.Get "files/alerts.yaml"
  | replace "${API_KEY_EXPIRY_WARNING_SECONDS}" (printf "%d" ($r.apiKeyExpiryWarningSeconds | int64))
  | replace "${AUTH_KEY_EXPIRY_WARNING_SECONDS}" (printf "%d" ($r.authKeyExpiryWarningSeconds | int64))
  | replace "${RUNBOOK_BASE_URL}" ($r.runbookBaseURL | trimSuffix "/") -}}
{{- end -}}

{{/* Dashboard JSON: dashboard.json from values, or the bundled files/dashboard.json. */}}
{{- define "tailnet-operator.dashboardJSON" -}}
{{- $d := .Values.monitoring.dashboard -}}
{{- $json := .Files.Get "files/dashboard.json" -}}
{{- if $d.json -}}
{{- $json = ternary $d.json (toPrettyJson $d.json) (kindIs "string" $d.json) -}}
{{- end -}}
{{- $json | trim | replace "${DS_PROMETHEUS}" $d.datasourceName -}}
{{- end -}}

{{/* Labels every object of the chart carries: the manifests' two, plus Helm's. */}}
{{- define "trainop.labels" -}}
app.kubernetes.io/name: training-operator
app.kubernetes.io/part-of: trainop
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The kinds the operator runs, lower case; all six when enabledKinds is empty. */}}
{{- define "trainop.kinds" -}}
{{- $all := list "jaxjob" "mpijob" "paddlejob" "pytorchjob" "tfjob" "xgboostjob" -}}
{{- $kinds := list -}}
{{- range .Values.enabledKinds -}}
{{- $k := lower . -}}
{{- if not (has $k $all) -}}
{{- fail (printf "enabledKinds: %q is not a kind; use some of %s" . (join ", " $all)) -}}
{{- end -}}
{{- $kinds = append $kinds $k -}}
{{- end -}}
{{- toJson (default $all $kinds) -}}
{{- end }}

{{/* A file of the chart (files/...) with its leading comments and document marker removed, as an object. */}}
{{- define "trainop.fileObject" -}}
{{- $text := regexReplaceAll "(?m)^#.*\n" (.root.Files.Get .path) "" -}}
{{- $text = regexReplaceAll "^---\n" $text "" -}}
{{- if not $text -}}{{- fail (printf "the chart file %s is missing or empty" .path) -}}{{- end -}}
{{- $text -}}
{{- end }}

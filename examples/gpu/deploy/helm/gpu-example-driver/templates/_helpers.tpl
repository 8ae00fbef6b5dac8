{{/* The node plugin's name; the fabric controller's is "<this>-fabric-controller". */}}
{{- define "gpu-example-driver.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 42 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpu-example-driver.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

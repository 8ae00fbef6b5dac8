{{- define "cpu-example-driver.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 42 | trimSuffix "-" -}}
{{- end -}}

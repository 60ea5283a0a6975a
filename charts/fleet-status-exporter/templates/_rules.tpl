{{/*
Validation of Prometheus rule files (the `groups:` format of alerts/*.yaml, which is also the spec
of a PrometheusRule) given to the chart in values or bundled under files/alerts/. Called with
(dict "doc" <parsed file> "where" <what to name in the error>); renders nothing, fails on the first
problem with a message naming the file and the position, e.g.
  prometheusRule.additionalPrometheusRulesMap.team: groups[0].rules[1] (alert X): `for` "5 min" is not a duration
Checks what the Prometheus operator and Prometheus would refuse later, where nobody running helm
would see it: the structure, names, durations and string-valued labels and annotations. PromQL
itself is not parsed.
*/}}
{{- define "fleet-status-exporter.checkRuleFile" -}}
{{- $where := .where }}
{{- $doc := .doc }}
{{- $duration := `^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$` }}
{{- $labelName := `^[a-zA-Z_][a-zA-Z0-9_]*$` }}
{{- if not (kindIs "map" $doc) }}
{{- fail (printf "%s: not a rule file: expected a map with `groups:`, got %s" $where (kindOf $doc)) }}
{{- end }}
{{- if and (hasKey $doc "Error") (kindIs "string" $doc.Error) (eq (len $doc) 1) }}
{{- fail (printf "%s: not valid YAML: %s" $where $doc.Error) }}
{{- end }}
{{- range $key, $_ := $doc }}
{{- if ne $key "groups" }}
{{- fail (printf "%s: unknown key %q: a rule file has only `groups:`" $where $key) }}
{{- end }}
{{- end }}
{{- if not (and (kindIs "slice" $doc.groups) $doc.groups) }}
{{- fail (printf "%s: `groups` must be a non-empty list" $where) }}
{{- end }}
{{- $seen := dict }}
{{- range $i, $group := $doc.groups }}
{{- $at := printf "%s: groups[%d]" $where $i }}
{{- if not (kindIs "map" $group) }}
{{- fail (printf "%s: a group must be a map with `name` and `rules`" $at) }}
{{- end }}
{{- if not (and (kindIs "string" $group.name) $group.name) }}
{{- fail (printf "%s: `name` must be a non-empty string" $at) }}
{{- end }}
{{- $at = printf "%s (%s)" $at $group.name }}
{{- if hasKey $seen $group.name }}
{{- fail (printf "%s: the group name is used twice in the file" $at) }}
{{- end }}
{{- $_ := set $seen $group.name true }}
{{- range $key, $_ := $group }}
{{- if not (has $key (list "name" "rules" "interval" "limit" "query_offset" "partial_response_strategy" "labels")) }}
{{- fail (printf "%s: unknown key %q" $at $key) }}
{{- end }}
{{- end }}
{{- range $key := list "interval" "query_offset" }}
{{- if and (hasKey $group $key) (not (regexMatch $duration (toString (index $group $key)))) }}
{{- fail (printf "%s: `%s` %q is not a duration" $at $key (toString (index $group $key))) }}
{{- end }}
{{- end }}
{{- if not (kindIs "slice" $group.rules) }}
{{- fail (printf "%s: `rules` must be a list" $at) }}
{{- end }}
{{- range $j, $rule := $group.rules }}
{{- $rat := printf "%s.rules[%d]" $at $j }}
{{- if not (kindIs "map" $rule) }}
{{- fail (printf "%s: a rule must be a map" $rat) }}
{{- end }}
{{- if eq (hasKey $rule "alert") (hasKey $rule "record") }}
{{- fail (printf "%s: a rule needs exactly one of `alert` and `record`" $rat) }}
{{- end }}
{{- if hasKey $rule "alert" }}
{{- if not (and (kindIs "string" $rule.alert) $rule.alert) }}
{{- fail (printf "%s: `alert` must be a non-empty string" $rat) }}
{{- end }}
{{- $rat = printf "%s (alert %s)" $rat $rule.alert }}
{{- else }}
{{- if not (and (kindIs "string" $rule.record) (regexMatch `^[a-zA-Z_:][a-zA-Z0-9_:]*$` $rule.record)) }}
{{- fail (printf "%s: `record` must be a metric name" $rat) }}
{{- end }}
{{- $rat = printf "%s (record %s)" $rat $rule.record }}
{{- range $key := list "for" "keep_firing_for" "annotations" }}
{{- if hasKey $rule $key }}
{{- fail (printf "%s: a recording rule cannot have `%s`" $rat $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $key, $_ := $rule }}
{{- if not (has $key (list "alert" "record" "expr" "for" "keep_firing_for" "labels" "annotations")) }}
{{- fail (printf "%s: unknown key %q" $rat $key) }}
{{- end }}
{{- end }}
{{- if not (or (and (kindIs "string" $rule.expr) (trim $rule.expr)) (kindIs "float64" $rule.expr) (kindIs "int64" $rule.expr) (kindIs "int" $rule.expr)) }}
{{- fail (printf "%s: `expr` must be a non-empty PromQL expression" $rat) }}
{{- end }}
{{- range $key := list "for" "keep_firing_for" }}
{{- if and (hasKey $rule $key) (not (and (kindIs "string" (index $rule $key)) (regexMatch $duration (index $rule $key)))) }}
{{- fail (printf "%s: `%s` %q is not a duration" $rat $key (toString (index $rule $key))) }}
{{- end }}
{{- end }}
{{- range $key := list "labels" "annotations" }}
{{- if hasKey $rule $key }}
{{- $map := index $rule $key }}
{{- if not (kindIs "map" $map) }}
{{- fail (printf "%s: `%s` must be a map of strings" $rat $key) }}
{{- end }}
{{- range $name, $value := $map }}
{{- if not (regexMatch $labelName $name) }}
{{- fail (printf "%s: %s: %q is not a valid label name" $rat $key $name) }}
{{- end }}
{{- if not (kindIs "string" $value) }}
{{- fail (printf "%s: %s.%s must be a string (quote it), got %s" $rat $key $name (kindOf $value)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

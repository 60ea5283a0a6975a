{{/*
Translation of an Alertmanager configuration (alerts/alertmanager.yaml: `route`, `inhibit_rules`,
`receivers`; snake_case) into the spec of a monitoring.coreos.com/v1alpha1 AlertmanagerConfig
(camelCase; matchers as {name, value, matchType}). The templates write into dicts they are given
(Go template dicts are references) and render nothing; every problem fails with a message naming
the source (the bundled file or the value) and the position in it.
*/}}

{{/*
One matcher string (`name="value"`, `name=~"regex"`, `name!=value`, ...) as a CRD matcher.
(dict "matcher" <string> "where" <position> "out" <list holder dict>): appends to .out.list.
*/}}
{{- define "fleet-status-exporter.amMatcher" -}}
{{- $re := `^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|[^\s"{},=!~]*)\s*$` }}
{{- if not (kindIs "string" .matcher) }}
{{- fail (printf "%s: a matcher must be a string like name=\"value\", got %s" .where (kindOf .matcher)) }}
{{- end }}
{{- if not (regexMatch $re .matcher) }}
{{- fail (printf "%s: matcher %q: expected one matcher per item, name=\"value\", name!=\"value\", name=~\"regex\" or name!~\"regex\"" .where .matcher) }}
{{- end }}
{{- $value := regexReplaceAll $re .matcher "${3}" }}
{{- if hasPrefix "\"" $value }}
{{- if not (regexMatch `^"(?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"$` $value) }}
{{- fail (printf "%s: matcher %q: unsupported escape in the quoted value" .where .matcher) }}
{{- end }}
{{- $value = first (fromJsonArray (printf "[%s]" $value)) }}
{{- end }}
{{- $_ := set .out "list" (append .out.list (dict "name" (regexReplaceAll $re .matcher "${1}") "matchType" (regexReplaceAll $re .matcher "${2}") "value" $value)) }}
{{- end }}

{{/*
The matchers of a route or one side of an inhibit rule, from its list of matcher strings and its
deprecated equality and regex maps. (dict "matchers" <list|nil> "match" <map|nil> "matchRe"
<map|nil> "where" <position> "names" <key names for messages>): returns them in .out.list.
*/}}
{{- define "fleet-status-exporter.amMatchers" -}}
{{- $ctx := . }}
{{- $_ := set $ctx "out" (dict "list" list) }}
{{- if not (kindIs "invalid" .matchers) }}
{{- if not (kindIs "slice" .matchers) }}
{{- fail (printf "%s.%s: must be a list of matcher strings" .where (index .names 0)) }}
{{- end }}
{{- range $i, $m := .matchers }}
{{- include "fleet-status-exporter.amMatcher" (dict "matcher" $m "where" (printf "%s.%s[%d]" $ctx.where (index $ctx.names 0) $i) "out" $ctx.out) }}
{{- end }}
{{- end }}
{{- range $k, $pair := dict "=" (list .match (index .names 1)) "=~" (list .matchRe (index .names 2)) }}
{{- $map := index $pair 0 }}
{{- if not (kindIs "invalid" $map) }}
{{- if not (kindIs "map" $map) }}
{{- fail (printf "%s.%s: must be a map of label names to values" $ctx.where (index $pair 1)) }}
{{- end }}
{{- range $name := keys $map | sortAlpha }}
{{- include "fleet-status-exporter.amMatcher" (dict "matcher" (printf "%s%s%s" $name $k (toJson (toString (index $map $name)))) "where" (printf "%s.%s.%s" $ctx.where (index $pair 1) $name) "out" $ctx.out) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
A route and its child routes. (dict "in" <route> "out" <dict to fill> "where" <position>
"receivers" <dict of receiver names seen>).
*/}}
{{- define "fleet-status-exporter.amRoute" -}}
{{- $ctx := . }}
{{- $in := .in }}
{{- $out := .out }}
{{- if not (kindIs "map" $in) }}
{{- fail (printf "%s: a route must be a map" .where) }}
{{- end }}
{{- $supported := list "receiver" "group_by" "group_wait" "group_interval" "repeat_interval" "continue" "matchers" "match" "match_re" "routes" }}
{{- range $key, $_ := $in }}
{{- if has $key (list "mute_time_intervals" "active_time_intervals") }}
{{- fail (printf "%s.%s: time intervals are not translated to an AlertmanagerConfig; leave them out or write the AlertmanagerConfig yourself" $ctx.where $key) }}
{{- end }}
{{- if not (has $key $supported) }}
{{- fail (printf "%s: unknown route key %q" $ctx.where $key) }}
{{- end }}
{{- end }}
{{- with $in.receiver }}
{{- if not (kindIs "string" .) }}
{{- fail (printf "%s.receiver: must be a string" $ctx.where) }}
{{- end }}
{{- $_ := set $out "receiver" . }}
{{- $_ := set $ctx.receivers . true }}
{{- end }}
{{- if hasKey $in "group_by" }}
{{- if not (kindIs "slice" $in.group_by) }}
{{- fail (printf "%s.group_by: must be a list of label names" $ctx.where) }}
{{- end }}
{{- $_ := set $out "groupBy" (list) }}
{{- range $in.group_by }}
{{- if not (and (kindIs "string" .) (or (eq . "...") (regexMatch `^[a-zA-Z_][a-zA-Z0-9_]*$` .))) }}
{{- fail (printf "%s.group_by: %v is not a label name" $ctx.where .) }}
{{- end }}
{{- $_ := set $out "groupBy" (append $out.groupBy .) }}
{{- end }}
{{- end }}
{{- range $key, $field := dict "group_wait" "groupWait" "group_interval" "groupInterval" "repeat_interval" "repeatInterval" }}
{{- if hasKey $in $key }}
{{- $v := index $in $key }}
{{- if not (and (kindIs "string" $v) (regexMatch `^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$` $v) $v) }}
{{- fail (printf "%s.%s: %v is not a duration" $ctx.where $key $v) }}
{{- end }}
{{- $_ := set $out $field $v }}
{{- end }}
{{- end }}
{{- if hasKey $in "continue" }}
{{- if not (kindIs "bool" (index $in "continue")) }}
{{- fail (printf "%s.continue: must be true or false" $ctx.where) }}
{{- end }}
{{- $_ := set $out "continue" (index $in "continue") }}
{{- end }}
{{- $m := dict "matchers" $in.matchers "match" $in.match "matchRe" $in.match_re "where" $ctx.where "names" (list "matchers" "match" "match_re") }}
{{- include "fleet-status-exporter.amMatchers" $m }}
{{- with $m.out.list }}
{{- $_ := set $out "matchers" . }}
{{- end }}
{{- if hasKey $in "routes" }}
{{- if not (kindIs "slice" $in.routes) }}
{{- fail (printf "%s.routes: must be a list of routes" $ctx.where) }}
{{- end }}
{{- $routes := list }}
{{- range $i, $child := $in.routes }}
{{- $c := dict }}
{{- include "fleet-status-exporter.amRoute" (dict "in" $child "out" $c "where" (printf "%s.routes[%d]" $ctx.where $i) "receivers" $ctx.receivers) }}
{{- $routes = append $routes $c }}
{{- end }}
{{- with $routes }}
{{- $_ := set $out "routes" . }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The whole spec. (dict "config" <parsed Alertmanager configuration> "where" <its name> "receivers"
<alertmanagerConfig.receivers> "out" <dict to fill>).
*/}}
{{- define "fleet-status-exporter.amSpec" -}}
{{- $ctx := . }}
{{- $config := .config }}
{{- $where := .where }}
{{- if not (kindIs "map" $config) }}
{{- fail (printf "%s: not an Alertmanager configuration: expected a map with `route:`, got %s" $where (kindOf $config)) }}
{{- end }}
{{- if and (hasKey $config "Error") (kindIs "string" $config.Error) (eq (len $config) 1) }}
{{- fail (printf "%s: not valid YAML: %s" $where $config.Error) }}
{{- end }}
{{- range $key, $_ := $config }}
{{- if not (has $key (list "route" "inhibit_rules" "receivers")) }}
{{- fail (printf "%s: %q is not translated to an AlertmanagerConfig (only route, inhibit_rules and receiver names are)" $where $key) }}
{{- end }}
{{- end }}
{{- if not (hasKey $config "route") }}
{{- fail (printf "%s: `route` is missing" $where) }}
{{- end }}
{{- $seen := dict }}
{{- $route := dict }}
{{- include "fleet-status-exporter.amRoute" (dict "in" $config.route "out" $route "where" (printf "%s: route" $where) "receivers" $seen) }}
{{- if not $route.receiver }}
{{- fail (printf "%s: route.receiver is missing: the top-level route needs a receiver" $where) }}
{{- end }}
{{- $_ := set .out "route" $route }}
{{- /* Receivers: the CRD's from the values, by name; the source's by name only. */}}
{{- $given := dict }}
{{- range $i, $r := .receivers }}
{{- if hasKey $given $r.name }}
{{- fail (printf "alertmanagerConfig.receivers[%d]: receiver %q is listed twice" $i $r.name) }}
{{- end }}
{{- $_ := set $given $r.name $r }}
{{- end }}
{{- if hasKey $config "receivers" }}
{{- if not (kindIs "slice" $config.receivers) }}
{{- fail (printf "%s: receivers: must be a list" $where) }}
{{- end }}
{{- range $i, $r := $config.receivers }}
{{- if not (and (kindIs "map" $r) (kindIs "string" $r.name) $r.name) }}
{{- fail (printf "%s: receivers[%d]: a receiver needs a name" $where $i) }}
{{- end }}
{{- if and (gt (len $r) 1) (not (hasKey $given $r.name)) }}
{{- fail (printf "%s: receivers[%d] (%s): integrations are not translated; give this receiver in alertmanagerConfig.receivers in the AlertmanagerConfig CRD's form" $where $i $r.name) }}
{{- end }}
{{- $_ := set $seen $r.name true }}
{{- end }}
{{- end }}
{{- $receivers := list }}
{{- range $name := keys (merge (dict) $seen $given) | sortAlpha }}
{{- $receivers = append $receivers (index $given $name | default (dict "name" $name)) }}
{{- end }}
{{- $_ := set .out "receivers" $receivers }}
{{- if hasKey $config "inhibit_rules" }}
{{- if not (kindIs "slice" $config.inhibit_rules) }}
{{- fail (printf "%s: inhibit_rules: must be a list" $where) }}
{{- end }}
{{- $rules := list }}
{{- range $i, $rule := $config.inhibit_rules }}
{{- $at := printf "%s: inhibit_rules[%d]" $where $i }}
{{- if not (kindIs "map" $rule) }}
{{- fail (printf "%s: an inhibit rule must be a map" $at) }}
{{- end }}
{{- range $key, $_ := $rule }}
{{- if not (has $key (list "source_matchers" "target_matchers" "source_match" "source_match_re" "target_match" "target_match_re" "equal")) }}
{{- fail (printf "%s: unknown inhibit rule key %q" $at $key) }}
{{- end }}
{{- end }}
{{- $out := dict }}
{{- range $side := list "source" "target" }}
{{- $m := dict "matchers" (index $rule (printf "%s_matchers" $side)) "match" (index $rule (printf "%s_match" $side)) "matchRe" (index $rule (printf "%s_match_re" $side)) "where" $at "names" (list (printf "%s_matchers" $side) (printf "%s_match" $side) (printf "%s_match_re" $side)) }}
{{- include "fleet-status-exporter.amMatchers" $m }}
{{- with $m.out.list }}
{{- $_ := set $out (printf "%sMatch" $side) . }}
{{- end }}
{{- end }}
{{- if hasKey $rule "equal" }}
{{- if not (kindIs "slice" $rule.equal) }}
{{- fail (printf "%s: equal: must be a list of label names" $at) }}
{{- end }}
{{- range $rule.equal }}
{{- if not (and (kindIs "string" .) (regexMatch `^[a-zA-Z_][a-zA-Z0-9_]*$` .)) }}
{{- fail (printf "%s: equal: %v is not a label name" $at .) }}
{{- end }}
{{- end }}
{{- with $rule.equal }}
{{- $_ := set $out "equal" . }}
{{- end }}
{{- end }}
{{- $rules = append $rules $out }}
{{- end }}
{{- with $rules }}
{{- $_ := set $ctx.out "inhibitRules" . }}
{{- end }}
{{- end }}
{{- end }}

// Command render renders a Helm chart the way `helm template` does, for the chart tests.
//
// Helm itself is not packaged for Debian or PyPI, so the tests use this small stand-in built
// from Go's text/template and sprig (the same engine Helm uses). It implements only what the
// fleet-status-exporter chart relies on: values.yaml merged with -f overrides (null deletes a
// key; numbers become float64 as in Helm), .Release, .Chart, .Capabilities, .Template, .Files
// (Get, GetBytes, Glob, AsConfig, Lines; .helmignore applied) and the Helm functions include,
// tpl, required, toYaml, fromYaml, toJson, fromJson and lookup (always empty, as with
// `helm template`). It does not validate values.schema.json (the Python tests do), sort
// manifests by kind, or support subcharts, AsSecrets or fromYamlArray.
//
// Build in GOPATH mode against the Debian packages:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o render ./tests/chart/render
//
// Usage: render -chart DIR [-f values.yaml]... [-name RELEASE] [-namespace NS]
// [-api-versions GROUP/VERSION]... [-notes]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"gopkg.in/yaml.v3"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// Files mirrors Helm's .Files: every non-template chart file, keyed by its slash path.
type Files map[string][]byte

func (f Files) GetBytes(name string) []byte { return f[name] }
func (f Files) Get(name string) string      { return string(f[name]) }

// Glob matches with path.Match, so `*` does not cross a slash (as in Helm).
func (f Files) Glob(pattern string) Files {
	out := Files{}
	for name, data := range f {
		if ok, _ := path.Match(pattern, name); ok {
			out[name] = data
		}
	}
	return out
}

func (f Files) AsConfig() string {
	m := map[string]string{}
	for name, data := range f {
		m[path.Base(name)] = string(data)
	}
	return toYAML(m)
}

func (f Files) Lines(name string) []string {
	return strings.Split(strings.TrimSuffix(string(f[name]), "\n"), "\n")
}

type VersionSet []string

func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

type KubeVersion struct{ Version, Major, Minor, GitVersion string }

func (k KubeVersion) String() string { return k.Version }

type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
}

// normalize turns YAML-decoded data into what Helm sees: JSON types, so numbers are float64.
func normalize(v interface{}) (interface{}, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out interface{}
	err = json.Unmarshal(raw, &out)
	return out, err
}

func readYAMLMap(file string) (map[string]interface{}, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var raw interface{}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if raw == nil {
		return map[string]interface{}{}, nil
	}
	norm, err := normalize(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	m, ok := norm.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: top level is not a map", file)
	}
	return m, nil
}

// coalesce merges override into base like Helm: maps merge recursively, null deletes the key.
func coalesce(base, override map[string]interface{}) map[string]interface{} {
	for k, ov := range override {
		if ov == nil {
			delete(base, k)
			continue
		}
		bm, bIsMap := base[k].(map[string]interface{})
		om, oIsMap := ov.(map[string]interface{})
		if bIsMap && oIsMap {
			base[k] = coalesce(bm, om)
		} else {
			base[k] = ov
		}
	}
	return base
}

// toYAML encodes through JSON first, as Helm's toYaml (sigs.k8s.io/yaml) does: JSON scalar
// types, sorted keys, block style, whole numbers without a fraction; the trailing newline is trimmed.
func toYAML(v interface{}) string {
	norm, err := normalize(v)
	if err != nil {
		return ""
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(wholeNumbers(norm)); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func wholeNumbers(v interface{}) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		for k, e := range x {
			x[k] = wholeNumbers(e)
		}
	case []interface{}:
		for i, e := range x {
			x[i] = wholeNumbers(e)
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return int64(x)
		}
	}
	return v
}

func fromYAML(s string) map[string]interface{} {
	var raw interface{}
	if err := yaml.Unmarshal([]byte(s), &raw); err != nil {
		return map[string]interface{}{"Error": err.Error()}
	}
	norm, err := normalize(raw)
	if err != nil {
		return map[string]interface{}{"Error": err.Error()}
	}
	m, ok := norm.(map[string]interface{})
	if !ok {
		return map[string]interface{}{}
	}
	return m
}

// ignored applies the simple forms of .helmignore patterns: `dir/` and globs on the base name or
// the whole path (no negation).
func ignored(rel string, patterns []string) bool {
	for _, p := range patterns {
		if strings.HasSuffix(p, "/") {
			dir := strings.TrimSuffix(p, "/")
			if strings.HasPrefix(rel, dir+"/") || strings.Contains(rel, "/"+dir+"/") {
				return true
			}
			continue
		}
		if ok, _ := path.Match(p, path.Base(rel)); ok {
			return true
		}
		if ok, _ := path.Match(p, rel); ok {
			return true
		}
	}
	return false
}

func loadChart(dir string) (map[string]interface{}, map[string]string, Files, error) {
	meta, err := readYAMLMap(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, nil, nil, err
	}
	// Helm exposes Chart.yaml fields with capitalised names (.Chart.AppVersion).
	chart := map[string]interface{}{}
	for k, v := range meta {
		chart[strings.ToUpper(k[:1])+k[1:]] = v
	}
	var patterns []string
	if data, err := os.ReadFile(filepath.Join(dir, ".helmignore")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") {
				patterns = append(patterns, line)
			}
		}
	}
	templates := map[string]string{}
	files := Files{}
	special := map[string]bool{"Chart.yaml": true, "values.yaml": true, "values.schema.json": true, ".helmignore": true}
	err = filepath.Walk(dir, func(p string, info os.FileInfo, werr error) error {
		if werr != nil || info.IsDir() {
			return werr
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if ignored(rel, patterns) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(rel, "templates/"):
			templates[rel] = string(data)
		case special[rel] || strings.HasPrefix(rel, "charts/"):
		default:
			files[rel] = data
		}
		return nil
	})
	return chart, templates, files, err
}

func main() {
	var valueFiles, apiVersions multiFlag
	chartDir := flag.String("chart", "", "chart directory")
	release := flag.String("name", "release-name", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	notes := flag.Bool("notes", false, "render templates/NOTES.txt instead of the manifests")
	flag.Var(&valueFiles, "f", "values file (repeatable, later files win)")
	flag.Var(&apiVersions, "api-versions", "extra API version for .Capabilities (repeatable)")
	flag.Parse()
	if err := run(*chartDir, *release, *namespace, *notes, valueFiles, apiVersions); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(chartDir, release, namespace string, notes bool, valueFiles, apiVersions []string) error {
	chart, templates, files, err := loadChart(chartDir)
	if err != nil {
		return err
	}
	values, err := readYAMLMap(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	for _, f := range valueFiles {
		override, err := readYAMLMap(f)
		if err != nil {
			return err
		}
		values = coalesce(values, override)
	}
	caps := Capabilities{
		KubeVersion: KubeVersion{Version: "v1.31.0", Major: "1", Minor: "31", GitVersion: "v1.31.0"},
		APIVersions: append(VersionSet{"v1", "apps/v1", "policy/v1", "networking.k8s.io/v1",
			"rbac.authorization.k8s.io/v1"}, apiVersions...),
	}
	chartName, _ := chart["Name"].(string)

	root := template.New("gotpl").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = fromYAML
	funcs["toJson"] = func(v interface{}) string { b, _ := json.Marshal(v); return string(b) }
	funcs["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	funcs["lookup"] = func(string, string, string, string) map[string]interface{} { return map[string]interface{}{} }
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if s, ok := v.(string); v == nil || (ok && s == "") {
			return nil, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		var buf strings.Builder
		err := root.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		clone, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err := clone.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf strings.Builder
		err = t.Execute(&buf, data)
		return strings.ReplaceAll(buf.String(), "<no value>", ""), err
	}
	root.Funcs(funcs)

	names := make([]string, 0, len(templates))
	for name := range templates {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := root.New(chartName + "/" + name).Parse(templates[name]); err != nil {
			return err
		}
	}

	var out strings.Builder
	for _, name := range names {
		base := path.Base(name)
		isNotes := base == "NOTES.txt"
		if strings.HasPrefix(base, "_") || isNotes != notes {
			continue
		}
		full := chartName + "/" + name
		data := map[string]interface{}{
			"Values":       values,
			"Chart":        chart,
			"Capabilities": caps,
			"Files":        files,
			"Release": map[string]interface{}{
				"Name": release, "Namespace": namespace, "Service": "Helm",
				"IsInstall": true, "IsUpgrade": false, "Revision": 1,
			},
			"Template": map[string]interface{}{"Name": full, "BasePath": chartName + "/templates"},
		}
		var buf strings.Builder
		if err := root.ExecuteTemplate(&buf, full, data); err != nil {
			return err
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if notes {
			out.WriteString(text)
		} else {
			fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", full, strings.TrimRight(text, "\n"))
		}
	}
	_, err = os.Stdout.WriteString(out.String())
	return err
}

#!/bin/sh
# Copies the Prometheus rule files (top-level alerts/*.yaml|*.yml with a `groups:` key), the
# Alertmanager routing configuration (alerts/alertmanager.yaml) and the Grafana dashboards
# (dashboards/*.json) into the chart's files/alerts/, files/alertmanager/ and files/dashboards/,
# because Helm can only embed files inside the chart directory. alerts/ and dashboards/ stay the
# single source; the chart tests fail when the copies drift. File names must not contain white
# space.
#
#   charts/fleet-status-exporter/sync-files.sh          # update the copies
#   charts/fleet-status-exporter/sync-files.sh --check  # exit 1 if they differ
set -eu

chart_dir=$(cd "$(dirname "$0")" && pwd)
repo_root=${REPO_ROOT:-$(cd "$chart_dir/../.." && pwd)}
check=false
[ "${1:-}" = "--check" ] && check=true
status=0

# Prints the source files of one kind, one per line.
sources() {
    case $1 in
        alerts)
            for f in "$repo_root"/alerts/*.yaml "$repo_root"/alerts/*.yml; do
                [ -f "$f" ] && grep -q '^groups:' "$f" && echo "$f"
            done ;;
        alertmanager)
            f="$repo_root/alerts/alertmanager.yaml"
            [ -f "$f" ] && echo "$f" ;;
        dashboards)
            for f in "$repo_root"/dashboards/*.json; do
                [ -f "$f" ] && echo "$f"
            done ;;
    esac
    return 0
}

for kind in alerts alertmanager dashboards; do
    dest="$chart_dir/files/$kind"
    wanted=$(sources "$kind")
    for src in $wanted; do
        copy="$dest/$(basename "$src")"
        if ! cmp -s "$src" "$copy"; then
            if $check; then
                echo "out of date: $copy" >&2; status=1
            else
                mkdir -p "$dest" && cp "$src" "$copy"
            fi
        fi
    done
    # Copies whose source is gone.
    for copy in "$dest"/*; do
        [ -f "$copy" ] || continue
        found=false
        for src in $wanted; do
            [ "$(basename "$src")" = "$(basename "$copy")" ] && found=true
        done
        if ! $found; then
            if $check; then
                echo "stale: $copy" >&2; status=1
            else
                rm -f "$copy"
            fi
        fi
    done
done
exit $status

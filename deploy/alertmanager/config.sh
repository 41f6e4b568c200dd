#!/usr/bin/env bash
# Print the Alertmanager config rendered from alertmanager.yml.tmpl (what start.sh runs with), checked by amtool.
# For production, where hcep-alertmanager.service runs Alertmanager from /etc/hcep/alertmanager.yml:
#
#   bash deploy/alertmanager/config.sh --receiver-url https://ops.example.com/hooks/hcep \
#       --group-wait 30s --group-interval 5m --repeat-interval 4h | sudo tee /etc/hcep/alertmanager.yml
#
# Settings: see common.sh (or --help).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
alertmanager_parse_args "$@"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
render_config >"$out"
if [ -x "$AM_TOOL" ]; then
    "$AM_TOOL" check-config "$out" >/dev/null || adie "the rendered config is invalid"
fi
cat "$out"

#!/usr/bin/env bash
# Report whether gmond and gmetad (started by start.sh) are running and answering.
# Exit 0 when both run and answer, 3 otherwise (the LSB "not running" status).
#
#   bash deploy/ganglia/status.sh [--run-dir DIR] [--gmond-port N] [--xml-port N]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ganglia_parse_args "$@"

rc=0
report() {  # report NAME PORT
    local pid
    if ! pid="$(pid_of "$1")"; then
        printf '%-7s stopped\n' "$1"; rc=3; return
    fi
    if port_open "$2"; then
        printf '%-7s running  pid %-7s 127.0.0.1:%s answers\n' "$1" "$pid" "$2"
    else
        printf '%-7s running  pid %-7s 127.0.0.1:%s DOES NOT ANSWER\n' "$1" "$pid" "$2"; rc=3
    fi
}
report gmond "$GMOND_PORT"
report gmetad "$GMETAD_XML_PORT"
printf 'run dir %s\nrrds    %s (%s files)\n' "$GANGLIA_RUN_DIR" "$GANGLIA_RRD_ROOTDIR" \
    "$(find "$GANGLIA_RRD_ROOTDIR" -name '*.rrd' 2>/dev/null | wc -l)"
exit $rc

#!/usr/bin/env bash
# Installs the system packages and the npm package the integration tests talk to, when they are missing:
# openssh-server (Fabric tests), chrony (chronyc parsing), kcat (librdkafka mock Kafka cluster),
# clickhouse-server (sink tests), iproute2, prometheus (promtool and the exporter's scrape test), and, under node,
# hdr-histogram-js (independent .hlog decoder) and typescript with @grafana/schema (Grafana's published dashboard and
# panel schemas, checked against monitoring/dashboards/ by tests/fixtures/grafana_dashboard_check.js).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
need=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v chronyd >/dev/null 2>&1 || [ -x /usr/sbin/chronyd ] || need+=(chrony)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v clickhouse-server >/dev/null 2>&1 || need+=(clickhouse-server clickhouse-client)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || need+=(prometheus)
# the non-root login fixture (tests/fixtures/infra_sshd.py) gives its user passwordless sudo, as on an EC2 host;
# a minimal Debian has no sudo (and no /etc/sudoers.d) at all
command -v sudo >/dev/null 2>&1 && command -v visudo >/dev/null 2>&1 || need+=(sudo)
command -v node >/dev/null 2>&1 || need+=(nodejs npm)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing system packages: ${need[*]} (run as root, or: sudo apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "installing system packages: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ ! -d "$root/.cache/node/node_modules/hdr-histogram-js" ]; then
  mkdir -p "$root/.cache/node"
  (cd "$root/.cache/node" && npm install --silent --no-audit --no-fund hdr-histogram-js@3 >/dev/null)
fi
# exact versions: docs/monitoring.md names the schema version the dashboard is checked against
schema_pins=(typescript@5.9.3 @grafana/schema@13.2.3)
stale=()
for pin in "${schema_pins[@]}"; do
  have=$(node -p "require('$root/.cache/node/node_modules/${pin%@*}/package.json').version" 2>/dev/null || true)
  [ "$have" = "${pin##*@}" ] || stale+=("$pin")
done
if [ ${#stale[@]} -gt 0 ]; then
  mkdir -p "$root/.cache/node"
  (cd "$root/.cache/node" && npm install --silent --no-audit --no-fund --save-exact "${stale[@]}" >/dev/null)
fi
echo "test dependencies ready"

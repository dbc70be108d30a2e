#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a running 3-node demo cluster: installs
# PostgreSQL 15 when missing (apt-get, needs root), the npm packages, then runs `ha demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/lib/postgresql/15/bin/initdb ]; then
  if [ "$(id -u)" -ne 0 ]; then echo "PostgreSQL 15 is missing: run as root or apt-get install postgresql-15" >&2; exit 1; fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15
  (systemctl stop postgresql >/dev/null 2>&1 || service postgresql stop >/dev/null 2>&1 || true)
fi
[ -d node_modules ] || npm ci --no-audit --no-fund
exec node --import tsx src/cli/ha.ts demo "$@"

#!/bin/sh
# A callback for every event of database.callbacks (see README.md). Called as
#   callback.sh <action> <role> <scope>
# e.g. `callback.sh on_role_change primary demo`. It only logs; a real one would move a virtual
# IP or update a DNS record when `role` is `primary` (and give them up otherwise).
action="$1"; role="$2"; scope="$3"
log="${HA_CALLBACK_LOG:-/var/tmp/ha-demo/callbacks.log}"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $(hostname) $scope $action $role" >> "$log"
case "$action:$role" in
  on_start:primary|on_role_change:primary) : # e.g. ip addr add 10.0.0.10/24 dev eth0
    ;;
  on_stop:*|on_role_change:*) : # e.g. ip addr del 10.0.0.10/24 dev eth0 2>/dev/null || true
    ;;
esac

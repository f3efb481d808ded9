#!/usr/bin/env bash
# Make sure the local PostgreSQL and Redis that the integration tests use are up.
set -uo pipefail
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  echo "services: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  echo "services: starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
fi
for _ in $(seq 30); do
  pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null && redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "services: PostgreSQL or Redis did not come up on 127.0.0.1" >&2
exit 1

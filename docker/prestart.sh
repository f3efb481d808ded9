#!/bin/sh
# The stack's one-shot prestart step: wait until the database accepts connections, apply the
# migrations, load the committed datasets into the tasks table. The API starts only after this
# exits 0 (compose: service_completed_successfully), so no two replicas race to migrate.
set -eu

database_ready() {
    # exit 0: ready; 1: not yet; 2: the settings themselves are wrong (waiting would not help)
    python - <<'PY'
import sys

from shared.settings import SettingsError, get_settings

try:
    url = get_settings().database_url
except SettingsError as exc:
    print(f"prestart: {exc}", file=sys.stderr)
    sys.exit(2)

from sqlalchemy import create_engine, text

try:
    with create_engine(url).connect() as connection:
        connection.execute(text("SELECT 1"))
except Exception as exc:  # noqa: BLE001 - any failure to connect means "not yet"
    print(f"prestart: database not ready: {type(exc).__name__}: {str(exc).splitlines()[0]}", file=sys.stderr)
    sys.exit(1)
PY
}

tries="${VERIRL_DB_WAIT_TRIES:-60}"
i=0
while :; do
    status=0
    database_ready || status=$?
    [ "$status" -eq 0 ] && break
    [ "$status" -eq 1 ] || exit "$status"
    i=$((i + 1))
    if [ "$i" -ge "$tries" ]; then
        echo "prestart: the database did not accept connections after $tries tries" >&2
        exit 1
    fi
    sleep 1
done

verirl db upgrade
verirl db import-tasks
echo "prestart: database migrated and tasks imported"

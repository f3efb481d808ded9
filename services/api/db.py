"""Engines, sessions, migrations and the one bulk-write primitive (insert, skipping rows whose
natural key exists). Postgres in CI and compose; SQLite for the embedded demo."""
from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, Engine, bindparam, create_engine, event, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).parent / "migrations"
ALEMBIC_INI = Path(__file__).parent / "alembic.ini"

_engines: dict[str, tuple[int, Engine]] = {}
_engines_lock = threading.Lock()


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):
            # WAL lets the API read while pool processes write; foreign keys are off by default.
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def get_engine(url: str) -> Engine:
    """One engine per URL per process. A forked child (Celery prefork, process pool) gets its own
    engine instead of sharing the parent's sockets."""
    with _engines_lock:
        pid_engine = _engines.get(url)
        if pid_engine and pid_engine[0] == os.getpid():
            return pid_engine[1]
        if pid_engine:
            pid_engine[1].dispose(close=False)  # inherited connections belong to the parent
        engine = make_engine(url)
        _engines[url] = (os.getpid(), engine)
        return engine


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(engine: Engine) -> Iterator[Session]:
    """A session whose work commits on success and rolls back on any exception."""
    with session_factory(engine)() as session, session.begin():
        yield session


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema up to `revision` with Alembic (idempotent)."""
    from alembic import command
    from alembic.config import Config

    config = Config(str(ALEMBIC_INI))
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def insert_ignoring_conflicts(session: Session, table, rows: Sequence[dict[str, Any]], returning=()):
    """INSERT all `rows`, skipping rows that collide with an existing unique key, in a few
    statements whatever the number of rows. Returns the `returning` columns of the rows actually
    inserted. Every row must have the same keys."""
    if not rows:
        return []
    if session.get_bind().dialect.name == "postgresql" and not any(isinstance(table.c[c].type, JSON) for c in rows[0]):
        statement = _unnest_insert(table, rows)
        parameters = None
    else:
        dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
        statement = dialect.insert(table).on_conflict_do_nothing()
        parameters = list(rows)  # sent as batched multi-row VALUES ("insertmanyvalues")
    if returning:
        return session.execute(statement.returning(*returning), parameters).all()
    session.execute(statement, parameters)
    return []


def _unnest_insert(table, rows: Sequence[dict[str, Any]]):
    """INSERT … SELECT FROM unnest(one array per column): a statement of constant size, so that
    neither the driver nor the server parses thousands of placeholders."""
    columns = list(rows[0])
    arrays = [bindparam(f"{name}_values", [row[name] for row in rows], type_=postgresql.ARRAY(table.c[name].type))
              for name in columns]
    source = func.unnest(*arrays).table_valued(*columns).render_derived()
    return (postgresql.insert(table)
            .from_select(columns, select(*(source.c[name] for name in columns)))
            .on_conflict_do_nothing())

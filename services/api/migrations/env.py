"""Alembic environment: runs migrations on the connection `services.api.db.upgrade()` passes
in, or on `sqlalchemy.url` / VERIRL_DATABASE_URL when invoked through the `alembic` command."""
from alembic import context
from sqlalchemy import create_engine

from services.api.models import Base

config = context.config
target_metadata = Base.metadata


def run(connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata,
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    run(connection)
else:
    from shared.settings import get_settings

    url = config.get_main_option("sqlalchemy.url") or get_settings().database_url
    with create_engine(url).connect() as connection:
        run(connection)
        connection.commit()

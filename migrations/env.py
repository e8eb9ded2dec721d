"""Alembic environment of the mlsub decision store.

mlsub runs migrations itself (``mlsub db upgrade``, and a fresh database is created at
head): it passes an open connection in ``config.attributes["connection"]``, already inside
a transaction that holds the schema lock, and commits it. Without one (Alembic's own
command line with ``-x url=DATABASE_URL``), it opens the URL and commits itself.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from slurm_mlsched.storage.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise SystemExit("give the database: alembic -x url=DATABASE_URL upgrade head")
    with create_engine(url).connect() as conn:
        _run(conn)
        conn.commit()


def _run(connection: object) -> None:
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) mode is not supported; give a database URL")
run_migrations_online()

"""Persistence: SQLAlchemy tables, the repository (rows <-> domain values), Alembic migrations."""

"""runs remember what their catalog was loaded from (definitions folders and file)

Revision ID: 0004_run_catalog_sources
Revises: 0003_version_source
Create Date: 2026-12-01 09:00:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision: str = '0004_run_catalog_sources'
down_revision: Union[str, Sequence[str], None] = '0003_version_source'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column(
            'catalog_sources', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'),
            nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('catalog_sources')

"""published versions keep their exact source text and file name

Revision ID: 0003_version_source
Revises: 0002
Create Date: 2026-11-30 07:00:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

revision: str = '0003_version_source'
down_revision: Union[str, Sequence[str], None] = '0002'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('definition_versions') as batch:
        batch.add_column(sa.Column('source', sa.Text(), nullable=True))
        batch.add_column(sa.Column('source_file', sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('definition_versions') as batch:
        batch.drop_column('source_file')
        batch.drop_column('source')

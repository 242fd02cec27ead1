"""runs and node visits record the kind of their failure (definition, world, model, internal)

Revision ID: 0006_error_kind
Revises: 0005_sign_ins
Create Date: 2026-12-02 09:00:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

revision: str = '0006_error_kind'
down_revision: Union[str, Sequence[str], None] = '0005_sign_ins'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('error_kind', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    with op.batch_alter_table('node_visits') as batch:
        batch.add_column(sa.Column('error_kind', sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('node_visits') as batch:
        batch.drop_column('error_kind')
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('error_kind')

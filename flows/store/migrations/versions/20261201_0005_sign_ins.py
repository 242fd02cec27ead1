"""dashboard sign-ins (the sessions behind the dashboard's signed cookie)

Revision ID: 0005_sign_ins
Revises: 0004_run_catalog_sources
Create Date: 2026-12-01 12:00:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

revision: str = '0005_sign_ins'
down_revision: Union[str, Sequence[str], None] = '0004_run_catalog_sources'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table('sign_ins',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('user_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('revoked_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['user_name'], ['users.name'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('sign_ins') as batch:
        batch.create_index(batch.f('ix_sign_ins_user_name'), ['user_name'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('sign_ins') as batch:
        batch.drop_index(batch.f('ix_sign_ins_user_name'))
    op.drop_table('sign_ins')

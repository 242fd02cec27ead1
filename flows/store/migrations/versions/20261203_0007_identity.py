"""personal API tokens (stored hashed) and admins' OS-user bindings

Revision ID: 0007_identity
Revises: 0006_error_kind
Create Date: 2026-12-03 09:00:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

revision: str = '0007_identity'
down_revision: Union[str, Sequence[str], None] = '0006_error_kind'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table('api_tokens',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('user_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('label', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('token_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('revoked_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('revoked_by', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('last_used_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['user_name'], ['users.name'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_hash')
    )
    with op.batch_alter_table('api_tokens') as batch:
        batch.create_index(batch.f('ix_api_tokens_user_name'), ['user_name'], unique=False)
    op.create_table('os_bindings',
    sa.Column('os_user', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('user_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_by', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['user_name'], ['users.name'], ),
    sa.PrimaryKeyConstraint('os_user')
    )
    with op.batch_alter_table('os_bindings') as batch:
        batch.create_index(batch.f('ix_os_bindings_user_name'), ['user_name'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('os_bindings') as batch:
        batch.drop_index(batch.f('ix_os_bindings_user_name'))
    op.drop_table('os_bindings')
    with op.batch_alter_table('api_tokens') as batch:
        batch.drop_index(batch.f('ix_api_tokens_user_name'))
    op.drop_table('api_tokens')

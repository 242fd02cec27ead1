"""webhook deliveries kept for replay protection; refused dashboard sign-ins kept for throttling

``webhook_deliveries`` holds the signature (hashed) of each accepted webhook request until its
timestamp leaves the replay window, so a replay is refused after a restart and across several
``ergon serve`` processes. ``sign_in_failures`` holds refused dashboard sign-ins by user name and
address, so every dashboard process throttles the same guesses.

Revision ID: 0013_replays_and_throttling
Revises: 0012_run_deployment
Create Date: 2026-12-06 10:00:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

revision: str = '0013_replays_and_throttling'
down_revision: Union[str, Sequence[str], None] = '0012_run_deployment'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table('sign_in_failures',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('user_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('address', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('sign_in_failures') as batch:
        batch.create_index(batch.f('ix_sign_in_failures_user_name'), ['user_name'], unique=False)
        batch.create_index(batch.f('ix_sign_in_failures_address'), ['address'], unique=False)
        batch.create_index(batch.f('ix_sign_in_failures_at'), ['at'], unique=False)
    op.create_table('webhook_deliveries',
    sa.Column('signature', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('definition_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('received_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('signature')
    )
    with op.batch_alter_table('webhook_deliveries') as batch:
        batch.create_index(batch.f('ix_webhook_deliveries_expires_at'), ['expires_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('webhook_deliveries') as batch:
        batch.drop_index(batch.f('ix_webhook_deliveries_expires_at'))
    op.drop_table('webhook_deliveries')
    with op.batch_alter_table('sign_in_failures') as batch:
        batch.drop_index(batch.f('ix_sign_in_failures_at'))
        batch.drop_index(batch.f('ix_sign_in_failures_address'))
        batch.drop_index(batch.f('ix_sign_in_failures_user_name'))
    op.drop_table('sign_in_failures')

"""runs say whether a supervisor watches them (run_type); run_events: commands and messages

Revision ID: 0009_run_events
Revises: 0008_workstreams
Create Date: 2026-12-03 09:00:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

revision: str = '0009_run_events'
down_revision: Union[str, Sequence[str], None] = '0008_workstreams'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('run_type', sqlmodel.sql.sqltypes.AutoString(), nullable=False,
                                   server_default='programmatic'))
    op.create_table('run_events',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('run_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('actor', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('node_id', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('args', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=True),
    sa.Column('outcome', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('reason', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('delivered_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('run_events') as batch:
        batch.create_index(batch.f('ix_run_events_run_id'), ['run_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('run_events') as batch:
        batch.drop_index(batch.f('ix_run_events_run_id'))
    op.drop_table('run_events')
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('run_type')

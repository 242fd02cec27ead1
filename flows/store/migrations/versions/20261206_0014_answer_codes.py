"""one-time answer codes: what Prefect's own form asks instead of a personal token

Prefect keeps every input its form sends (its database, write-ahead log, backups, Prefect
Cloud), and Ergon cannot erase copies it does not own: a long-lived credential must never travel
through it. A task that must know who answers asks, in Prefect's form, a code ``ergon tasks
code`` gives for that task and that person; the store keeps its SHA-256, spends it on first use
and lets it expire.

Revision ID: 0014_answer_codes
Revises: 0013_replays_and_throttling
Create Date: 2026-12-06 11:00:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

revision: str = '0014_answer_codes'
down_revision: Union[str, Sequence[str], None] = '0013_replays_and_throttling'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table('answer_codes',
    sa.Column('code_sha256', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('task_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('user_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('used_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['task_id'], ['human_tasks.id'], ),
    sa.ForeignKeyConstraint(['user_name'], ['users.name'], ),
    sa.PrimaryKeyConstraint('code_sha256')
    )
    with op.batch_alter_table('answer_codes') as batch:
        batch.create_index(batch.f('ix_answer_codes_task_id'), ['task_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('answer_codes') as batch:
        batch.drop_index(batch.f('ix_answer_codes_task_id'))
    op.drop_table('answer_codes')

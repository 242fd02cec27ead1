"""runs record the Prefect deployment and work pool that ran them, and the process that ran them last

A run started through its definition's deployment (the dashboard, webhooks, chains, triggers,
replays, resumes) is executed by a worker of the deployment's work pool; the run names both, so
``ergon runs show`` can say where it ran without asking Prefect. ``ran_pid`` keeps the process
that executed it last after the run ends (``pid`` is released then: it names a process only
while one may still owe Prefect the run's end).

Revision ID: 0012_run_deployment
Revises: 0011_ended_runs_release_pid
Create Date: 2026-12-06 09:00:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

revision: str = '0012_run_deployment'
down_revision: Union[str, Sequence[str], None] = '0011_ended_runs_release_pid'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('deployment', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch.add_column(sa.Column('work_pool', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch.add_column(sa.Column('ran_pid', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('ran_pid')
        batch.drop_column('work_pool')
        batch.drop_column('deployment')

"""human task: the Prefect flow run waiting for its answer

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 06:50:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel

revision: str = '0002'
down_revision: Union[str, Sequence[str], None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('human_tasks') as batch:
        batch.add_column(sa.Column('prefect_flow_run_id', sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('human_tasks') as batch:
        batch.drop_column('prefect_flow_run_id')

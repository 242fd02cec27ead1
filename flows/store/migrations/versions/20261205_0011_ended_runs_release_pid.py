"""ended runs no longer name the process that ended them (data only)

From this revision a run's ``pid`` stays set after the run ends only until Prefect has the flow
run's final state; an ended run still naming a dead process is one whose flow run may be left
open (``flows.store.runs.ended_unsettled``). Runs ended before it name their process forever, so
they are released here rather than each costing a Prefect read.

Revision ID: 0011_ended_runs_release_pid
Revises: 0010_submissions
Create Date: 2026-12-05 09:00:00

"""
from typing import Sequence, Union

from alembic import op

revision: str = '0011_ended_runs_release_pid'
down_revision: Union[str, Sequence[str], None] = '0010_submissions'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.execute("UPDATE runs SET pid = NULL WHERE status IN ('completed', 'failed', 'cancelled')")


def downgrade() -> None:
    pass  # the pids are gone; an older revision only ever read them of runs that had not ended

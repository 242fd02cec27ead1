"""SQLModel tables of the Ergon store: definitions, runs and everything that happens in a run.

Conventions, and why:

* Ids are 32-character uuid4 hex strings made in Python (:func:`flows.store.ids.new_id`), so a
  caller knows an id before the row exists (Prefect task names, artifact keys, log lines) and ids
  sort nowhere in particular.
* Datetimes are timezone-aware UTC (SQLModel's ``UTCDateTime``), also on SQLite.
* JSON columns are ``JSON`` everywhere and ``JSONB`` on PostgreSQL (indexable, compact).
* Status and kind columns are plain strings in the database, checked by the entity modules;
  the allowed values are the ``Literal`` types below (code is typed with them) and the tuples of
  the same values, which the UI and CLI import for their filters.
* Indexes follow what the dashboard filters and sorts by: runs by status / definition /
  creation time (composite, so "failed runs, newest first" is one index range scan at 100k runs),
  visits by run and sequence, tasks by status and assignee.

Changing anything here needs a migration: ``alembic -c flows/store/alembic.ini revision
--autogenerate -m "…"``; ``tests/store/test_migrations.py`` fails when models and migrations drift.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal, get_args

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field, SQLModel

from flows.store.ids import new_id

#: JSON on every database, JSONB on PostgreSQL.
JSONType = sa.JSON().with_variant(JSONB(), "postgresql")

#: The statuses and kinds the store's columns take. The ``Literal`` types are what code is typed
#: with; the tuples (the same values, in order) are what filters and checks iterate over.
RunStatus = Literal["pending", "running", "paused", "completed", "failed", "crashed", "cancelled", "cancelling"]
RunTrigger = Literal["manual", "schedule", "webhook", "on_complete", "subprocess", "replay", "api",
                     "on_submission_created", "on_submission_updated", "email"]
VisitStatus = Literal["running", "completed", "failed", "skipped", "paused", "cancelled"]
ArtifactType = Literal["markdown", "table", "json", "chart", "file"]
TaskStatus = Literal["pending", "in_progress", "completed", "cancelled", "expired"]
TaskChannel = Literal["cli", "dashboard", "prefect", "api", "email"]
TaskAction = Literal["created", "claimed", "answered", "refused", "expired", "cancelled", "emailed"]
WorkstreamStatus = Literal["running", "canceling", "completed", "failed", "timeout", "canceled"]
WorkstreamPhase = Literal["planning", "executing_tool", "synthesizing", "blocked", "done"]
#: where a submission came from, and where one value version came from (seed 000)
SubmissionOrigin = Literal["manual", "import", "transformation", "merged"]
VersionSource = Literal["manual", "transformation", "human", "import", "merged"]
TransformationKind = Literal["copy", "map", "formula", "aggregate", "classify", "normalize", "llm_extract"]

RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
#: a run in one of these has ended: nothing will change it any more
RUN_TERMINAL: tuple[RunStatus, ...] = ("completed", "failed", "crashed", "cancelled")
#: the ends a run's own process writes (``crashed`` is written by whoever finds it dead)
RUN_ENDED: tuple[RunStatus, ...] = ("completed", "failed", "cancelled")
RUN_TRIGGERS: tuple[RunTrigger, ...] = get_args(RunTrigger)
VISIT_STATUSES: tuple[VisitStatus, ...] = get_args(VisitStatus)
ARTIFACT_TYPES: tuple[ArtifactType, ...] = get_args(ArtifactType)
TASK_STATUSES: tuple[TaskStatus, ...] = get_args(TaskStatus)
#: a task in one of these can still be answered
TASK_OPEN: tuple[TaskStatus, ...] = ("pending", "in_progress")
TASK_CHANNELS: tuple[TaskChannel, ...] = get_args(TaskChannel)
TASK_ACTIONS: tuple[TaskAction, ...] = get_args(TaskAction)
WORKSTREAM_STATUSES: tuple[WorkstreamStatus, ...] = get_args(WorkstreamStatus)
#: a workstream in one of these has ended
WORKSTREAM_ENDED: tuple[WorkstreamStatus, ...] = ("completed", "failed", "timeout", "canceled")
WORKSTREAM_PHASES: tuple[WorkstreamPhase, ...] = get_args(WorkstreamPhase)
SUBMISSION_ORIGINS: tuple[SubmissionOrigin, ...] = get_args(SubmissionOrigin)
VERSION_SOURCES: tuple[VersionSource, ...] = get_args(VersionSource)
TRANSFORMATION_KINDS: tuple[TransformationKind, ...] = get_args(TransformationKind)


def utcnow() -> datetime:
    return datetime.now(UTC)


def _json(**kw: Any) -> Any:
    return Field(default=None, sa_type=JSONType, nullable=True, **kw)


def _id() -> Any:
    return Field(default_factory=new_id, primary_key=True, max_length=32)


def _created() -> Any:
    return Field(default_factory=utcnow)


# --- definitions -------------------------------------------------------------------------------


class Definition(SQLModel, table=True):
    """A definition known to the store, with its editable draft (published versions apart)."""

    __tablename__ = "definitions"

    name: str = Field(primary_key=True)
    kind: str
    draft_content: Any = _json()
    draft_hash: str | None = None
    created_at: datetime = _created()
    updated_at: datetime = _created()


class DefinitionVersion(SQLModel, table=True):
    """An immutable published version (1, 2, …) of a definition."""

    __tablename__ = "definition_versions"
    __table_args__ = (sa.UniqueConstraint("definition_name", "version", name="uq_definition_versions_name_version"),)

    id: str = _id()
    definition_name: str = Field(foreign_key="definitions.name", index=True)
    version: int
    content: Any = _json()
    content_hash: str = Field(index=True)
    # The file exactly as written (comments, key order, YAML or JSON), so that `ergon revert`
    # gives the author back their text, not a re-serialisation of the parsed content.
    source: str | None = Field(default=None, sa_type=sa.Text)
    source_file: str | None = None  # its path relative to the definitions folder
    status: str = "published"
    comment: str | None = None
    published_by: str | None = None
    created_at: datetime = _created()


class DefinitionSnapshot(SQLModel, table=True):
    """Each distinct definition content, stored once; runs point at the one they execute."""

    __tablename__ = "definition_snapshots"

    hash: str = Field(primary_key=True, max_length=64)
    content: Any = _json()
    created_at: datetime = _created()


# --- runs and what happens in them -------------------------------------------------------------


class Run(SQLModel, table=True):
    """One execution of a definition snapshot."""

    __tablename__ = "runs"
    __table_args__ = (
        # Filter + newest-first sort served by one index each (status alone and definition alone
        # use the leading column).
        sa.Index("ix_runs_status_created_at", "status", "created_at"),
        sa.Index("ix_runs_definition_name_created_at", "definition_name", "created_at"),
    )

    id: str = _id()
    prefect_flow_run_id: str | None = Field(default=None, index=True)
    definition_name: str
    definition_version: int | None = None  # None: a draft or a file that was never published
    # The snapshot id: runs execute the content they started with, whatever happens to the draft.
    content_hash: str | None = Field(default=None, foreign_key="definition_snapshots.hash")
    # What the run's catalog was loaded from: absolute definitions folders and the file it was
    # started by, if any (resume and replay rebuild the same catalog, tools included, from any cwd).
    catalog_sources: Any = _json()
    status: str = "pending"
    outcome: str | None = None
    inputs: Any = _json()
    context: Any = _json()
    parent_run_id: str | None = Field(default=None, foreign_key="runs.id", index=True)
    # No foreign key: runs ↔ node_visits would be a reference cycle.
    parent_visit_id: str | None = None
    trigger: str = "manual"
    started_by: str | None = None
    created_at: datetime = Field(default_factory=utcnow, index=True)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    error: str | None = None
    # whose fault a failure is: definition | world | model | internal (flows.runtime.errors)
    error_kind: str | None = None
    cost_usd: float = 0.0
    tokens: int = 0
    heartbeat_at: datetime | None = None
    pid: int | None = None
    host: str | None = None
    # programmatic | supervised (an LLM supervisor watches the run, flows.runtime.supervision)
    run_type: str = "programmatic"
    # the submission a template run reads (seed 000's input_ref_type: submission); no foreign
    # key: submissions ↔ runs would be a reference cycle (a submission names the run that made it)
    input_submission_id: str | None = Field(default=None, index=True)
    # the Prefect deployment ("flow/deployment") and work pool whose worker ran it, when one did
    deployment: str | None = None
    work_pool: str | None = None
    # the process that executed it last, kept after it ends (`pid` is released then)
    ran_pid: int | None = None


class NodeVisit(SQLModel, table=True):
    """One visit of a node in a run (loops and foreach items give several visits per node)."""

    __tablename__ = "node_visits"
    __table_args__ = (sa.UniqueConstraint("run_id", "sequence", name="uq_node_visits_run_sequence"),)

    id: str = _id()
    run_id: str = Field(foreign_key="runs.id")
    sequence: int
    node_id: str
    node_type: str
    item_key: str | None = None  # foreach item id or branch name
    parent_visit_id: str | None = Field(default=None, foreign_key="node_visits.id")
    attempt: int = 1
    status: str = "running"
    started_at: datetime = _created()
    ended_at: datetime | None = None
    duration_ms: int | None = None
    input: Any = _json()
    output: Any = _json()
    context_diff: Any = _json()  # [{op, path, old, new}], see flows.store.diff
    error: str | None = None
    error_kind: str | None = None  # of a failed visit, as on runs
    prefect_task_run_id: str | None = None
    next_node: str | None = None
    # a template step's visit: the submission of its output form it produced (seed 000)
    output_submission_id: str | None = None


class Artifact(SQLModel, table=True):
    """A versioned output shown in the dashboard; each record under a key adds a version."""

    __tablename__ = "artifacts"
    __table_args__ = (sa.UniqueConstraint("run_id", "key", "version", name="uq_artifacts_run_key_version"),)

    id: str = _id()
    run_id: str = Field(foreign_key="runs.id")
    visit_id: str | None = Field(default=None, foreign_key="node_visits.id")
    key: str
    type: str
    content: Any = _json()
    version: int = 1
    description: str | None = None
    created_at: datetime = _created()


class LlmCall(SQLModel, table=True):
    """One model call, kept whole so a run can be replayed without calling the model again."""

    __tablename__ = "llm_calls"

    id: str = _id()
    run_id: str = Field(foreign_key="runs.id", index=True)
    visit_id: str | None = Field(default=None, foreign_key="node_visits.id", index=True)
    model: str
    messages: Any = _json()
    response: Any = _json()
    tools: Any = _json()
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_ms: int | None = None
    attempt: int = 1
    repair: bool = False
    cassette_key: str | None = Field(default=None, index=True)
    offline: bool = False
    error: str | None = None
    # a call made by a workstream (a delegated sub-agent) of the visit's agent; such calls have
    # no visit_id of their own (see Workstream)
    workstream_id: str | None = Field(default=None, index=True)
    created_at: datetime = _created()


class ToolCall(SQLModel, table=True):
    """One tool invocation by a tool node or an agent."""

    __tablename__ = "tool_calls"

    id: str = _id()
    run_id: str = Field(foreign_key="runs.id", index=True)
    visit_id: str | None = Field(default=None, foreign_key="node_visits.id", index=True)
    tool: str
    args: Any = _json()
    result: Any = _json()
    status: str = "completed"
    latency_ms: int | None = None
    error: str | None = None
    workstream_id: str | None = Field(default=None, index=True)  # as on llm_calls
    created_at: datetime = _created()


class Workstream(SQLModel, table=True):
    """A sub-agent an agent visit delegated a task to (``launch_workstream``), run beside it.

    Each launch is one row, linked to the parent visit; the child's model and tool calls carry its
    id (``workstream_id``) and no visit id. ``launch_id`` is what the parent agent is told and
    is derived from the run, node, item, attempt and the agent's ``key`` for it, so the visit a
    resume redoes gets the same ids: a child that ended before the crash is *adopted* by the new
    visit (re-parented, its result kept), one that was still running is launched again as a new
    row (``relaunch_of`` the lost one, which ends ``failed`` with ``end_reason`` ``crash``).
    """

    __tablename__ = "workstreams"

    id: str = _id()
    launch_id: str = Field(index=True)
    run_id: str = Field(foreign_key="runs.id", index=True)
    parent_visit_id: str = Field(foreign_key="node_visits.id", index=True)
    node_id: str
    key: str  # the `id` the parent gave it
    name: str
    instruction: str = Field(sa_type=sa.Text)
    allowed_tools: Any = _json()
    context: Any = _json()
    model: str | None = None
    deadline_seconds: float = 300.0
    interactive: bool = False
    status: str = "running"
    phase: str = "planning"
    iteration: int = 0
    tool: str | None = None  # the tool it is running (phase executing_tool)
    progress: str | None = None  # its latest message (what the model said last)
    summary: str | None = Field(default=None, sa_type=sa.Text)  # its final answer, as text
    result: Any = _json()  # that answer parsed, when it is JSON
    error: str | None = None
    # why it ended: completed | error | deadline | terminated | parent_ended | crash
    end_reason: str | None = None
    relaunch_of: str | None = None
    prefect_flow_run_id: str | None = None
    created_at: datetime = _created()
    started_at: datetime | None = None
    ended_at: datetime | None = None
    updated_at: datetime = _created()


# --- human tasks -------------------------------------------------------------------------------


class HumanTask(SQLModel, table=True):
    """A question to a person; the run stays paused until a valid answer arrives."""

    __tablename__ = "human_tasks"
    __table_args__ = (sa.Index("ix_human_tasks_status_created_at", "status", "created_at"),)

    id: str = _id()
    run_id: str = Field(foreign_key="runs.id", index=True)
    visit_id: str | None = Field(default=None, foreign_key="node_visits.id")
    node_id: str
    title: str
    description: str | None = None  # rendered from the context when the task was created
    assignee: str | None = Field(default=None, index=True)  # "group:<name>", a user name, or None
    fields: Any = _json()
    four_eyes: bool = False
    status: str = "pending"
    claimed_by: str | None = None
    claimed_at: datetime | None = None
    answer: Any = _json()
    answered_by: str | None = None
    answered_via: str | None = None
    answered_at: datetime | None = None
    due_at: datetime | None = None
    pause_key: str | None = Field(default=None, index=True)
    #: the Prefect flow run that waits for the answer: the run's own, or the task's subflow when
    #: several tasks of one run may be open at once (each pauses its own subflow)
    prefect_flow_run_id: str | None = None
    created_at: datetime = _created()


class TaskEvent(SQLModel, table=True):
    """Audit trail of a human task: who did what, when."""

    __tablename__ = "task_events"

    id: str = _id()
    task_id: str = Field(foreign_key="human_tasks.id", index=True)
    actor: str | None = None
    action: str
    detail: Any = _json()
    at: datetime = _created()


class RunEvent(SQLModel, table=True):
    """A run's audit trail beside its visits: what its supervisor or an operator asked of it
    (a command, accepted or refused with the reason), and messages posted to its supervisor."""

    __tablename__ = "run_events"

    id: str = _id()
    run_id: str = Field(foreign_key="runs.id", index=True)
    #: command | message | event
    kind: str
    #: the command (continue_process, set_context...), or the process event's kind
    name: str
    #: who: ``supervisor``, or the user who posted the message / gave the operator command
    actor: str | None = None
    node_id: str | None = None
    args: Any = _json()
    #: accepted | refused (commands); None for messages and events
    outcome: str | None = None
    reason: str | None = None
    #: a message: when the supervisor was shown it (None until then)
    delivered_at: datetime | None = None
    at: datetime = _created()


# --- submissions and provenance (seed 000) -----------------------------------------------------


class Submission(SQLModel, table=True):
    """An instance of a form: groups of items, each item a history of value versions.

    ``form_hash`` pins the form's content (a definition snapshot), so a submission is read and
    edited against the form it was made for, whatever happens to the file later."""

    __tablename__ = "submissions"
    __table_args__ = (sa.Index("ix_submissions_form_name_created_at", "form_name", "created_at"),)

    id: str = _id()
    form_name: str
    form_hash: str = Field(foreign_key="definition_snapshots.hash")
    name: str | None = None
    origin: str = "manual"  # manual | import | transformation | merged
    # a step's output: the run, the visit and the template step that produced it
    run_id: str | None = Field(default=None, foreign_key="runs.id", index=True)
    visit_id: str | None = Field(default=None, foreign_key="node_visits.id")
    step_key: str | None = None
    created_by: str | None = None
    created_at: datetime = _created()
    updated_at: datetime = _created()


class SubmissionGroup(SQLModel, table=True):
    """One group of a submission; a repeating group has one row per entry (``entry`` 0, 1, …)."""

    __tablename__ = "submission_groups"
    __table_args__ = (sa.UniqueConstraint("submission_id", "group_name", "entry", name="uq_submission_groups_entry"),)

    id: str = _id()
    submission_id: str = Field(foreign_key="submissions.id", index=True)
    group_name: str
    entry: int = 0


class SubmissionItem(SQLModel, table=True):
    """One field of one group entry; its values are :class:`ItemVersion` rows."""

    __tablename__ = "submission_items"
    __table_args__ = (sa.UniqueConstraint("group_id", "field_name", name="uq_submission_items_field"),)

    id: str = _id()
    submission_id: str = Field(foreign_key="submissions.id", index=True)
    group_id: str = Field(foreign_key="submission_groups.id")
    field_name: str


class ItemVersion(SQLModel, table=True):
    """One value of an item. Exactly one version of an item is ``selected`` (its current value);
    a new value adds a version and moves the selection, so the history is never lost.

    ``source_type`` says where the value came from: ``manual`` (a person typed it), ``import``
    (the data a submission was created from), ``transformation`` (a template step made it;
    ``source_id`` is the :class:`Transformation`), ``human`` (a human task's answer), ``merged``
    (copied into a merged submission from another submission; ``source_id`` is the version it
    was copied from)."""

    __tablename__ = "item_versions"
    __table_args__ = (sa.Index("ix_item_versions_item_selected", "item_id", "selected"),)

    id: str = _id()
    item_id: str = Field(foreign_key="submission_items.id")
    submission_id: str = Field(foreign_key="submissions.id", index=True)
    value: Any = _json()
    source_type: str
    source_id: str | None = Field(default=None, index=True)
    selected: bool = True
    created_by: str | None = None
    created_at: datetime = _created()


class Transformation(SQLModel, table=True):
    """How one value version was made: its kind, its expression (a mapping step's template), the
    visit and the model call (an LLM step's), and the input versions it was taken from
    (:class:`TransformationInput`)."""

    __tablename__ = "transformations"

    id: str = _id()
    run_id: str = Field(foreign_key="runs.id", index=True)
    visit_id: str | None = Field(default=None, foreign_key="node_visits.id", index=True)
    llm_call_id: str | None = Field(default=None, foreign_key="llm_calls.id")
    kind: str = "map"
    expression: str | None = Field(default=None, sa_type=sa.Text)
    meta: Any = _json()
    created_at: datetime = _created()


class TransformationInput(SQLModel, table=True):
    """An input value version a transformation read (a ``refId`` of the model's answer)."""

    __tablename__ = "transformation_inputs"

    transformation_id: str = Field(foreign_key="transformations.id", primary_key=True)
    version_id: str = Field(foreign_key="item_versions.id", primary_key=True, index=True)


# --- people ------------------------------------------------------------------------------------


class User(SQLModel, table=True):
    __tablename__ = "users"

    name: str = Field(primary_key=True)
    display_name: str | None = None
    password_hash: str | None = None
    is_admin: bool = False
    created_at: datetime = _created()


class Group(SQLModel, table=True):
    __tablename__ = "groups"

    name: str = Field(primary_key=True)


class Membership(SQLModel, table=True):
    __tablename__ = "memberships"

    user_name: str = Field(foreign_key="users.name", primary_key=True)
    group_name: str = Field(foreign_key="groups.name", primary_key=True, index=True)


class ApiToken(SQLModel, table=True):
    """A personal API token (``ergon tokens create``): its owner acts through it without a
    password. Only the SHA-256 of the token is kept (the token is a 256-bit random secret, so a
    fast hash is enough: there is nothing to guess); the token itself is shown once."""

    __tablename__ = "api_tokens"

    id: str = _id()
    user_name: str = Field(foreign_key="users.name", index=True)
    label: str | None = None
    token_hash: str = Field(unique=True, max_length=64)
    created_at: datetime = _created()
    expires_at: datetime | None = None  # None: never expires
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    last_used_at: datetime | None = None


class AnswerCode(SQLModel, table=True):
    """A one-time code that proves who answers one task through Prefect's own form
    (``ergon tasks code``). The store keeps its SHA-256, never the code; it is spent the first time
    it is presented, and dead after ``expires_at`` either way."""

    __tablename__ = "answer_codes"

    code_sha256: str = Field(primary_key=True, max_length=64)
    task_id: str = Field(foreign_key="human_tasks.id", index=True)
    user_name: str = Field(foreign_key="users.name")
    created_at: datetime = _created()
    expires_at: datetime
    used_at: datetime | None = None


class OsBinding(SQLModel, table=True):
    """An admin's permission: the OS user ``os_user`` acts as the Ergon user ``user_name``
    without a credential (``ERGON_USER``, or by default). One Ergon user per OS user."""

    __tablename__ = "os_bindings"

    os_user: str = Field(primary_key=True)
    user_name: str = Field(foreign_key="users.name", index=True)
    created_by: str | None = None
    created_at: datetime = _created()


class SignIn(SQLModel, table=True):
    """A dashboard sign-in. The browser holds a signed token naming it (``ui/session.py``);
    signing out revokes the row, so a copied token stops working."""

    __tablename__ = "sign_ins"

    id: str = _id()
    user_name: str = Field(foreign_key="users.name", index=True)
    created_at: datetime = _created()
    expires_at: datetime
    revoked_at: datetime | None = None


class SignInFailure(SQLModel, table=True):
    """A refused dashboard sign-in. The recent ones throttle further attempts for the same user
    name and from the same address, in every dashboard process that shares the store."""

    __tablename__ = "sign_in_failures"

    id: str = _id()
    user_name: str = Field(index=True)  # as typed: names that exist nowhere count too
    address: str = Field(index=True)
    at: datetime = Field(default_factory=utcnow, index=True)


# --- secrets and triggers ----------------------------------------------------------------------


class Secret(SQLModel, table=True):
    """An encrypted secret. Only ciphertext is stored; ``key_id`` names the key that sealed it."""

    __tablename__ = "secrets"

    name: str = Field(primary_key=True)
    ciphertext: bytes
    key_id: str
    created_at: datetime = _created()
    updated_at: datetime = _created()


class TriggerState(SQLModel, table=True):
    """Runtime state of one trigger of a definition (the trigger itself lives in the YAML)."""

    __tablename__ = "trigger_states"
    __table_args__ = (
        sa.UniqueConstraint("definition_name", "trigger_index", name="uq_trigger_states_definition_index"),
    )

    id: str = _id()
    definition_name: str = Field(index=True)
    trigger_index: int
    kind: str  # cron | interval | webhook | on_complete | on_submission_created | on_submission_updated
    paused: bool = False
    last_run_id: str | None = None
    last_run_at: datetime | None = None
    next_run_at: datetime | None = None
    created_by: str | None = None


class WebhookDelivery(SQLModel, table=True):
    """A webhook request Ergon accepted, kept while its timestamp is inside the replay window: the
    same signature again is a replay, whichever ``ergon serve`` process it reaches and whether or
    not that process restarted since."""

    __tablename__ = "webhook_deliveries"

    signature: str = Field(primary_key=True, max_length=64)  # SHA-256 (hex) of the signature header
    definition_name: str
    received_at: datetime = _created()
    expires_at: datetime = Field(index=True)

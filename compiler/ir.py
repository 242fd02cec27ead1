"""The intermediate representation: frozen pydantic models of every definition kind.

The IR is what a definition *says*, checked for shape only: unknown keys, wrong types and
missing fields are rejected here (``extra="forbid"``); everything that needs more than one
field at a time (graph shape, references, data flow) is a pass in ``compiler.passes``.

Node bodies are a union tagged by ``type``. A process is a state machine (``transitions``);
a pipeline is a DAG (``needs``/``when``) over the same node bodies. The Vertesia process JSON
document (``format_version: 1``) is accepted verbatim: that is why field names follow the seed
(``process``, ``initial``, ``context.schema``) rather than our own taste.

Every field has a description: ``ergon schema`` publishes them as JSON Schema so that editors
complete and check definitions.

No ``from __future__ import annotations`` here, on purpose: pydantic would then evaluate every
field's annotation from its string when it builds the models, a measurable part of importing the
compiler (so of every ``ergon check``). The three forward references are quoted instead.
"""

from typing import Annotated, Any, Literal, NewType, Union

from pydantic import BaseModel, ConfigDict, Field

NodeId = NewType("NodeId", str)
#: A JSON Logic rule (https://jsonlogic.com), evaluated against the run's context.
JsonLogic = Any
#: A JSON Schema document.
JsonSchema = dict[str, Any]


class IRModel(BaseModel):
    """Base of every IR model: immutable, strict about unknown keys, aliases accepted."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


# --------------------------------------------------------------------------------------------
# Shared pieces


class RetryPolicy(IRModel):
    """How a node visit is retried when it fails (maps onto Prefect task retries)."""

    retries: int = Field(0, ge=0, le=50, description="How many times to retry after the first attempt.")
    delay_seconds: float = Field(1.0, ge=0, description="Delay before the first retry.")
    backoff: float = Field(2.0, ge=1, description="Multiplier applied to the delay on each further retry (exponential backoff).")
    max_delay_seconds: float = Field(300.0, ge=0, description="Upper bound of any single retry delay.")
    jitter: float = Field(0.0, ge=0, le=1, description="Random jitter as a fraction of the delay (0 = none).")
    timeout_seconds: float | None = Field(None, gt=0, description="Fail an attempt that runs longer than this.")
    retry_on: list[str] = Field(
        default_factory=list,
        description="Retry only on these error kinds (exception class names such as `TimeoutError`, "
        "or `timeout`, `rate_limit`, `server_error`). Empty = retry on any error.",
    )


class Budget(IRModel):
    """Token and cost ceilings; a run or node that would exceed them is stopped."""

    max_tokens: int | None = Field(None, gt=0, description="Maximum total tokens (in + out).")
    max_cost_usd: float | None = Field(None, gt=0, description="Maximum cost in US dollars.")


class SupervisorPolicy(BaseModel):
    """``metadata.supervisor`` of a process, or of one of its nodes (node level wins, key by key):
    what a supervisor may do to a run and how much of it.

    Not a field type: the policy stays a plain mapping in the IR so that the ``authoring`` pass
    can refuse a wrong key or value with its place (``supervisor-policy``); this model is the one
    list of the keys, their types, ranges and defaults, which that pass checks against and
    :mod:`flows.runtime.supervision` reads the defaults from. Strict: ``3`` for a bound, never
    ``true`` or ``"3"``."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    allow_transition_override: bool = Field(
        False, description="`transition_to` and `retry_node` may name any node, not only a declared exit.")
    allow_skip: bool = Field(False, description="`skip_node` is taken at nodes that are not `skippable: true`.")
    model: str | None = Field(None, description="The supervisor's model or environment (process level).")
    max_node_retries: int = Field(
        3, ge=0, le=1000,
        description="How many times one run's supervisor may send it back into the same node with `retry_node`; "
        "on a node, the bound for retries of that node.")
    max_transitions: int = Field(
        20, ge=0, le=10_000,
        description="How many `transition_to` overrides one run's supervisor may give (process level).")
    max_commands: int = Field(
        100, ge=0, le=100_000,
        description="How many commands one run's supervisor may have applied, every kind counted "
        "(`continue_process` and `fail_process` aside; process level).")


#: The supervisor policy keys that bound a whole run: meaningless on a single node.
RUN_WIDE_SUPERVISOR_KEYS = ("max_transitions", "max_commands")


class RunLimits(BaseModel):
    """Bounds of one run of a process, in the process's ``metadata`` (checked like
    :class:`SupervisorPolicy`; read by :mod:`flows.runtime.engine`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    max_visits: int = Field(
        1000, ge=1, le=1_000_000,
        description="How many node visits one run of the process may make before it fails: a loop whose "
        "exit depends on a model's answer (or on anything else that may never come) ends there. Generous "
        "on purpose: a reviewer sending work back a few hundred times stays well within it.")


class NodeMetadata(BaseModel):
    """Presentation, which never changes behaviour, and the node's supervisor policy. Unknown keys
    are kept (authors' own notes)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    phase: str | None = Field(None, description="Stage of the work (intake, review, approval...).")
    lane: str | None = Field(None, description="Responsible actor or system (legal, ai_assistant...).")
    order: float | None = Field(None, description="Stable sort key inside the lane.")
    position: dict[str, float] | None = Field(None, description="Optional explicit board position {x, y}.")
    supervisor: dict[str, Any] | None = Field(
        None, description="Supervisor policy for this node (see `SupervisorPolicy`: allow_transition_override, "
        "allow_skip, max_node_retries).")


class Transition(IRModel):
    """An exit of a process node."""

    to: str = Field(description="Id of the target node.")
    trigger: Literal["auto", "agent", "user"] = Field(
        "auto",
        description="`auto`: the engine picks the first transition whose guard passes; `agent`: the "
        "agent picks among these via `_next_node`; `user`: a person picks.",
    )
    guard: JsonLogic | None = Field(None, description="JSON Logic rule over the context; the transition is taken only if it is true.")
    label: str | None = Field(None, description="Business name of this exit, shown on the graph edge.")


class ContextSpec(IRModel):
    """The typed state of a run."""

    schema_: JsonSchema = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        alias="schema",
        description="JSON Schema of the context. Every field a node writes must be a property here. "
        "`required` properties are the run's inputs.",
    )
    initial: dict[str, Any] = Field(default_factory=dict, description="Initial values merged under the run's inputs.")


# --------------------------------------------------------------------------------------------
# Node bodies


class NodeBase(IRModel):
    """Fields every node accepts."""

    title: str | None = Field(None, description="Short display name.")
    description: str | None = Field(None, description="Developer-facing notes.")
    human_description: str | None = Field(None, description="One or two plain-language sentences shown to people watching a run.")
    metadata: NodeMetadata | None = Field(None, description="Board layout (phase, lane, order); never changes behaviour.")
    writes: list[str] = Field(default_factory=list, description="Context fields this node may write. Anything else it tries to write is rejected.")
    transitions: list[Transition] = Field(default_factory=list, description="Process only: exits of this node, tried in order.")
    needs: list[str] = Field(default_factory=list, description="Pipeline only: nodes that must be done before this one starts.")
    when: JsonLogic | None = Field(None, description="Pipeline only: JSON Logic rule; when false the node and everything needing it is skipped.")
    retry: RetryPolicy | None = Field(None, description="Retry policy for a failing visit.")
    skippable: bool = Field(False, description="A supervisor may skip this node (`skip_node`).")
    assignee: str | None = Field(
        None, description="Process only: who picks among the node's `trigger: user` transitions (`group:<name>` or a "
        "user id; unset = the person who started the run).",
    )


class ToolConfig(IRModel):
    """Fixed configuration of a tool node."""

    context_update: dict[str, Any] | None = Field(None, description="A fixed update applied to the context (no tool is called).")


class ToolNode(NodeBase):
    """A deterministic step: a fixed `config.context_update`, or a registered tool called with `input`."""

    type: Literal["tool"] = Field(description="Node type `tool`.")
    tool: str | None = Field(None, description="Name of a registered tool to call.")
    config: ToolConfig | None = Field(None, description="Fixed configuration (`context_update`).")
    input: dict[str, Any] | None = Field(None, description="Arguments: a mapping of values and `{{ }}` templates rendered against the context.")
    output: str | None = Field(None, description="Write the tool's whole result into this context field (otherwise a dict result is merged per `writes`).")


class InteractionNode(NodeBase):
    """One LLM call through a named interaction; the result schema is derived from `writes`."""

    type: Literal["interaction"] = Field(description="Node type `interaction`.")
    interaction: str = Field(description="Name of an `interaction` definition (or a built-in `sys:*`).")
    input: dict[str, Any] | None = Field(None, description="Input of the interaction: a mapping of values and templates.")
    environment: str | None = Field(None, description="Environment to run on (overrides the interaction's).")
    model: str | None = Field(None, description="litellm model string (overrides the interaction's).")
    budget: Budget | None = Field(None, description="Token/cost ceiling for this node.")


class AgentNode(NodeBase):
    """A tool-using LLM worker that returns one JSON object matching the derived result schema."""

    type: Literal["agent"] = Field(description="Node type `agent`.")
    prompt: str | None = Field(None, description="Jinja2 prompt rendered against the context.")
    tools: list[str] = Field(
        default_factory=list,
        description="Tools the agent may call. Bare names replace the default set; `+name` adds, `-name` removes.",
    )
    interaction: str | None = Field(None, description="Override the default `sys:ProcessAgentNode` interaction.")
    input: dict[str, Any] | None = Field(None, description="Extra input for a custom interaction.")
    environment: str | None = Field(None, description="Environment to run on.")
    model: str | None = Field(None, description="litellm model string.")
    max_iterations: int = Field(20, ge=1, le=200, description="Maximum tool-loop iterations.")
    budget: Budget | None = Field(None, description="Token/cost ceiling for this node.")
    ask_user: str | None = Field(None, description="Assignee of tasks created by the `ask_user` tool (`group:<name>` or a user id).")


class ConditionBranch(IRModel):
    """One arm of a condition node."""

    to: str = Field(description="Id of the target node.")
    when: JsonLogic | None = Field(None, description="JSON Logic rule; the first passing arm wins.")
    default: bool = Field(False, description="The fallback arm taken when no `when` passes. Required on one arm.")
    label: str | None = Field(None, description="Business name of this exit.")


class ConditionNode(NodeBase):
    """Pure routing: the first branch whose `when` passes, else the `default: true` branch."""

    type: Literal["condition"] = Field(description="Node type `condition`.")
    branches: list[ConditionBranch] = Field(description="Arms, evaluated in order.")


#: The fields a fan-out result envelope can keep.
EnvelopeField = Literal[
    "status", "index", "item_id", "item", "output", "context_update", "error", "child_run_id",
    "child_workflow_id", "child_workflow_run_id", "branch_id", "branch_title",
]


def _default_envelope_fields() -> list[EnvelopeField]:
    return ["status", "index", "item_id", "output", "error"]


class CollectSpec(IRModel):
    """Envelope collection of fan-out results."""

    into: str = Field(description="Context field that receives the list of envelopes.")
    include: list[EnvelopeField] = Field(default_factory=_default_envelope_fields, description="Envelope fields to keep.")


#: How many items a foreach may run over, by its `task_runs`: a Prefect task run per item costs
#: Prefect a record and several events each, so one task run for the whole node goes further.
FOREACH_MAX_ITEMS: dict[str, int] = {"item": 10_000, "node": 100_000}
#: How many items of a foreach may be in flight at once (`max_concurrency`).
FOREACH_MAX_CONCURRENCY = 1000


class ForeachNode(NodeBase):
    """Runs a leaf body once per item of a context array, at most `max_concurrency` at a time."""

    type: Literal["foreach"] = Field(description="Node type `foreach`.")
    foreach: str = Field(description="Context path to an array (at most 10,000 items; 100,000 with `task_runs: node`).")
    as_: str = Field("item", alias="as", description="Name under which each item is visible to the child body.")
    item_id: str | None = Field(None, description="Template for a stable per-item id, e.g. `{{invoice.id}}`.")
    max_concurrency: int | None = Field(None, description="Cap on items in flight (1-1000). Unset = all at once.")
    node: "Node" = Field(description="The child body: `tool`, `interaction`, `agent` or `process`, without routing.")
    collect: str | CollectSpec | None = Field(None, description="Context field for the per-item outputs (string), or an envelope spec.")
    failure_policy: Literal["fail_fast", "collect_errors"] = Field("fail_fast", description="Stop at the first failed item, or keep going and collect errors.")
    task_runs: Literal["item", "node"] = Field(
        "item",
        description="`item`: each item is a Prefect task run of its own. `node`: the whole foreach is one Prefect "
        "task run and its items run inside it, each still recorded, checkpointed and retried by Ergon "
        "(for large fan-outs: no per-item task-run records or events in Prefect).",
    )


class BranchArm(IRModel):
    """One named branch of a branch node."""

    id: str = Field(description="Branch id, unique within the node.")
    title: str | None = Field(None, description="Display name.")
    node: "Node" = Field(description="The branch body: `tool`, `interaction`, `agent` or `process`, without routing.")


class BranchNode(NodeBase):
    """Fixed named branches, all run in parallel, joined, results collected."""

    type: Literal["branch"] = Field(description="Node type `branch`.")
    join: Literal["all"] = Field("all", description="Join policy: wait for all branches.")
    branches: list[BranchArm] = Field(description="The branches.")
    collect: str | CollectSpec | None = Field(None, description="Context field for the per-branch results, or an envelope spec.")
    failure_policy: Literal["fail_fast", "collect_errors"] = Field("fail_fast", description="Fail the node when a branch fails, or collect errors.")


class Returns(IRModel):
    """What a sub-process hands back."""

    from_: str | None = Field(None, alias="from", description="Path in the child's final state, e.g. `context.decision`.")
    context: list[str] | None = Field(None, description="Child context fields to return (when one path is not enough).")


class ProcessNode(NodeBase):
    """Runs another definition as a subflow and waits for it."""

    type: Literal["process"] = Field(description="Node type `process`.")
    process: str | None = Field(None, description="Name of the child definition.")
    process_version: int | None = Field(None, ge=1, description="Published version to pin (default: latest).")
    process_definition: "ProcessDef | None" = Field(None, description="An inline child definition.")
    run_type: Literal["programmatic", "supervised"] = Field("programmatic", description="Child run type.")
    input: dict[str, Any] | None = Field(None, description="Templates merged over the child's initial context.")
    returns: Returns | None = Field(None, description="What to take from the finished child.")


class TaskField(IRModel):
    """A field of a human task's answer form."""

    name: str = Field(description="Field name; copied into the context field of the same name if listed in `writes`.")
    type: Literal["select", "text", "string", "boolean", "number", "integer"] = Field(description="Input type.")
    required: bool = Field(False, description="An answer without it is refused.")
    options: list[str | int | float | bool] | None = Field(None, description="Allowed values of a `select`.")
    label: str | None = Field(None, description="Label shown to the approver.")
    description: str | None = Field(None, description="Help text.")
    default: Any = Field(None, description="Pre-filled value.")


class TaskSpec(IRModel):
    """What the approver sees."""

    title: str = Field(description="Title; `{{ }}` placeholders are rendered from the context at creation and stored rendered.")
    description: str | None = Field(None, description="Body (markdown); rendered like the title.")
    assignee: str | None = Field(None, description="`group:<name>` or a user id; unset = anyone.")
    fields: list[TaskField] = Field(default_factory=list, description="The answer form.")
    four_eyes: bool = Field(False, description="The person who started the run may not answer.")


class HumanTaskNode(NodeBase):
    """Pauses the run until a person answers; the answer is copied into the context per `writes`."""

    type: Literal["human_task"] = Field(description="Node type `human_task`.")
    task: TaskSpec = Field(description="The task to create.")
    timeout: str | float | None = Field(None, description="Expire after this long (seconds, or `30m`, `2h`, `3d`).")
    on_timeout: str | None = Field(None, description="Node to go to when the task expires (otherwise the run fails).")


class FinalNode(NodeBase):
    """Terminal node; its id is the run's outcome."""

    type: Literal["final"] = Field(description="Node type `final`.")


Node = Annotated[
    Union[ToolNode, InteractionNode, AgentNode, ConditionNode, ForeachNode, BranchNode, ProcessNode, HumanTaskNode, FinalNode],
    Field(discriminator="type"),
]
NODE_TYPES: tuple[str, ...] = (
    "tool", "interaction", "agent", "condition", "foreach", "branch", "process", "human_task", "final",
)
#: Bodies allowed inside foreach/branch (authoring rule 11).
LEAF_TYPES: frozenset[str] = frozenset({"tool", "interaction", "agent", "process"})


# --------------------------------------------------------------------------------------------
# Triggers (started by schedules, webhooks, or other runs)


class TriggerBase(IRModel):
    """Fields every trigger accepts."""

    input: dict[str, Any] = Field(default_factory=dict, description="Input parameters the run starts with.")
    as_user: str | None = Field(None, description="Identity the run acts for (who created the trigger).")
    retry: RetryPolicy | None = Field(None, description="Retry a failed triggered run (backoff); the schedule stays enabled.")
    enabled: bool = Field(True, description="Start disabled with `false`.")


class CronTrigger(TriggerBase):
    """Start on a cron schedule."""

    type: Literal["cron"] = Field(description="A cron schedule.")
    cron: str = Field(description="5-field cron expression.")
    timezone: str = Field("UTC", description="IANA time zone.")


class IntervalTrigger(TriggerBase):
    """Start at a fixed interval."""

    type: Literal["interval"] = Field(description="A fixed interval.")
    every: float | str = Field(description="Seconds, or `30s`, `5m`, `1h`.")


class WebhookTrigger(TriggerBase):
    """Start on an HMAC-signed HTTP request."""

    type: Literal["webhook"] = Field(description="A signed webhook.")
    path: str = Field(description="URL path under the webhook server, e.g. `/hooks/invoice`.")
    secret: str = Field(description="Name of the Ergon secret holding the HMAC-SHA256 key.")


class OnCompleteTrigger(TriggerBase):
    """Start when another definition's run completes."""

    type: Literal["on_complete"] = Field(description="Chained after another definition.")
    definition: str = Field(description="Start when this definition completes.")
    outcomes: list[str] | None = Field(None, description="Only for these outcomes (final node ids).")
    map: dict[str, str] = Field(default_factory=dict, description="Input field ← template over the finished run's context.")


class SubmissionTriggerBase(TriggerBase):
    """Fields of the submission triggers: which form, which submissions, which inputs."""

    form: str = Field(description="Start for submissions of this form.")
    filter: JsonLogic | None = Field(
        None, description='JSON Logic over the submission\'s data (`{"var": "group.field"}`); only when it holds.')
    map: dict[str, str] = Field(
        default_factory=dict,
        description="Process/pipeline only: input field ← template over `submission` (its data), `submission_id` and `form`.")


class OnSubmissionCreatedTrigger(SubmissionTriggerBase):
    """Start when a submission of a form is created (a template reads it as its input)."""

    type: Literal["on_submission_created"] = Field(description="After a submission of `form` is created.")


class OnSubmissionUpdatedTrigger(SubmissionTriggerBase):
    """Start when a submission of a form is changed (once per change, however many values it sets)."""

    type: Literal["on_submission_updated"] = Field(description="After a submission of `form` is updated.")


Trigger = Annotated[Union[CronTrigger, IntervalTrigger, WebhookTrigger, OnCompleteTrigger, OnSubmissionCreatedTrigger,
                          OnSubmissionUpdatedTrigger], Field(discriminator="type")]
#: The kinds of the submission triggers.
SUBMISSION_TRIGGER_KINDS = ("on_submission_created", "on_submission_updated")


# --------------------------------------------------------------------------------------------
# Definition kinds


class ProcessDef(IRModel):
    """A state machine (the Vertesia process document, `format_version: 1`)."""

    kind: Literal["process"] = Field("process", description="Optional for processes.")
    format_version: int = Field(description="Must be 1.")
    process: str = Field(description="The process name (unique in `definitions/`).")
    description: str | None = Field(None, description="What the process does.")
    initial: str = Field(description="Id of the first node.")
    context: ContextSpec = Field(default_factory=ContextSpec, description="Typed state.")
    nodes: dict[str, Node] = Field(description="Nodes by id.")
    metadata: dict[str, Any] | None = Field(
        None, description="Presentation, the supervisor policy (`supervisor`, see `SupervisorPolicy`) and the "
        "run's bounds (`max_visits`, see `RunLimits`).")
    run_type: Literal["programmatic", "supervised"] = Field(
        "programmatic", description="`supervised`: an LLM supervisor watches every run (`ergon run --supervised` asks it for one run).")
    triggers: list[Trigger] = Field(default_factory=list, description="Schedules, webhooks and on-complete triggers.")
    budget: Budget | None = Field(None, description="Token/cost ceiling for the whole run.")
    environment: str | None = Field(None, description="Default environment of LLM nodes.")
    status: str | None = Field(None, description="Server-owned in Vertesia; accepted and ignored.")
    version: int | None = Field(None, description="Server-owned in Vertesia; accepted and ignored.")

    @property
    def name(self) -> str:
        return self.process


class PipelineDef(IRModel):
    """A DAG: nodes run as soon as their `needs` are done; independent nodes run in parallel."""

    kind: Literal["pipeline"] = Field(description="Definition kind `pipeline`.")
    name: str = Field(description="Pipeline name (unique in `definitions/`).")
    description: str | None = Field(None, description="What the pipeline does.")
    context: ContextSpec = Field(default_factory=ContextSpec, description="Typed state.")
    nodes: dict[str, Node] = Field(description="Nodes by id; order them with `needs`.")
    metadata: dict[str, Any] | None = Field(None, description="Presentation.")
    triggers: list[Trigger] = Field(default_factory=list, description="Schedules, webhooks and on-complete triggers.")
    budget: Budget | None = Field(None, description="Token/cost ceiling for the whole run.")
    environment: str | None = Field(None, description="Default environment of LLM nodes.")


class PromptSegment(IRModel):
    """One ordered segment of an interaction's prompt."""

    role: Literal["safety", "system", "user", "assistant"] = Field(description="Segment role; safety segments render first.")
    template: str = Field(description="The segment's template, in its `content_type` (Jinja2: `{{var}}`, `{% if %}`, "
                          "`{% for %}`; Handlebars: `{{var}}`, `{{#if}}`, `{{#each}}`; JST: a JavaScript template literal).")
    content_type: Literal["jinja", "handlebars", "jst"] = Field(
        "jinja", description="Template language: `jinja` (Jinja2, the default), `handlebars` (handlebars.js) or `jst` "
        "(JavaScript whose last expression is the prompt; fields are variables, `_` has the helpers).")
    name: str | None = Field(None, description="Optional segment name.")


class ModelParameters(BaseModel):
    """Model call parameters passed through to litellm (unknown keys are passed as they are)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature (0 = most deterministic).")
    max_tokens: int | None = Field(None, gt=0, description="Upper bound on the tokens of the answer.")
    top_p: float | None = Field(None, ge=0, le=1, description="Nucleus sampling: keep the most likely tokens up to this mass.")
    timeout: float | None = Field(None, gt=0, description="Seconds one attempt of a call may take (default 120).")
    deadline: float | None = Field(None, gt=0, description="Seconds all attempts of one call may take together, retries and backoff included (default 180, `ERGON_LLM_DEADLINE_SECONDS`).")


class InteractionDef(IRModel):
    """One LLM call: ordered prompt segments, input schema, result schema, model."""

    kind: Literal["interaction"] = Field(description="Definition kind `interaction`.")
    name: str = Field(description="Interaction name.")
    description: str | None = Field(None, description="What it does.")
    prompts: list[PromptSegment] = Field(description="Ordered prompt segments.")
    input_schema: JsonSchema | None = Field(None, description="JSON Schema of the input; validated before any call.")
    result_schema: JsonSchema | None = Field(None, description="JSON Schema of the structured result.")
    environment: str | None = Field(None, description="Environment name.")
    model: str | None = Field(None, description="litellm model string.")
    parameters: ModelParameters | None = Field(None, description="Model parameters.")
    repair_turns: int = Field(1, ge=0, le=5, description="Repair turns on invalid structured output.")
    test_data: dict[str, Any] | list[dict[str, Any]] | None = Field(None, description="Sample input(s) for the playground.")


class TemplateStep(IRModel):
    """One step of a multi-step agent template."""

    key: str = Field(description="Step key, unique in the template.")
    name: str | None = Field(None, description="Display name.")
    description: str | None = Field(None, description="What the step does.")
    parent: str | None = Field(None, description="Key of the step whose output this one reads (none = the template input).")
    prompt: str | None = Field(None, description="Jinja2 prompt of an LLM step; sees the template input and the parent's output.")
    mapping: dict[str, str] | None = Field(
        None, description="A step without a model: output `group.field` (or a repeating `group`) ← a Jinja2 "
        "expression over the input (`{{ input.customer.name | trim }}`); each value records a copy, map or "
        "formula transformation with its expression. Give `prompt` or `mapping`, not both.")
    output_key: str = Field(description="Context field receiving this step's output.")
    output_form: str = Field(description="Form defining the output's shape.")
    tools_allowed: list[str] = Field(default_factory=list, description="Tools the step may use (empty = all tools an agent may be given: plans, artifacts, documents, http_request, workstreams, log and the project's own tools).")
    retry_policy: RetryPolicy | None = Field(None, description="Retry policy.")
    model: str | None = Field(None, description="litellm model string.")
    environment: str | None = Field(None, description="Environment name.")


class TemplateDef(IRModel):
    """A multi-step agent template over forms; lowered to a pipeline."""

    kind: Literal["template"] = Field(description="Definition kind `template`.")
    name: str = Field(description="Template name.")
    description: str | None = Field(None, description="What it does.")
    input_form: str = Field(description="Form defining the template's input.")
    steps: list[TemplateStep] = Field(description="Steps; `parent` links form the dependency chain.")
    output_type: Literal["artifact", "submission_update", "report"] = Field("artifact", description="What the run produces.")
    triggers: list[Trigger] = Field(default_factory=list, description="Triggers.")


class WorkflowStep(IRModel):
    """One step of the Vertesia workflow DSL."""

    type: Literal["activity", "workflow"] = Field("activity", description="An activity (registered tool) or a child workflow.")
    name: str = Field(description="Activity name, or the child workflow's name.")
    id: str | None = Field(None, description="Step id (default: the name, suffixed when repeated).")
    title: str | None = Field(None, description="Display name.")
    params: dict[str, Any] = Field(default_factory=dict, description="Parameters; `${var}` references are resolved.")
    condition: dict[str, Any] | None = Field(None, description="`{path: {$eq: value}}` or `{$eq: {path: value}}`; the step is skipped when false.")
    output: str | None = Field(None, description="Variable receiving the step's result.")
    import_: list[str] = Field(default_factory=list, alias="import", description="Workflow vars made visible to the step.")
    fetch: dict[str, Any] | None = Field(None, description="Data to fetch before the step (type, source, query, select, limit, on_not_found).")
    projection: dict[str, list[str]] | None = Field(None, description="`$include` / `$exclude` field lists applied to the result.")
    async_: bool = Field(False, alias="async", description="Child workflow: do not wait for it before the next step.")


class WorkflowDef(IRModel):
    """The Vertesia workflow DSL; lowered to a pipeline."""

    kind: Literal["workflow"] = Field("workflow", description="Definition kind `workflow` (optional: a document with `steps` and no `input_form` is a workflow).")
    name: str = Field(description="Workflow name (default: the file's name without its extension).")
    description: str | None = Field(None, description="What it does.")
    vars: dict[str, Any] = Field(default_factory=dict, description="Variables (literal values; `${}` references allowed).")
    input_schema: JsonSchema | None = Field(None, description="JSON Schema of the run's input variables.")
    steps: list[WorkflowStep] = Field(description="Steps, in order.")
    triggers: list[Trigger] = Field(default_factory=list, description="Triggers.")


class FormField(IRModel):
    """A typed form field."""

    name: str = Field(description="Field name.")
    type: Literal["string", "text", "number", "integer", "boolean", "date", "select", "document"] = Field(description="Field type.")
    label: str | None = Field(None, description="Label.")
    description: str | None = Field(None, description="Help text.")
    required: bool = Field(False, description="Required field.")
    options: list[str] | None = Field(None, description="Choices of a `select`.")


class FormGroup(IRModel):
    """A group of fields; a repeating group holds a list of entries."""

    name: str = Field(description="Group name.")
    label: str | None = Field(None, description="Label.")
    repeat: bool = Field(False, description="The group may occur several times (a list).")
    required: bool = Field(False, description="The group must be present.")
    fields: list[FormField] = Field(description="Fields.")


class FormDef(IRModel):
    """Groups of typed fields; compiles to a JSON Schema."""

    kind: Literal["form"] = Field(description="Definition kind `form`.")
    name: str = Field(description="Form name.")
    description: str | None = Field(None, description="What it captures.")
    groups: list[FormGroup] = Field(description="Field groups.")


class ModelEntry(IRModel):
    """One model of an environment."""

    model: str = Field(description="litellm model string, e.g. `openai/gpt-4o-mini`.")
    name: str | None = Field(None, description="Alias of this entry (default: the model string).")
    api_base: str | None = Field(None, description="Endpoint URL (OpenAI-compatible servers).")
    api_key: str | None = Field(None, description="`secret:NAME` (an Ergon secret), `env:VAR`, `prefect-secret:NAME` "
                                "(a Prefect Secret block) or `prefect-var:NAME` (a Prefect Variable); never a literal key.")
    parameters: ModelParameters | None = Field(None, description="Default parameters.")
    input_cost_per_token: float | None = Field(None, ge=0, description="Price for models litellm does not price.")
    output_cost_per_token: float | None = Field(None, ge=0, description="Price for models litellm does not price.")
    weight: float = Field(1.0, gt=0, description="Share of traffic under load balancing.")
    rpm: int | None = Field(None, gt=0, description="Requests-per-minute limit.")


class EnvironmentDef(IRModel):
    """Named model configurations with failover and load balancing."""

    kind: Literal["environment"] = Field(description="Definition kind `environment`.")
    name: str = Field(description="Environment name.")
    description: str | None = Field(None, description="What it is for.")
    models: list[ModelEntry] = Field(min_length=1, description="Models, in failover order.")
    strategy: Literal["failover", "load_balance"] = Field("failover", description="Try in order, or spread load by weight.")
    retries: int = Field(2, ge=0, le=10, description="Retries of 429/5xx on one model before the next.")
    timeout_seconds: float = Field(120, gt=0, description="Per-call timeout.")


Definition = Union[ProcessDef, PipelineDef, InteractionDef, TemplateDef, WorkflowDef, FormDef, EnvironmentDef]

#: kind name → model class; `process` documents may omit `kind`.
KINDS: dict[str, type[IRModel]] = {
    "process": ProcessDef,
    "pipeline": PipelineDef,
    "interaction": InteractionDef,
    "template": TemplateDef,
    "workflow": WorkflowDef,
    "form": FormDef,
    "environment": EnvironmentDef,
}

for _model in (ForeachNode, BranchArm, BranchNode, ProcessNode, ProcessDef, PipelineDef):
    _model.model_rebuild()


def definition_name(defn: IRModel) -> str:
    """The name under which a definition is referenced."""
    return defn.process if isinstance(defn, ProcessDef) else defn.name  # type: ignore[attr-defined]


def kind_of(defn: IRModel) -> str:
    return defn.kind  # type: ignore[attr-defined]

"""The names the sessions room writes into its rows: the anomaly codes it records itself, the system
actors of the moves nobody's request made, and how many of a session's latest anomalies and overruled
decisions its feedback hints count."""

SYSTEM_TIMEOUT = "system:timeout-sweep"
SYSTEM_MODEL_FAILURE = "system:model-failure-policy"
MODEL_FAILURE = "model_failure"
ILLEGAL_TRANSITION = "illegal_transition"
ACTION_NOT_ALLOWED = "action_not_allowed"
EVENT_NOT_ALLOWED = "event_not_allowed"
# A guard refused a move the caller marked as the model's proposal (``proposed_by: model``).
GUARD_FAILED = "guard_failed"
# Who proposed a move: the model (its mistakes are anomalies) or the runtime's own code (the default).
PROPOSED_BY_MODEL = "model"
PROPOSED_BY = ("runtime", PROPOSED_BY_MODEL)
DECISION_MOVE_NOT_ALLOWED = "decision_move_not_allowed"
FEEDBACK_LIMIT = 50  # the latest anomalies and overruled decisions of a session that its hints count
# A decision of a rule or of the default that the machine could not follow: the configuration's doing,
# recorded but never counted toward the model-failure policy (nor shown in the model's hints).
RULE_MOVE_NOT_ALLOWED = "rule_move_not_allowed"
# A field value the machine's declaration refused (agents.sessions.field_updates): counted, as seed 003
# §3.3 counts every value the protocol layer refuses toward the model's retries.
FIELD_INVALID = "field_invalid"
# What /metrics counts as an illegal move by state (arbiter_session_illegal_moves): every refusal of a
# move, event or action the session's machine forbids where it stood, and a decision's mapped move it could
# not follow (whoever decided it). Not guards, fields or handoffs: those are the flow working as configured.
ILLEGAL_MOVE_CODES = frozenset(
    {ILLEGAL_TRANSITION, EVENT_NOT_ALLOWED, ACTION_NOT_ALLOWED, DECISION_MOVE_NOT_ALLOWED, RULE_MOVE_NOT_ALLOWED}
)

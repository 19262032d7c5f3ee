"""The names the tools room writes into its rows: the anomaly codes it records and the system actor of
the moves a tool call that gave up makes."""

TOOL_NOT_ALLOWED = "tool_not_allowed"  # a tool outside the state's actions whitelist (the model's mistake)
INVALID_TOOL_INPUT = "invalid_tool_input"  # an input (or an action's params) its contract's schema refuses
UNDECLARED_TOOL_ERROR = "undeclared_tool_error"  # a result with an error code the contract does not declare
# A give-up whose on_exhausted move (an event or a state) could not be made: the session is handed off.
TOOL_GIVE_UP_MOVE_REFUSED = "tool_give_up_move_refused"
SYSTEM_TOOL_GAVE_UP = "system:tool-gave-up"

"""Every model of the agents app, for Django (which loads ``agents.models``): each lives in its room."""

from agents.queue.models import QueueEvent, QueueEventKind
from agents.runtimes.models import AgentRuntime
from agents.sessions.models import Anomaly, Session, Transition, TransitionKind
from agents.tools.models import BreakerChange, ToolAttempt, ToolBreaker, ToolCall, ToolCallStatus
from agents.traces.models import TraceEvent
from agents.webhooks.models import WebhookDelivery, WebhookSubscription

__all__ = [
    "AgentRuntime",
    "Anomaly",
    "BreakerChange",
    "QueueEvent",
    "QueueEventKind",
    "Session",
    "ToolAttempt",
    "ToolBreaker",
    "ToolCall",
    "ToolCallStatus",
    "TraceEvent",
    "Transition",
    "TransitionKind",
    "WebhookDelivery",
    "WebhookSubscription",
]

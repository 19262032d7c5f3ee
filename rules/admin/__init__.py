"""Django admin for configuration records. Each module registers its models; shared plumbing is in ``base``."""

from rules.admin import change_requests, decisions, keywords, machines, points, revisions, thresholds

__all__ = ["change_requests", "decisions", "keywords", "machines", "points", "revisions", "thresholds"]

"""Django admin for configuration records. Each module registers its models; shared plumbing is in ``base``."""

from rules.admin import decisions, keywords, machines, points, revisions, thresholds

__all__ = ["decisions", "keywords", "machines", "points", "revisions", "thresholds"]

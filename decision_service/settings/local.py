"""Developer machine: debug on, embedded defaults (SQLite, eager Celery) unless env says otherwise."""

from decision_service import env
from decision_service.settings.base import *  # noqa: F403

DEBUG = env.DEBUG or True

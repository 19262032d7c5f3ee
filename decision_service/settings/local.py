"""Developer machine: debug on, embedded defaults (SQLite, eager Celery) unless env says otherwise."""

from decision_service import env
from decision_service.settings.base import *  # noqa: F403

SECRET_KEY = env.local_secret_key()
DEBUG = True if env.DEBUG is None else env.DEBUG

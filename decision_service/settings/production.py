"""Production: refuses to start without an explicit SECRET_KEY."""

from django.core.exceptions import ImproperlyConfigured

from decision_service import env
from decision_service.settings.base import *  # noqa: F403

if not env.SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set in the environment for production settings")

SECRET_KEY = env.SECRET_KEY
DEBUG = False
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True

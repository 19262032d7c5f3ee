from decision_service.formats.common import (  # noqa: F401 - read by Django's get_format
    DATE_FORMAT,
    DATETIME_FORMAT,
    SHORT_DATE_FORMAT,
    SHORT_DATETIME_FORMAT,
    TIME_FORMAT,
)

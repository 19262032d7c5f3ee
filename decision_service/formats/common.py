"""The formats every language shares (Django's ``date`` format characters)."""

DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATETIME_FORMAT = DATETIME_FORMAT
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = DATE_FORMAT
TIME_FORMAT = "H:i:s"

"""Where e-mails go when no SMTP server is configured (``EMAIL_HOST`` unset): to the log, one line each.

Django's console backend would write every message whole — MIME headers, body — to stdout, in front
of a management command's own output (``import_config``, ``decision_map --snapshot``) and mixed into
the server's. Here each message is one INFO record on ``arbiter.mail`` ("e-mail to …: subject"), with
the body at DEBUG for whoever asks for it (``LOG_LEVEL=DEBUG``). Configure ``EMAIL_HOST`` to send them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.core.mail.backends.base import BaseEmailBackend
from django.core.mail.message import EmailMessage

logger = logging.getLogger("arbiter.mail")


class LogEmailBackend(BaseEmailBackend):
    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        sent = 0
        for message in email_messages:
            recipients = message.recipients()
            if not recipients:
                continue
            logger.info("e-mail to %s: %s", ", ".join(recipients), message.subject)
            logger.debug("e-mail body to %s:\n%s", ", ".join(recipients), message.body)
            sent += 1
        return sent

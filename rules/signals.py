"""What the configuration tells the apps built on it, and asks them. ``rules`` imports no app above it:
those apps connect receivers in their ``AppConfig.ready()`` (with a ``dispatch_uid``), as Django's
contrib apps do.

Every signal is sent inside the configuration change that causes it, so whatever a receiver writes
joins that change's transaction (and its revision), and a receiver's refusal rolls the change back.
"""

from __future__ import annotations

from django.dispatch import Signal

# A decision point is about to be deleted (kwargs: point, actor, reason). Receivers drop what refers to it.
point_deleting = Signal()

# Which records outside the configuration would lose something if these points went (kwargs: keys).
# Receivers answer {point key: a sentence for people}, shown by import_config's diff.
point_removal_notes = Signal()

# A saved state machine is being checked (kwargs: machine, the unsaved instance). Receivers answer
# {field: message} for what the change would break (e.g. sessions left in a state it drops).
machine_checking = Signal()

# A state machine is about to be deleted (kwargs: machine). Receivers answer a sentence saying why it
# cannot go, or None.
machine_deleting = Signal()

# The decision log's retention sweep is running (kwargs: cutoff, batch_size). Receivers purge their own
# records of what happened before ``cutoff`` and answer how many rows they deleted.
decision_log_purging = Signal()

# A logged decision is shown in the admin's why panel (kwargs: record). Receivers answer extra context
# for the panel, e.g. {"anomalies": [...]} for the anomalies the decision raised.
decision_shown = Signal()

# The decision-point map is counting a window (kwargs: start, end — both inclusive — and points: the keys
# it reports on, or None for all). Receivers answer {point key: {anomaly code: count}} for what they
# record about points in that window (the agents app: model anomalies).
report_counting = Signal()

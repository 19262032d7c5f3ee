"""The words of a decision's reason, prepared when a point is compiled.

A reason names what held in the winning rule ("high_risk_keyword: keyword 投诉 (list high_risk)").
Each kind of condition formats everything in it that comes from the configuration once
(``ConditionSpec.explainer``); a request only fills in its own values (the keyword that hit, the
fact's value, the candidate).
"""

from __future__ import annotations

from rules.engine.conditions.base import ConditionSpec
from rules.engine.conditions.base import Explainer as Explainer
from rules.engine.conditions.base import Facts as Facts
from rules.engine.conditions.base import Hits as Hits


def explainer(c: ConditionSpec) -> Explainer:
    return c.explainer()

"""A keyword hit that the sentence itself negates: 我不打算起诉, 不用报警, 不会投诉你的, 没有要起诉的意思.

Seed 001 §4.2: a weak signal is the model's to weigh, and a strong trigger must not fire on a sentence that
says the customer is *not* doing the thing. ``unless`` phrases list such sentences one by one; a condition with
``unless_negated`` reads the negation itself, for every keyword of its list:

* a negator (不, 没, 没有, 无需, 无须, 无意, 并非, 绝非) directly before the hit, with at most a short run of
  auxiliary verbs between them (是, 要, 想, 会, 打算, 需要, 准备, 去, 打, 找, …) and nothing else: no punctuation,
  no pronoun, no other word (不，我要投诉 and 我不是开玩笑，我要投诉 are hits; 不是要退款，是要投诉 too);
* unless the negation is itself negated or a question: a second negator before it (不是不想投诉, 不得不投诉,
  不能不报警), a question in the A-not-A form (是不是要投诉, 要不要报警), a negator later in the same clause
  (不投诉不行了, 不报警他们不会管), a question or a dare about it (难道我不会投诉吗, 别以为我不敢投诉, 看我不投诉你;
  敢, 能 and 让 are never auxiliaries here, so 不敢投诉, 不能投诉 and 不让我投诉 are hits anyway), or a clause
  ending in 吗 or a question mark.

Read on the text before gaps were dropped (the hit mapped back to it): 不，要投诉 is "no, I want to complain"
even where a list joins 不要投诉 across the comma. Every doubt leaves the hit counted: a false alarm costs a
person's look, a missed threat the product's first promise.
"""

from __future__ import annotations

import re

# Longest first, so 没有 is read before 没 and 无需 before any shorter reading.
NEGATORS = ("从来没有", "并没有", "从来没", "从来不", "从没有", "从没", "从不", "并没", "并不", "绝不", "决不",
            "并非", "绝非", "没有", "无需", "无须", "无意", "没", "不")  # fmt: skip
# Verbs and auxiliaries that may stand between the negator and the keyword. Never 敢 (dare), 能 or 可以
# (can), 让 (let), 得 or 被: 不敢投诉 / 不能投诉 / 不让我投诉 are said of a complaint someone means to make.
AUXILIARIES = ("打算", "需要", "准备", "想要", "愿意", "必要", "意思", "是", "要", "想", "会", "需", "用", "必",
               "去", "打", "拨", "找", "有", "再", "向", "跟", "给")  # fmt: skip
# A clause ends at punctuation (the input is NFKC-folded: ， is ,) or a line break.
_CLAUSE_END = re.compile(r"[,.!?;:、。！？；：\n\"'“”‘’()\[\]【】「」《》~…]")
# Earlier in the clause, these make the negation a question or a dare: 难道我不会投诉吗, 看我不投诉你.
_QUESTION = ("以为", "难道", "凭什么", "为什么", "为啥", "怎么", "谁说", "何必", "看我")
# What may stand right before a first negator and make it a double one (不得不, 不能不, 不是不想, 非…不可).
_DOUBLING = ("不得", "不能", "不可", "不会", "不是", "没法", "不")
_LOOKBACK = 12


# What stands before the hit in its clause: anything, then a negator, then auxiliaries only, up to the hit. The
# text matched is at most ``_LOOKBACK`` characters, so one anchored match costs about a microsecond (a loop of
# ``endswith`` over both lists measured ~25 µs a hit).
_NEGATED = re.compile(f"(?P<ahead>.*?)(?P<negator>{'|'.join(NEGATORS)})(?P<auxiliaries>(?:{'|'.join(AUXILIARIES)})*)")
_DOUBLED = re.compile(f"(?:{'|'.join(NEGATORS)})(?:{'|'.join(AUXILIARIES)})*$")


def negated(text: str, start: int, end: int) -> bool:
    """Whether the hit ``text[start:end]`` is negated by its own clause (see the module's docstring)."""
    clause_start = start
    floor = max(0, start - _LOOKBACK)
    while clause_start > floor and not _CLAUSE_END.match(text, clause_start - 1):
        clause_start -= 1
    before = text[clause_start:start]
    found = _NEGATED.fullmatch(before) if before else None
    if found is None:
        return False
    ahead, auxiliaries = found.group("ahead"), found.group("auxiliaries")
    if auxiliaries and ahead.endswith(auxiliaries[0]):
        return False  # 是不是要投诉, 要不要报警, 有没有投诉: a question (A-not-A), not a negation
    # A second negator just before (不得不, 不是不想; 不得从来没有 with an adverb between): a double negation.
    if ahead.endswith(_DOUBLING) or _DOUBLED.search(ahead) or "不" in ahead[-3:] or "没" in ahead[-3:]:
        return False
    clause = _CLAUSE_END.search(text, end)
    after = text[end : clause.start() if clause else len(text)]
    if any(n in after for n in ("不", "没", "才怪", "吗")):
        return False
    if clause and clause.group() in "?？":
        return False
    # A question about it earlier in the clause, even beyond the look-back window's start (up to 40 characters).
    sentence_start = clause_start
    while sentence_start > max(0, start - 40) and not _CLAUSE_END.match(text, sentence_start - 1):
        sentence_start -= 1
    clause_before = text[sentence_start:start]
    return not any(q in clause_before for q in _QUESTION)

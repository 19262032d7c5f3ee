"""Personal data masking, table-driven: what each built-in catches, and what a point's own settings do.

One row per way people write a number or an address in a support chat. Each row says the masked text
expected, so a pattern that loses its separators, its country codes or its boundaries fails here.
Facts are masked with the same patterns: tests/rules/engine/test_fact_masking.py.
"""

from __future__ import annotations

import pytest

from rules.engine.masking import BUILTIN_PATTERNS, Masker

DEFAULT = Masker()

MASKED = [
    # Mainland mobile numbers: plain, spaced and dashed in the 3-4-4 groups people type.
    ("call 13800138000 now", "call [phone] now", {"phone": 1}),
    ("call 138 0013 8000 now", "call [phone] now", {"phone": 1}),
    ("call 138-0013-8000 now", "call [phone] now", {"phone": 1}),
    ("call 138 0013-8000", "call [phone]", {"phone": 1}),
    # With the country code: +86 and 0086, joined or separated.
    ("+8613800138000", "[phone]", {"phone": 1}),
    ("+86 138 0013 8000", "[phone]", {"phone": 1}),
    ("+86-138-0013-8000", "[phone]", {"phone": 1}),
    ("008613800138000", "[phone]", {"phone": 1}),
    ("0086 13800138000", "[phone]", {"phone": 1}),
    # Full-width digits are read in their NFKC form (and stored that way).
    ("手机１３８００１３８０００", "手机[phone]", {"phone": 1}),
    # International numbers written with a leading +.
    ("ring +1 555 123 4567", "ring [phone]", {"phone": 1}),
    ("ring +44-20-7946-0958", "ring [phone]", {"phone": 1}),
    ("ring +4915123456789", "ring [phone]", {"phone": 1}),
    # 18-digit resident ID card numbers, with a digit or X as the check character.
    ("身份证 11010119900307123X", "身份证 [id_card]", {"id_card": 1}),
    ("id 110101199003071234.", "id [id_card].", {"id_card": 1}),
    ("id 11010119900307123x", "id [id_card]", {"id_card": 1}),
    # E-mail addresses, with dots, plus tags and subdomains.
    ("mail a.b@example.com please", "mail [email] please", {"email": 1}),
    ("first.last+tag@mail.example.co.uk", "[email]", {"email": 1}),
    # Several at once, counted by kind.
    ("13800138000 or 13900139000, a@b.cn", "[phone] or [phone], [email]", {"phone": 2, "email": 1}),
]

KEPT = [
    "order 20260101",  # eight digits: an order number, not a phone number
    "1380013800",  # ten digits: one short of a mobile number
    "12345678901",  # eleven digits, but no mobile prefix (1[3-9])
    "138001380001",  # twelve digits: a longer number that merely contains a mobile number
    "price 1,380.00",
    "a@b",  # no domain
    "不含个人信息的普通消息",
    "",
]


@pytest.mark.parametrize(("text", "masked", "counts"), MASKED, ids=[row[0] for row in MASKED])
def test_the_built_in_masks_catch_what_people_write(text, masked, counts):
    result = DEFAULT.mask(text)
    assert (result.text, result.counts) == (masked, counts)


@pytest.mark.parametrize("text", KEPT)
def test_text_without_personal_data_is_kept_exactly_as_written(text):
    result = DEFAULT.mask(text)
    assert (result.text, result.counts) == (text, {})


def test_unmasked_text_is_not_normalised():
    # Only text that was masked is stored in its NFKC form; the rest is exactly what the user wrote.
    assert DEFAULT.mask("ＡＢＣ　退款").text == "ＡＢＣ　退款"


@pytest.mark.parametrize("kind", sorted(BUILTIN_PATTERNS))
def test_a_point_may_skip_each_built_in(kind):
    sample = {"phone": "138 0013 8000", "email": "a.b@example.com", "id_card": "11010119900307123X"}[kind]
    assert DEFAULT.mask(sample).counts == {kind: 1}
    skipped = Masker(skip=[kind]).mask(sample)
    assert (skipped.text, skipped.counts) == (sample, {})
    # Skipping one leaves the others on.
    others = [k for k in BUILTIN_PATTERNS if k != kind]
    assert set(Masker(skip=[kind]).mask("138 0013 8000 a.b@example.com 11010119900307123X").counts) == set(others)


def test_a_point_s_own_patterns_are_masked_under_their_name():
    masker = Masker(extra={"order_no": r"ORD-\d{6}", "wechat": r"wxid_[a-z0-9]+"})
    result = masker.mask("order ORD-123456 from wxid_abc123, phone 13800138000")
    assert result.text == "order [order_no] from [wechat], phone [phone]"
    assert result.counts == {"order_no": 1, "wechat": 1, "phone": 1}


def test_skipping_every_built_in_and_adding_none_masks_nothing():
    masker = Masker(skip=list(BUILTIN_PATTERNS))
    text = "13800138000 a.b@example.com 11010119900307123X"
    assert masker.mask(text).text == text

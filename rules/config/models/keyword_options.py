"""The keyword evasion options of a keyword list (rules.engine.evasion), kept apart from ``KeywordList`` so
that rules/config/models/points.py does not grow: an abstract model whose fields ``KeywordList`` (and its history)
inherits."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class KeywordEvasionOptions(models.Model):
    # The evasion options of rules.engine.evasion. On for a new list (pinyin: only for a list that asks for
    # it, see EVASION_DEFAULTS); the migration that added them left
    # every list from before with them off, so a list keeps matching as it did until someone turns them on
    # (and turning one on or off for a list a high-risk rule uses is itself a high-risk change).
    decode_escapes = models.BooleanField(
        _("decode escapes written as text"),
        default=True,
        help_text=_("HTML entities, percent-encoding and \\uXXXX escapes are read as the characters they stand for."),
    )
    ignore_invisible = models.BooleanField(
        _("ignore all invisible characters"),
        default=True,
        help_text=_(
            "Every default-ignorable character (Hangul fillers among them) and bidi control is ignored; text "
            "inside a right-to-left override is read in the order it is shown."
        ),
    )
    fold_variants = models.BooleanField(
        _("fold variant characters"),
        default=True,
        help_text=_("Variant forms beyond Traditional Chinese match the usual form (投愬 hits 投诉)."),
    )
    fold_confusables = models.BooleanField(
        _("fold look-alike letters"),
        default=True,
        help_text=_(
            "Cyrillic and Greek look-alikes, small capitals, digits for letters and separators inside a Latin "
            "word are read as the Latin word (pоlice, ᴘᴏʟɪᴄᴇ, p0lice, p.o.l.i.c.e hit police)."
        ),
    )
    fold_digits = models.BooleanField(
        _("fold digits for numeric terms"),
        default=True,
        help_text=_(
            "For terms that are numbers: digits of every script, Chinese numerals, keycaps, letters for digits "
            "and separators between digits are folded (一二三一五, 1 2 3 1 5, I2315 hit 12315); such a term "
            "then matches a whole number only, not part of a longer one."
        ),
    )
    bridge_cjk = models.BooleanField(
        _("bridge one foreign character inside a CJK word"),
        default=True,
        help_text=_("One letter, digit, kana or bopomofo between two Chinese characters is ignored (投x诉 hits 投诉)."),
    )
    match_pinyin = models.BooleanField(
        _("match homophones and pinyin"),
        default=False,
        help_text=_(
            "Chinese terms also match characters that sound the same and their pinyin (头诉, tousu hit 投诉), "
            "where the segmenter finds word edges."
        ),
    )

    class Meta:
        abstract = True

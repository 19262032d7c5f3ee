import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from rules.engine.normalize import normalize_text

# Full-width forms, CJK, compatibility characters and combining marks: where NFKC does real work.
TEXT = st.text(
    alphabet=st.sampled_from(
        [chr(c) for c in range(0x20, 0x7F)]
        + [chr(c) for c in range(0xFF01, 0xFF5F)]
        + ["投", "诉", "\u3000", "\u2460", "\ufb01", "\u212b", "e", "\u0301", "\u1e9b", "ß", "İ"]
    ),
    max_size=60,
)


@settings(max_examples=500, deadline=None)
@given(TEXT)
def test_the_fast_path_equals_full_nfkc_and_case_folding(text):
    assert normalize_text(text) == unicodedata.normalize("NFKC", text).casefold().strip()

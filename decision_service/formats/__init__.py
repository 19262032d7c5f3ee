"""Date and time formats for every language the admin speaks (``FORMAT_MODULE_PATH``).

Django localises dates with the active language's own formats, which win over ``DATETIME_FORMAT`` in
the settings; so each language the admin offers gets a module here saying the same thing: one way of
writing a moment everywhere, with seconds and the time zone (``2026-12-01 03:10:32 UTC``).
A language added to ``LANGUAGES`` needs its module here too (``tests/test_formats.py`` checks).
"""

"""The configuration room: points, rules, condition kinds, keyword lists, thresholds, state machines,
revisions and the config-change seam (``revisions``); ``document`` is the pure YAML side, ``yaml_import``
the import that writes."""

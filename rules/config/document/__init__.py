"""Configuration as code: the whole configuration as one YAML document, handled without the database.

``yamlload`` parses YAML keeping the line of every value, ``validate`` (with ``machine_reader``) checks a
document and turns it into the canonical shape of ``rules.config.selectors.config_document``, ``diff``
compares two such documents record by record, ``spelling`` says how values are written. Nothing here
reads or writes a record (an import-linter contract holds it): the import that writes is
``rules.config.yaml_import`` and the export of the live configuration ``rules.config.yaml_export``.
"""

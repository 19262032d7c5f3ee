"""Configuration as code: the whole configuration as one YAML document.

``yamlload`` parses YAML keeping the line of every value, ``validate`` checks a document without the
database and turns it into the canonical shape of ``rules.config.selectors.config_document``, ``diff``
compares two such documents record by record, ``apply`` writes a document through the audited record
services as one configuration change, and ``export`` dumps the live configuration.
"""

"""The generic admin kit: service-backed audited admins (``kit``), the reason field (``forms``), and form
fields that edit JSON-backed values as plain text (``fields``). It depends on no app."""

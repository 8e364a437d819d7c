"""The live service's durable job store, its source of truth: the store itself over SQLite or
PostgreSQL (``database``, with the SQL dialects in ``dialect``), store addresses (``url``),
the records it returns (``records``) and service ids (``service_id``)."""

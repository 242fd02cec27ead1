"""The LLM layer: model gateway (litellm), structured output, interactions, agents, cassettes.

litellm is imported lazily (it costs ~3 s) and only here; it runs offline and quiet (no
price-map download, no banners). With no model configured, calls go to the built-in offline
model, which is deterministic and always answers with JSON valid against the requested schema.

* :mod:`flows.llm.gateway` — ``complete(req)``: model resolution (environment, model string,
  ``ERGON_MODEL``, offline), retries, structured-output mode, cost, records, cassettes, resume.
* :mod:`flows.llm.environments` — environments as litellm Routers; ``secret:``/``env:``/
  ``prefect-secret:``/``prefect-var:`` keys.
* :mod:`flows.llm.structured` — JSON parsing, jsonschema validation, the repair turn.
* :mod:`flows.llm.interactions` — prompt segments to messages, input validation, one call.
* :mod:`flows.llm.offline` — the offline model ``ergon/offline``.
* :mod:`flows.llm.embeddings` — ``embed(texts)``: litellm's embedding API (a model string or an
  environment, ``ERGON_EMBEDDING_MODEL``), else the offline embedder
  (:mod:`flows.llm.offline_embedding`, ``ergon/offline-embedding``).
* :mod:`flows.llm.cassettes` / :mod:`flows.llm.records` — replay files; store rows and resume.
"""

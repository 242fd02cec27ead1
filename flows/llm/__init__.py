"""The LLM layer: model gateway (litellm), structured output, interactions, agents, cassettes.

litellm is imported lazily (it costs ~3 s) and only here; it runs offline and quiet (no
price-map download, no banners). With no model configured, calls go to the built-in offline
model, which is deterministic and always answers with JSON valid against the requested schema.
"""

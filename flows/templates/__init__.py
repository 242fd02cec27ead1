"""Files `ergon init` copies into a new project folder (package data, so they ship in the wheel).

``project/`` mirrors the folder it creates: ``definitions/`` (one small example of each runnable
kind, and the Python tool they use), ``prefect.yaml`` and ``README-ergon.md``.
"""

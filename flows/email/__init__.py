"""Email: the configuration (``tools/email.yaml``), composing and sending through SMTP, and the
emails of human tasks with their per-task reply addresses.

* :mod:`flows.email.config` — the configuration, read and checked with the compiler's rules;
* :mod:`flows.email.message` — markdown → an HTML and a text part, sent through the configured
  SMTP server (the standard library's ``smtplib``);
* :mod:`flows.email.asking` — a human task emailed to its assignees (``ask_by_email``) with a
  reply address only that email carries, and the check of a reply against it.

Receiving mail (replies that answer tasks, mail that starts runs) is ``ergon serve``'s listener,
:mod:`flows.triggers.email`, which sits above the run owner this package must not import.
"""

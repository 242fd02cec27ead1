"""Schedules in words (ui/cron.py)."""

from __future__ import annotations

import pytest

from ui.cron import describe_cron, describe_schedule


@pytest.mark.parametrize(("expr", "words"), [
    ("* * * * *", "every minute"),
    ("*/15 * * * *", "every 15 minutes"),
    ("5 * * * *", "every hour at :05"),
    ("0 */6 * * *", "every 6 hours at :00"),
    ("0 2 * * *", "every day at 02:00"),
    ("30 9 * * 1-5", "on weekdays at 09:30"),
    ("0 8,17 * * *", "every day at 08:00 and 17:00"),
    ("0 9 * * 1,3", "on Mondays and Wednesdays at 09:00"),
    ("0 0 1 * *", "on the 1st of every month at 00:00"),
    ("0 0 22 * *", "on the 22nd of every month at 00:00"),
    ("0 0 1 1 *", "cron 0 0 1 1 *"),  # not a common shape: shown as it is
    ("0 9-17 * * *", "cron 0 9-17 * * *"),
])
def test_cron_in_words(expr, words):
    assert describe_cron(expr) == words


def test_schedule_texts():
    assert describe_schedule("cron 0 2 * * * (Europe/Paris)") == "every day at 02:00 (Europe/Paris)"
    assert describe_schedule("every 30s") == "every 30 seconds"
    assert describe_schedule("every 3600s") == "every hour"
    assert describe_schedule("every 900s") == "every 15 minutes"
    assert describe_schedule("POST /hooks/nightly") == "POST /hooks/nightly"

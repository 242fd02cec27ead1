"""Python tools used by the example definitions.

Every function here is deterministic and local: no network, no clock, no randomness, so the
examples run offline and their results can be snapshot-tested. The compiler finds these tools
statically (by the ``@tool`` decorator, without importing this file); the runtime imports the
file and calls them with arguments validated against their type hints.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any

from flows.tools import tool

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")

#: A fixed table of reference rates (units of the currency per 1 EUR); stands in for a rates API.
_EUR_RATES: dict[str, float] = {
    "EUR": 1.0, "USD": 1.08, "GBP": 0.85, "CHF": 0.95, "JPY": 162.0, "SEK": 11.4, "CAD": 1.47,
}

#: Countries the example sanctions screen treats as high risk (illustrative only).
_HIGH_RISK_COUNTRIES = frozenset({"KP", "IR", "SY", "CU"})

_STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were "
    "will with we our you your they their not but if then than so".split()
)


# --------------------------------------------------------------------------------------------
# Text


@tool
def word_count(text: str) -> dict:
    """Count the words, characters and lines of a text.

    Returns ``{"words": int, "characters": int, "lines": int}``.
    """
    return {
        "words": len(_WORD.findall(text)),
        "characters": len(text),
        "lines": text.count("\n") + 1 if text else 0,
    }


@tool
def normalize_text(text: str) -> dict:
    """Collapse runs of whitespace and strip the text; returns ``{"clean_text": str}``."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return {"clean_text": "\n".join(line for line in lines if line).strip()}


@tool
def extract_keywords(text: str, top_n: int = 5) -> list[str]:
    """The ``top_n`` most frequent non-stopword words of a text (ties broken alphabetically)."""
    words = [w.lower() for w in _WORD.findall(text)]
    counts = Counter(w for w in words if w not in _STOPWORDS and len(w) > 2)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [w for w, _ in ranked[: max(top_n, 0)]]


@tool
def render_report(title: str, summary: str, keywords: list[str], word_stats: dict[str, Any]) -> str:
    """Assemble a markdown report from a summary, keywords and word statistics."""
    keyword_list = ", ".join(f"`{k}`" for k in keywords) or "none"
    return (
        f"# {title}\n\n"
        f"## Summary\n{summary}\n\n"
        f"## Keywords\n{keyword_list}\n\n"
        f"## Statistics\n"
        f"- words: {word_stats.get('words', 0)}\n"
        f"- characters: {word_stats.get('characters', 0)}\n"
        f"- lines: {word_stats.get('lines', 0)}\n"
    )


# --------------------------------------------------------------------------------------------
# Finance


@tool
def fetch_exchange_rate(currency: str, base: str = "EUR") -> dict:
    """Reference exchange rate of ``currency`` against ``base`` from a fixed local table.

    Deterministic stand-in for a rates service (no network). Returns
    ``{"fx_rate": float, "currency": str, "base": str}`` where ``fx_rate`` converts an amount
    in ``currency`` into ``base``. Unknown currencies raise ``ValueError``.
    """
    cur, ref = currency.upper(), base.upper()
    if cur not in _EUR_RATES or ref not in _EUR_RATES:
        raise ValueError(f"unknown currency {currency!r}; known: {', '.join(sorted(_EUR_RATES))}")
    return {"fx_rate": round(_EUR_RATES[ref] / _EUR_RATES[cur], 6), "currency": cur, "base": ref}


@tool
def sum_line_amounts(lines: list[dict[str, Any]], fx_rate: float = 1.0) -> dict:
    """Total the ``output.amount`` of collected foreach envelopes (failed items are skipped).

    Returns ``{"total_amount": float, "failed_lines": int}``; the total is converted with
    ``fx_rate`` and rounded to cents.
    """
    total = 0.0
    failed = 0
    for envelope in lines:
        output = envelope.get("output") if isinstance(envelope, dict) else None
        if envelope.get("status", "completed") != "completed" or not isinstance(output, dict):
            failed += 1
            continue
        total += float(output.get("amount", 0) or 0)
    return {"total_amount": round(total * fx_rate, 2), "failed_lines": failed}


# --------------------------------------------------------------------------------------------
# Vendors


@tool
def score_vendor(name: str, country: str) -> dict:
    """A deterministic 0-100 vendor score from the name and country (illustrative only).

    Returns ``{"vendor_score": int, "score_band": "low" | "medium" | "high"}``.
    """
    if country.upper() in _HIGH_RISK_COUNTRIES:
        score = 5
    else:
        digest = hashlib.sha256(f"{name.strip().lower()}|{country.upper()}".encode()).digest()
        score = 40 + digest[0] % 61  # 40..100
    band = "low" if score < 40 else "medium" if score < 75 else "high"
    return {"vendor_score": score, "score_band": band}


@tool
def screen_sanctions(name: str, country: str) -> dict:
    """Screen a party against a tiny built-in sanctions list; returns ``{"sanctions_hit": bool}``."""
    listed = {"acme shell holdings", "blocked trading co"}
    hit = country.upper() in _HIGH_RISK_COUNTRIES or name.strip().lower() in listed
    return {"sanctions_hit": hit}


# --------------------------------------------------------------------------------------------
# Workflow DSL activities (the seed's activity names)


@tool
def describeDocument(document: str) -> dict:  # noqa: N802
    """Metadata of a document from the local store stand-in (deterministic).

    Returns ``{"id", "name", "description", "content_type", "size"}``.
    """
    return {
        "id": document,
        "name": f"{document}.pdf",
        "description": f"Uploaded document {document}",
        "content_type": "application/pdf",
        "size": 1024 + len(document) * 17,
    }

"""Publishing drafts as immutable versions, listing them, structural diffs and revert — the
`ergon publish|versions|diff|revert` commands on a real store and definitions folder."""

from __future__ import annotations

import json

from compiler.ir import HumanTaskNode
from versions_samples import review


def test_publish_stores_the_exact_source_and_content_then_no_ops_when_unchanged(folder, ergon):
    from flows.store import definitions as definition_store

    code, out, _ = ergon("publish", "review", "--comment", "first cut")
    assert code == 0 and "published review version 1" in out and "first cut" in out
    row = definition_store.get_version("review", 1)
    assert row.source == (folder / "review.yaml").read_text(), "the text as written, comment line included"
    assert row.source.startswith("# Review of a party") and row.source_file == "review.yaml"
    assert row.content["process"] == "review" and row.comment == "first cut" and row.published_by == "lea"
    assert definition_store.get_snapshot(row.content_hash) == row.content
    code, out, _ = ergon("publish", "review")
    assert code == 0 and "unchanged since version 1" in out and "nothing published" in out
    # reformatting alone (a comment, spacing) is the same content: still nothing to publish
    (folder / "review.yaml").write_text("# reworded comment\n" + review())
    code, out, _ = ergon("publish", "review")
    assert "unchanged since version 1" in out
    assert [v.version for v in definition_store.list_versions("review")] == [1]


def test_a_definition_with_errors_is_not_published(folder, ergon):
    from flows.store import definitions as definition_store

    (folder / "review.yaml").write_text(review().replace("- {to: rejected}", "- {to: rejectd}"))
    code, _, err = ergon("publish", "review")
    assert code == 1
    assert "error[unknown-target]" in err and "did you mean `rejected`?" in err
    assert "has 1 error(s); fix them" in err
    assert definition_store.list_versions("review") == []
    code, _, err = ergon("publish", "reveiw")
    assert code == 2 and "no definition named `reveiw`" in err and "did you mean `review`?" in err


def test_versions_lists_numbers_hashes_comments_authors_and_draft_state(folder, ergon):
    assert json.loads(_last_line(ergon("versions", "review", "--json")[1]))["draft"] == "never published"
    ergon("publish", "review", "-m", "one")
    (folder / "review.yaml").write_text(review("approve, reject, escalate"))
    ergon("publish", "review", "-m", "two")
    listing = json.loads(_last_line(ergon("versions", "review", "--json")[1]))
    assert [(v["version"], v["comment"], v["published_by"]) for v in listing["versions"]] == [(2, "two", "lea"), (1, "one", "lea")]
    assert all(len(v["hash"]) == 12 and v["published_at"] for v in listing["versions"])
    assert listing["draft"] == "same as version 2"
    (folder / "review.yaml").write_text(review())  # back to version 1's content by hand
    code, out, _ = ergon("versions", "review")
    assert code == 0 and "draft: differs from version 2 (same as version 1)" in out
    assert "one" in out and "two" in out and "lea" in out


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_diff_names_nodes_fields_context_and_transitions(folder, ergon):
    ergon("publish", "review")
    (folder / "review.yaml").write_text(review("approve, reject, escalate", counter_type="number",
                                               extra_field="\n      note: {type: string}", reject_to="archived"))
    ergon("publish", "review")
    code, out, _ = ergon("diff", "review", "1", "2")
    assert code == 0
    assert out.splitlines()[0] == "review: v1 → v2"
    assert "  + archived (final)" in out and "  - rejected (final)" in out
    assert '      task.fields[0].options: ["approve", "reject"] → ["approve", "reject", "escalate"]' in out
    assert "  + note: string" in out and "  ~ counter: type integer → number" in out
    assert "  + review → archived" in out and "  - review → rejected" in out
    data = json.loads(ergon("diff", "review", "v1", "v2", "--json")[1])
    assert data["nodes_added"] == {"archived": "final"} and data["nodes_removed"] == {"rejected": "final"}
    assert data["context_retyped"] == {"counter": ["integer", "number"]}
    assert list(data["nodes_changed"]) == ["review"]


def test_diff_against_the_draft_and_identical_versions(folder, ergon):
    ergon("publish", "review")
    code, out, _ = ergon("diff", "review", "1", "draft")
    assert code == 0 and "no differences" in out
    (folder / "review.yaml").write_text(review().replace('title: "Review {{ party }}"', 'title: "Check {{ party }}"'))
    code, out, _ = ergon("diff", "review", "latest")  # V2 defaults to the draft
    assert out.splitlines()[0] == "review: v1 → draft"
    assert '      task.title: "Review {{ party }}" → "Check {{ party }}"' in out
    code, _, err = ergon("diff", "review", "1", "9")
    assert code == 2 and "has no version 9; its versions are 1" in err
    code, _, err = ergon("diff", "review", "one", "2")
    assert code == 2 and "is not a version" in err


def test_diff_of_a_kind_without_a_plan_is_field_by_field(folder, ergon):
    form = "kind: form\nname: answer\ngroups:\n  - name: main\n    fields:\n      - {name: ok, type: boolean}\n"
    (folder / "answer.yaml").write_text(form)
    assert ergon("publish", "answer")[0] == 0
    (folder / "answer.yaml").write_text(form.replace("boolean", "text"))
    code, out, _ = ergon("diff", "answer", "1", "draft")
    assert code == 0 and 'groups[0].fields[0].type: "boolean" → "text"' in out


def test_revert_writes_the_exact_text_back_and_makes_no_version(folder, ergon):
    from flows.store import definitions as definition_store

    original = (folder / "review.yaml").read_text()
    ergon("publish", "review")
    (folder / "review.yaml").write_text(review("approve, reject, escalate"))
    ergon("publish", "review")
    code, out, _ = ergon("revert", "review", "1")
    assert code == 0 and "is now version 1's text" in out
    assert (folder / "review.yaml").read_text() == original
    assert [v.version for v in definition_store.list_versions("review")] == [2, 1], "revert does not publish"
    code, out, _ = ergon("publish", "review", "-m", "back to one")
    assert "published review version 3" in out
    assert definition_store.get_version("review", 3).content_hash == definition_store.get_version("review", 1).content_hash
    code, _, err = ergon("revert", "review", "7")
    assert code == 2 and "no version 7" in err


def test_revert_into_a_draft_of_another_format_replaces_that_file(folder, ergon):
    import yaml

    ergon("publish", "review")
    (folder / "review.yaml").unlink()
    content = yaml.safe_load(review("approve, reject, escalate"))
    (folder / "review.json").write_text(json.dumps(content, indent=2))
    code, out, _ = ergon("revert", "review", "1")
    assert code == 0 and "removed" in out
    assert not (folder / "review.json").exists()
    assert (folder / "review.yaml").read_text() == review()


def test_resolve_for_deployment_compiles_a_pinned_or_the_latest_version(folder, ergon):
    import pytest

    from flows import versions
    from flows.catalog import Compiled

    with pytest.raises(versions.VersionNotFound, match="publish it with `ergon publish review`"):
        versions.resolve_for_deployment("review", "latest")
    ergon("publish", "review")
    (folder / "review.yaml").write_text(review("approve, reject, escalate"))
    ergon("publish", "review")
    (folder / "review.yaml").write_text(review("approve"))  # an unpublished draft is never deployed
    latest = versions.resolve_for_deployment("review", "latest")
    first = versions.resolve_for_deployment("review", 1)
    assert isinstance(latest, Compiled) and latest.version == 2 and first.version == 1
    def options(c):
        return c.plan.nodes["review"].body_as(HumanTaskNode).task.fields[0].options

    assert options(latest) == ["approve", "reject", "escalate"] and options(first) == ["approve", "reject"]
    with pytest.raises(versions.VersionNotFound, match="its versions are 1, 2"):
        versions.resolve_for_deployment("review", 5)

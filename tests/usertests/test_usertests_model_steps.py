"""``ergon test`` and the model calls behind the built-in steps that ask a model (``summarizeText``,
``classifyText``…): each reports its call under the interaction it is (``sys:SummarizeText``…), and
a case names it in ``mocks.interactions`` and ``expect.calls``, its answer checked against the
built-in's result.

The pipeline, written into the shop project: every such step once, in a chain.
"""

from __future__ import annotations

from pathlib import Path

from compiler.builtin_signatures import MODEL_STEPS
from flows.testing.runner import run_tests

STEPS = """\
kind: pipeline
name: text_steps
context:
  schema:
    type: object
    properties:
      text: {type: string}
      generated: {type: object}
      translated: {type: object}
      summed: {type: object}
      feeling: {type: object}
      classified: {type: object}
      found: {type: object}
    required: [text]
nodes:
  generate:
    type: tool
    tool: generateText
    input: {prompt: "Write about {{ text }}"}
    output: generated
    writes: [generated]
  translate:
    type: tool
    tool: translateText
    needs: [generate]
    input: {text: "{{ text }}", targetLanguage: French}
    output: translated
    writes: [translated]
  summarize:
    type: tool
    tool: summarizeText
    needs: [translate]
    input: {text: "{{ text }}"}
    output: summed
    writes: [summed]
  feel:
    type: tool
    tool: analyzeSentiment
    needs: [summarize]
    input: {text: "{{ text }}"}
    output: feeling
    writes: [feeling]
  classify:
    type: tool
    tool: classifyText
    needs: [feel]
    input: {text: "{{ text }}", categories: [invoice, letter]}
    output: classified
    writes: [classified]
  entities:
    type: tool
    tool: extractEntities
    needs: [classify]
    input: {text: "{{ text }}"}
    output: found
    writes: [found]
"""


def _run(project: Path, write_test, cases: str):
    (project / "definitions" / "text_steps.yaml").write_text(STEPS)
    try:
        path = write_test("definition: text_steps\ncases:\n" + cases, name="text_steps.test.yaml")
        return run_tests([path])
    finally:
        (project / "definitions" / "text_steps.yaml").unlink()


def test_the_model_call_of_each_built_in_step_is_mocked_and_counted_by_its_name(project, write_test) -> None:
    assert sorted(MODEL_STEPS.values()) == ["sys:AnalyzeSentiment", "sys:ClassifyText", "sys:ExtractEntities",
                                           "sys:GenerateText", "sys:SummarizeText", "sys:TranslateText"]
    session = _run(project, write_test, """\
  - name: every model answer given
    inputs: {text: "Invoice 42 from ACME."}
    mocks:
      interactions:
        sys:GenerateText: {returns: {text: A short text.}}
        sys:TranslateText: {returns: {translatedText: Facture 42 de ACME.}}
        sys:SummarizeText: {returns: {summary: An invoice.}}
        sys:AnalyzeSentiment: {returns: {sentiment: neutral}}
        sys:ClassifyText: [{returns: {category: invoice}}]
        sys:ExtractEntities: {returns: {entities: [{text: ACME, type: organisation}]}}
    expect:
      status: completed
      context:
        generated: {text: A short text.}
        translated: {translatedText: Facture 42 de ACME.}
        summed: {summary: An invoice.}
        feeling: {sentiment: neutral}
        classified: {category: invoice}
        found: {entities: [{text: ACME, type: organisation}]}
      calls: {sys:GenerateText: 1, sys:TranslateText: 1, sys:SummarizeText: 1, sys:AnalyzeSentiment: 1,
              sys:ClassifyText: 1, sys:ExtractEntities: 1, summarizeText: 1}
  - name: the summary's model is down
    inputs: {text: "Invoice 42 from ACME."}
    mocks:
      interactions:
        sys:SummarizeText: {raises: model endpoint unavailable}
    expect:
      status: failed
      error: model endpoint unavailable
      route: [generate, translate, summarize]
      calls: {sys:SummarizeText: 1, sys:ClassifyText: 0}
""")
    assert not session.problems, [d.format() for d in session.problems]
    assert [r.passed for r in session.results] == [True, True], \
        [(r.differences, r.actual.error) for r in session.results]


def test_a_model_step_answer_is_checked_against_the_built_in_result(project, write_test) -> None:
    session = _run(project, write_test, """\
  - name: answers the steps cannot give
    inputs: {text: "Invoice 42 from ACME."}
    mocks:
      interactions:
        sys:AnalyzeSentiment: {returns: {sentiment: furious}}
        sys:SummarizeText: {returns: {summary: An invoice., words: 2}}
""")
    found = sorted((d.line, d.code) for d in session.problems)
    assert found == [(7, "mock-result"), (8, "mock-result")], [d.format() for d in session.problems]
    assert not session.results

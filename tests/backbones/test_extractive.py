from ctrlkit import TAG, ModelInput, get_backbone
from ctrlkit.text import sentences, word_count

DOCUMENT = (
    "The city council met on Tuesday to discuss the new budget. "
    "The home team won the championship final with a late goal. "
    "Council members voted to raise the parking fees downtown. "
    "The coach praised the players for their fitness all season. "
    "The mayor said the budget vote would come next month. "
    "Fans celebrated the league title in the streets until midnight."
)


def generate(source, guidance=None, **options):
    return get_backbone("extractive", **options).generate([ModelInput(source=source, guidance=guidance)])[0]


def test_without_control_it_is_a_lead_biased_extractive_summarizer():
    summary = generate(DOCUMENT, max_words=25)
    chosen = sentences(summary)
    assert set(chosen) <= set(sentences(DOCUMENT))
    assert word_count(summary) <= 25
    assert chosen[0] == sentences(DOCUMENT)[0]
    assert generate(DOCUMENT, max_words=25) == summary  # deterministic


def test_tags_steer_the_selection():
    sports_terms = {"team", "championship", "goal", "coach", "players", "season", "league", "fans", "final"}
    tagged = " ".join(f"{TAG} {w} {TAG}" if w.strip(".").lower() in sports_terms else w for w in DOCUMENT.split())
    summary = generate(tagged, max_words=25)
    assert TAG not in summary
    assert all(any(term in s.lower() for term in sports_terms) for s in sentences(summary))
    assert "council" not in summary.lower()


def test_a_prepended_topic_and_guidance_steer_the_selection():
    by_prefix = generate("coach players season <sep> " + DOCUMENT, max_words=12)
    assert by_prefix == "The coach praised the players for their fitness all season."
    by_guidance = generate(DOCUMENT, guidance="parking fees", max_words=12)
    assert by_guidance == "Council members voted to raise the parking fees downtown."


def test_budget_and_edge_cases():
    assert generate(DOCUMENT, max_words=3) in sentences(DOCUMENT)  # one sentence even over budget
    assert generate("   ") == ""
    assert generate("!!! ... ???") == "!!! ... ???"
    backbone = get_backbone("extractive")
    assert backbone.generate([ModelInput(source=DOCUMENT)] * 3) == [generate(DOCUMENT)] * 3

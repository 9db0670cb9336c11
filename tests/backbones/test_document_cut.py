"""Cutting a prompt's document to fit a limit (``ctrlkit.backbones.document_cut``), with a counter
of our own: a token is a run of non-space characters."""

import itertools

from ctrlkit.backbones.document_cut import (MARK, cut_documents, demonstrations, marked_messages, split_at_mark,
                                             without_demonstrations)


def words(texts):
    return [len(text.split()) for text in texts]


def by_text(count):
    """A counter of texts as :func:`cut_documents` calls it, with the prompts' indices."""
    return lambda indices, texts: count(texts)


class Counting:
    """``words``, recording the size of each call."""

    def __init__(self):
        self.calls = []

    def __call__(self, indices, texts):
        assert len(indices) == len(texts)
        self.calls.append(len(texts))
        return words(texts)


def parts(prompt, document):
    """The prompt split at the document's last occurrence, as a test of our own finds it."""
    before, found, after = prompt.rpartition(document)
    return ((before, after), document) if found else None


def cut(prompts, documents, limit, count=words):
    fitted, counts = cut_documents(prompts, [parts(p, d) for p, d in zip(prompts, documents)], count(prompts), limit,
                                   by_text(count))
    assert counts == count(fitted)  # each prompt's count as it now is
    return fitted


DOCUMENT = " ".join(f"w{n}" for n in range(40))


def test_the_document_loses_its_end_and_everything_around_it_stays():
    prompt = f"Focus on the topic: sports\nDocument:\n{DOCUMENT}\nTL;DR:"
    [fitted] = cut([prompt], [DOCUMENT], 12)
    # 7 words around the document leave 5 of its 40 (the sixth's first character would be a sixth word)
    assert fitted == "Focus on the topic: sports\nDocument:\nw0 w1 w2 w3 w4 \nTL;DR:"
    assert words([fitted]) == [12]


def test_prompts_within_the_limit_and_those_without_parts_are_left_as_they_are():
    within, elsewhere = f"Summarize: {DOCUMENT}", "a rewritten document " * 20
    counting = Counting()
    assert cut_documents([within, elsewhere], [parts(within, DOCUMENT), None], words([within, elsewhere]), 41,
                         counting) == ([within, elsewhere], words([within, elsewhere]))
    assert counting.calls == []  # nothing to cut: nothing counted again


def test_a_prompt_too_long_without_its_document_is_left_whole():
    head = "instruction " * 30
    prompt = head + DOCUMENT
    assert cut([prompt], [DOCUMENT], 20) == [prompt]


def test_the_mark_takes_the_last_occurrence_in_the_last_message_holding_the_document():
    """A few-shot prompt shows other documents first, and a system message may quote the task's."""
    messages = ({"role": "system", "content": f"Quoted: {DOCUMENT}"},
                {"role": "user", "content": f"Example: {DOCUMENT}"}, {"role": "assistant", "content": "w0."},
                {"role": "user", "content": f"Task: {DOCUMENT}, that is: {DOCUMENT}\nSummary:"},
                {"role": "assistant", "content": "w"})
    marked = marked_messages(messages, DOCUMENT)
    assert marked[:3] == messages[:3] and marked[4] == messages[4]
    assert marked[3]["content"] == f"Task: {DOCUMENT}, that is: {MARK}\nSummary:" and marked[3]["role"] == "user"
    rendered = "".join(f"<{m['role']}>{m['content']}" for m in marked)
    (before, after), document = split_at_mark(rendered, DOCUMENT)
    assert document == DOCUMENT and after == "\nSummary:<assistant>w"
    assert before + document + after == "".join(f"<{m['role']}>{m['content']}" for m in messages)


def test_a_short_document_is_not_found_in_the_cue_after_it():
    """Searching the rendered prompt would find ``ant`` in ``<assistant>``, cutting the cue."""
    messages = ({"role": "system", "content": "Long rules. " * 30}, {"role": "user", "content": "Summarize: ant"})
    marked = marked_messages(messages, "ant")
    rendered = "".join(f"<{m['role']}>{m['content']}" for m in marked) + "<assistant>"
    assert split_at_mark(rendered, "ant")[0][1] == "<assistant>"


def test_no_mark_where_the_document_is_in_no_message_is_blank_or_the_mark_is_there_already():
    messages = ({"role": "user", "content": f"Summarize: {DOCUMENT}"},)
    assert marked_messages(messages, "not there") is None
    assert marked_messages(messages, " ") is None
    assert marked_messages(({"role": "user", "content": f"{MARK} {DOCUMENT}"},), DOCUMENT) is None
    assert split_at_mark("no mark", DOCUMENT) is None


def test_a_template_that_shows_the_message_twice_has_its_document_cut_in_both_places():
    rendered = f"<user>{MARK}<recap>{MARK}<assistant>"
    parts = split_at_mark(rendered, DOCUMENT)
    assert parts == (("<user>", "<recap>", "<assistant>"), DOCUMENT)
    prompt = rendered.replace(MARK, DOCUMENT)
    [fitted], [length] = cut_documents([prompt], [parts], words([prompt]), 6, by_text(words))
    assert length == words([fitted])[0]
    # five words; one more character (a space) would part "w2<recap>w0" and "w2<assistant>" into seven
    assert fitted == "<user>w0 w1 w2<recap>w0 w1 w2<assistant>"


def test_each_prompt_of_a_batch_fits_and_is_the_longest_that_does():
    """Against every length of the document tried in turn, for limits from the tightest up; the
    prompt at index i counts i tokens more (special tokens a tokenizer adds to some prompts only),
    and the first fits even the tightest limit, so the indices of the prompts cut do not start at 0."""
    documents = ["a", DOCUMENT, " ".join(["longword"] * 25), "x" * 300]
    prompts = [f"Head words here: {document} cue:" for document in documents]

    def count(indices, texts):
        return [index + length for index, length in zip(indices, words(texts))]

    for limit in range(5, 45, 3):
        fitted, counts = cut_documents(prompts, [parts(p, d) for p, d in zip(prompts, documents)],
                                       count(range(4), prompts), limit, count)
        assert counts == count(range(4), fitted)
        for index, (prompt, document, result) in enumerate(zip(prompts, documents, fitted)):
            if count([index], [prompt])[0] <= limit:
                assert result == prompt
                continue
            longest = next((k for k in range(len(document), -1, -1)
                            if count([index], [f"Head words here: {document[:k]} cue:"])[0] <= limit), None)
            expected = prompt if longest is None else f"Head words here: {document[:longest]} cue:"
            assert result == expected, (limit, index)


def test_all_prompts_are_counted_together_in_a_number_of_calls_that_grows_with_the_logarithm():
    documents = [" ".join(["word"] * n) for n in (1000, 2000, 4000)]
    counting = Counting()
    fitted, counts = cut_documents(documents, [(("", ""), document) for document in documents], words(documents), 10,
                                   counting)
    assert words(fitted) == counts == [10, 10, 10]
    assert len(counting.calls) <= 1 + (4000 * 5).bit_length() and max(counting.calls) == 3


def test_only_a_count_that_fits_is_kept_when_counts_do_not_grow_with_the_text():
    """A tokenizer may merge characters into fewer tokens as the text grows; whatever it does, the
    result fits."""
    def uneven(texts):  # a text's count jumps up and down with its length
        return [len(text.split()) + (len(text) % 7 == 0) * 5 for text in texts]

    for limit, length in itertools.product(range(4, 30, 5), (37, 200)):
        document = " ".join("ab" for _ in range(length))
        [fitted] = cut([f"Q: {document} A:"], [document], limit, uneven)
        assert uneven([fitted])[0] <= limit and fitted.startswith("Q: ") and fitted.endswith(" A:")


def turns(*roles):
    return tuple({"role": role, "content": f"{role} {n}"} for n, role in enumerate(roles))


def test_demonstrations_are_the_user_and_assistant_pairs_before_the_tasks_message():
    assert demonstrations(turns("system", "user", "assistant", "user", "assistant", "user")) == 2
    assert demonstrations(turns("user", "assistant", "user")) == 1
    assert demonstrations(turns(" System ", "User", "Assistant", "user")) == 1
    for none in [turns("system", "user"), turns("user"), (), turns("system", "user", "assistant"),
                 turns("system", "assistant", "user", "user"), turns("system", "user", "user", "assistant", "user")]:
        assert demonstrations(none) == 0, none


def test_no_turn_holding_the_document_or_after_it_is_a_demonstration():
    """A conversation that gives its document in an earlier turn, then asks for the summary."""
    messages = turns("system", "user", "assistant", "user", "assistant", "user")
    assert demonstrations(messages, "user 5") == 2  # in the task's message
    assert demonstrations(messages, "user 3") == 1
    assert demonstrations(messages, "user 1") == demonstrations(messages, "assistant 2") == 0
    assert demonstrations(messages, "system 0") == 0
    assert demonstrations(messages, "elsewhere") == demonstrations(messages, " ") == 2


def test_without_demonstrations_keeps_the_system_message_and_the_latest_ones():
    messages = turns("system", "user", "assistant", "user", "assistant", "user")
    assert without_demonstrations(messages, 1) == (messages[0], *messages[3:])
    assert without_demonstrations(messages, 2) == (messages[0], messages[5])
    assert without_demonstrations(messages[1:], 1) == messages[3:]
    assert without_demonstrations(messages, 0) == messages


def test_a_count_that_grows_in_step_with_the_characters_is_searched_in_a_few_calls():
    """Halving alone takes a call for each bit of the document's length (13 to 16 here)."""
    for length, limit in itertools.product((1000, 10000), (10, 500, 900)):
        document = " ".join(["word"] * length)
        counting = Counting()
        [fitted], counts = cut_documents([document], [(("", ""), document)], words([document]), limit, counting)
        assert words([fitted]) == counts == [limit] and words([document[:len(fitted) + 1]]) == [limit + 1]
        assert len(counting.calls) <= 5

"""The embed controller (Passali & Tsoumakas): a trainable embedding per topic, the size of the
token embeddings, added to every encoder input vector: z_i = WE(x_i) + PE(i) + TE(topic).

The backbone holds the table (so it trains and saves with the model); this controller keeps
the topic -> row index and names the row on each input. It needs fine-tuning, and it cannot
steer toward a topic it was not trained on.
"""

from ctrlkit import Controller, CtrlkitError


class Embed(Controller):
    """Adds a trainable topic embedding to the encoder input (needs ctrlkit train; no unseen topics)."""

    reads = ("topic",)
    requires = frozenset({"input_embeddings"})
    topic_vectorizer = "tfidf"
    trained_with_model = True

    def __init__(self, **options):
        super().__init__(**options)
        self.topics: list[str] = []
        self._index: dict[str, int] = {}

    def fit(self, train_examples, topic_space):
        if topic_space is None:
            raise CtrlkitError("controller 'embed' needs the topics of a topic space")
        self.load_state({"topics": list(topic_space.topics)})

    def state(self):
        return {"topics": self.topics}

    def load_state(self, state):
        self.topics = list(state["topics"])
        self._index = {topic: i for i, topic in enumerate(self.topics)}

    def prepare(self, backbone):
        backbone.add_input_embeddings("topic", len(self.topics))

    def apply(self, example, model_input):
        topic = example.controls["topic"]
        if topic not in self._index:
            shown = ", ".join(self.topics[:8]) + (" ..." if len(self.topics) > 8 else "")
            raise CtrlkitError(f"controller 'embed' has no embedding for topic '{topic}' of example "
                               f"'{example.id}': it cannot steer toward unseen topics (known: {shown})")
        embeddings = {**model_input.features.get("input_embeddings", {}), "topic": self._index[topic]}
        return model_input.replace(features={**model_input.features, "input_embeddings": embeddings})

"""The bundled sample: 60 short original news articles, each mixing two of six topics, with a
topic-focused reference summary for each topic, and separate topic-defining passages.

Each article gives two examples (one per topic), so an uncontrolled summary can serve at most
one of them well: what a controller adds shows up directly.
"""

from importlib.resources import files

from ctrlkit import Dataset, Example
from ctrlkit.plugin_api import read_jsonl

TOPICS = ("business", "environment", "health", "politics", "sports", "technology")


def _data_file(name: str):
    return files("ctrlkit_datasets") / "data" / name


class Sample(Dataset):
    """Bundled sample: 60 original news articles x 2 topics, topic-focused references (6 topics)."""

    splits = ("test",)
    default_split = "test"
    controls = ("topic",)
    group_field = "article"

    def load(self, split):
        self.check_split(split)
        examples = []
        for _, article in read_jsonl(_data_file("sample.jsonl")):
            for topic in article["topics"]:
                examples.append(
                    Example(
                        id=f"{article['id']}:{topic}",
                        document=article["document"],
                        references=[article["summaries"][topic]],
                        controls={"topic": topic},
                        meta={"article": article["id"]},
                    )
                )
        return examples

    def topic_documents(self):
        return [(record["topic"], record["text"]) for _, record in read_jsonl(_data_file("sample_topics.jsonl"))]

"""Built-in topic vectorizers, registered through the same hook a plugin uses."""

from ..hookspecs import hookimpl


@hookimpl
def register_topic_vectorizers(register):
    register("tfidf", "ctrlkit.vectorizers.tfidf:TfidfVectorizer")
    register("embedding", "ctrlkit.vectorizers.embedding:EmbeddingVectorizer")

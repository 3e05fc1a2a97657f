"""The GREEN summary: for each error category, the most representative clinically significant error.

GREEN paper Sec. 3.3 and upstream `compute_largest_cluster`: embed every error explanation of a category
with a sentence-transformers model (default sentence-transformers/paraphrase-mpnet-base-v2, as upstream),
L2-normalise, cluster with k-means choosing k by silhouette score, and report the explanation closest
(cosine) to the centre of the largest cluster. Upstream binary-searches k; we scan every k in
[2, min(n - 1, max_k)], which finds the silhouette maximum that the binary search may step over.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from radmetrics.green.parse import LETTERS, SUB_CATEGORIES

DEFAULT_SUMMARY_MODEL = "sentence-transformers/paraphrase-mpnet-base-v2"
_models: dict[str, Any] = {}


def _embedder(model_name: str):
    if model_name not in _models:
        from sentence_transformers import SentenceTransformer

        _models[model_name] = SentenceTransformer(model_name)
    return _models[model_name]


def representative_sentence(embeddings, max_k: int = 10, seed: int = 42) -> dict[str, Any]:
    """Pure: index of the representative row of L2-normalised `embeddings`, the k chosen, and sizes."""
    import numpy as np
    from scipy.spatial.distance import cdist
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    n = len(embeddings)
    best_k, best_labels, best_centers, best_score = 1, np.zeros(n, dtype=int), embeddings.mean(0, keepdims=True), None
    distinct = len(np.unique(np.round(embeddings, 6), axis=0))
    for k in range(2, min(n - 1, max_k, distinct) + 1):
        km = KMeans(n_clusters=k, random_state=seed, n_init=10).fit(embeddings)
        score = silhouette_score(embeddings, km.labels_)
        if best_score is None or score > best_score:
            best_k, best_labels, best_centers, best_score = k, km.labels_, km.cluster_centers_, score
    largest = int(np.argmax(np.bincount(best_labels)))
    members = np.where(best_labels == largest)[0]
    distances = cdist(embeddings[members], best_centers[largest : largest + 1], "cosine").ravel()
    return {"index": int(members[int(np.argmin(distances))]), "k": best_k,
            "largest_cluster_size": int(len(members)), "silhouette": best_score}


def green_summary(judgments: Sequence[Any], model_name: str | None = None, max_k: int = 10) -> dict[str, Any]:
    """Per category: share of error-free reports, number of explanations, and the representative one."""
    from sklearn.preprocessing import normalize

    model_name = model_name or DEFAULT_SUMMARY_MODEL
    out: dict[str, Any] = {"embedding_model": model_name, "categories": {}}
    for letter in LETTERS:
        sentences = [s for j in judgments for s in j.details.get("error_sentences", {}).get(letter, [])]
        entry: dict[str, Any] = {"n_explanations": len(sentences), "representative": None}
        if len(sentences) == 1:
            entry.update(representative=sentences[0], k=1, largest_cluster_size=1)
        elif sentences:
            embeddings = normalize(_embedder(model_name).encode(sentences))
            found = representative_sentence(embeddings, max_k=max_k)
            entry.update(representative=sentences[found.pop("index")], **found)
        out["categories"][f"({letter}) {SUB_CATEGORIES[letter]}"] = entry
    return out

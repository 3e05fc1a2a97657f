"""GREEN summary: representative error explanation per category (k-means, k by silhouette)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import FIXTURES

from radmetrics.green.summary import representative_sentence
from radmetrics.green.system import GreenSystem


def test_representative_is_most_central_member_of_largest_cluster():
    # Three points around (1, 0) and two around (0, 1): k = 2 has the best silhouette; the largest
    # cluster is the first three; its centre is ~(0.99, 0.12), closest (cosine) to row 1 = (1, 0.1) normalised.
    rows = np.array([[1.0, 0.0], [1.0, 0.1], [1.0, 0.25], [0.0, 1.0], [0.1, 1.0]])
    rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    found = representative_sentence(rows)
    assert found["k"] == 2 and found["largest_cluster_size"] == 3 and found["index"] == 1


@pytest.fixture(scope="module")
def tiny_embedder(tmp_path_factory):
    """A tiny random BERT + mean pooling saved as a sentence-transformers model folder (offline)."""
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers >= 6 moved the modules (the old path warns)
        from sentence_transformers.sentence_transformer import modules as models
    except ImportError:
        from sentence_transformers import models
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, trainers
    from tokenizers.models import WordPiece
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path_factory.mktemp("emb")
    cases = json.loads((FIXTURES / "green_official_scores.json").read_text())["cases"]
    wp = Tokenizer(WordPiece(unk_token="[UNK]"))
    wp.normalizer = normalizers.BertNormalizer()
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wp.decoder = decoders.WordPiece()
    wp.train_from_iterator([c["text"] for c in cases.values()], trainers.WordPieceTrainer(
        vocab_size=400, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    tok = BertTokenizerFast(tokenizer_object=wp, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]")
    bert_dir = folder / "bert"
    BertModel(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64)).save_pretrained(bert_dir)
    tok.save_pretrained(bert_dir)
    word = models.Transformer(str(bert_dir))
    model = SentenceTransformer(modules=[word, models.Pooling(word.get_embedding_dimension())])
    model.save(str(folder / "st"))
    return str(folder / "st")


def test_summary_through_aggregate(tiny_embedder):
    cases = json.loads((FIXTURES / "green_official_scores.json").read_text())["cases"]
    system = GreenSystem()
    judgments = [system.parse(c["text"]) for c in cases.values()]
    result = system.aggregate(judgments, summary=True, summary_model=tiny_embedder)
    categories = result["summary"]["categories"]
    a = categories["(a) False report of a finding in the candidate"]
    all_a = [s for j in judgments if j.score is not None for s in j.details["error_sentences"]["a"]]
    assert a["n_explanations"] == len(all_a) > 3 and a["representative"] in all_a
    assert a["largest_cluster_size"] >= 1 and a["k"] >= 1
    e = categories["(e) Mentioning a comparison that isn't in the reference"]
    assert e == {"n_explanations": 0, "representative": None}


def test_python_summary_with_an_uncached_model_offline_fails_before_any_judging(monkeypatch):
    """Review 34: `radmetrics.score(..., summary=True)` and evaluate's `summary=True`, offline with the embedding model
    not cached, judged every row and then raised transformers' OSError ("We couldn't connect to
    'https://huggingface.co'..."). As `radmetrics score --summary` does, the model is checked first: one line, and
    the judge is never asked."""
    import evaluate
    from fake_judge import analysis_for
    from openai_server import FakeOpenAIServer

    import radmetrics
    from conftest import PACKAGE

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with FakeOpenAIServer(analysis_for) as server:
        options = {"base_url": server.base_url}
        with pytest.raises(radmetrics.JudgeError, match=r"The summary model 'no-such-org/embedder' is not in the local "
                                                        r"Hugging Face cache .*a local folder with summary_model="):
            radmetrics.score("green", ["Large effusion."], ["Small effusion."], backend="openai", judge="m",
                             judge_options=options, cache=False, progress=False, summary=True,
                             summary_model="no-such-org/embedder")
        green = evaluate.load(str(PACKAGE / "green"), backend="openai", judge="m", judge_options=options, cache=False,
                              progress=False, summary=True, summary_model="no-such-org/embedder")
        with pytest.raises(radmetrics.JudgeError, match="The summary model 'no-such-org/embedder' is not in the local"):
            green.compute(predictions=["Small effusion."], references=["Large effusion."])
        assert server.requests == []

"""Extraction: one batched forward pass over a corpus, every layer of every site pooled, streamed to HDF5.

The public face (what the CLI, the other featx packages and notebooks import; nothing else is reached
from outside this package):

``ExtractConfig``   every option of ``featx extract``, declared once, validated once, frozen (``config.py``;
                    its checks in ``checks.py``, ``ExtractSummary`` in ``summary.py``)
``ExtractionPlan``  the run resolved once from the config, the corpus and the model (``plan.py``, data only;
                    ``run/resolve.py`` resolves it)
``extract``         run it: single process, one shard, or a torchrun rank (``run/``)
``estimate``        what it would cost, from the same plan (``dryrun/``); ``stored_layout``: the layers and
                    poolings it will store, from the model's ``config.json`` alone (a study checks its probes)
``merge``           the shards of a sharded run into one file (``shards/``)
``quick_up_to_date``  the no-torch answer for an unchanged request (``run/freshness.py``)
``embed``, ``encode_words``  in-memory texts or sentences of words in, features out, no file (``inmemory/``)

Below them, what ``featx.deploy``, ``featx.sklearn`` and ``featx.study`` build on: reading a corpus
(``read_corpus``, ``read_word_corpus``, ``read_input``: an ``ExtractConfig``'s corpus as its extraction reads it,
...; ``senteval_tasks``: a folder's SentEval task files, one corpus each), loading a model and its fingerprints
(``load_model``, ``weights_sha256``, ...) and in-memory encoding (``encode``, ``encode_words`` with their
configs).

The layout, one kind of thing per folder; each stage reads the frozen ``config`` and ``plan`` at the top:

``inputs/``   what a corpus is: tables of texts, word inputs (treebanks, column files), sentence pairs,
              prompt templates and the token positions a prompt is read at
``tokens/``   tokenising a corpus once, word-aware tokenisation, batches and commit blocks, ``--long window``
``model/``    loading a model safely, checking a folder, its files, size, fingerprints, device and dtype
``forward/``  the forward pass: runner, sentence pairs, hooked sites, poolings, word vectors, truncation
``fast/``     featx's own BERT, MPNet and RoBERTa encoders and tokenizer, oneDNN, DeBERTa's band attention
``run/``      resolving the plan, the extraction's entry point, the batch loop, its threads, freshness
``shards/``   sharded runs, torchrun, merging shards
``dryrun/``   ``--dry-run``: from a calibration, or from ``config.json`` alone for a large model
``edits/``    edits inside the forward pass (``--intervene``): erase, project, mean, steer, random
``inmemory/`` in-memory encoding (``featx.embed``, ``featx.sklearn.HiddenStates``, ``featx predict``)

Heavy modules (torch) load on first use, so ``from featx.extraction import ExtractConfig`` stays cheap.
"""

from __future__ import annotations

from ..lazy import lazy_exports
from .checks import COMPUTE_DTYPES, STORE_DTYPES, output_path
from .config import ExtractConfig, make_config
from .run.freshness import quick_up_to_date
from .summary import ExtractSummary

_HOMES = {
    "ExtractionPlan": "plan",
    "resolve_plan": "run.resolve",
    "extract": "run.orchestrate",
    "estimate": "dryrun.estimation",
    "Estimate": "dryrun.summary",
    "LoadedModels": "dryrun.estimation",
    "stored_layout": "dryrun.from_config",
    "model_folder_files": "run.freshness",
    "merge": "shards.merge:merge",
    "MergeSummary": "shards.merge",
    "MergeConfig": "shards.merge",
    "embed": "inmemory.sentences",
    "embed_one": "inmemory.sentences",
    "Embeddings": "inmemory.sentences",
    # what featx.deploy and featx.sklearn build on: inputs, the model, in-memory encoding
    "Corpus": "inputs.corpus",
    "read_corpus": "inputs.corpus",
    "read_input": "inputs.word_corpus",
    "file_sha256": "inputs.digests",
    "remembered_digests": "inputs.digests",
    "senteval_tasks": "inputs.senteval",
    "WordTable": "inputs.treebank",
    "word_format": "inputs.treebank",
    "check_no_table_columns": "inputs.treebank",
    "read_word_corpus": "inputs.word_corpus",
    "combined_sha256": "inputs.word_corpus",
    "unescape_cli_text": "inputs.templates:cli_text",
    "TEXT_FIELD": "inputs.templates",
    "ANSWER_FIELD": "inputs.templates",
    "parse_template": "inputs.templates",
    "prompted_label_note": "inputs.templates",
    "prompt_difference": "inputs.prompts",
    "with_text_field": "inputs.templates",
    "chat_template_of": "inputs.templates",
    "DEFAULT_MODEL": "model.files",
    "DEFAULT_HUB_IDS": "model.files",
    "local_model_folder": "model.files",
    "weight_files": "model.files",
    "model_folder": "model.loading",
    "load_tokenizer": "model.loading",
    "tokenizer_sha256": "model.fingerprints",
    "config_sha256": "model.fingerprints",
    "CONFIG_FILES": "model.fingerprints",
    "weights_sha256": "model.fingerprints",
    "load_model": "model.loading",
    "load_configured": "model.loading",
    "quiet_load_report": "model.checks",
    "with_max_length": "model.loading",
    "native_requested": "fast.select",
    "as_texts": "inmemory.sentences",
    "embed_config": "inmemory.sentences",
    "encode": "inmemory.sentences",
    "as_sentences": "inmemory.words",
    "word_config": "inmemory.words",
    "sentences_table": "inmemory.words",
    "encode_words": "inmemory.words",
    # edits inside the forward pass (--intervene): what featx intervene builds on
    "Intervention": "edits.spec",
    "parse_intervention": "edits.spec",
    "parse_interventions": "edits.spec",
    "EditMap": "edits.sources",
    "ModelInfo": "edits.sources",
    "resolve_edits": "edits.sources",
    "read_bundle_directions": "edits.directions",
    "known_class": "edits.directions",
    "BundleDirections": "edits.directions",
    "plan_edits": "edits.hooks",
    "EditHooks": "edits.hooks",
    "apply_edit": "edits.apply",
    "edit_block_path": "edits.hooks:block_path",
}

__all__ = [
    "COMPUTE_DTYPES",
    "STORE_DTYPES",
    "ExtractConfig",
    "ExtractSummary",
    "make_config",
    "output_path",
    "quick_up_to_date",
    *_HOMES,
]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())

"""The fast path: featx's own implementation of plain BERT, MPNet and RoBERTa encoders, used instead of
transformers where it is certainly equivalent (``select.py`` decides), so that an extraction never pays for
importing transformers.

``bert.py``       the encoder in plain torch, with transformers' ``BertModel`` module names and sdpa attention
``mpnet.py``      the same for ``MPNetModel`` (all-mpnet-base-v2): its relative position bias as sdpa's mask
``roberta.py``    the same for ``RobertaModel`` and ``XLMRobertaModel``: BERT with positions past the padding id
``checkpoint.py`` what all three load with: config.json, the meta-device build, strict loading from model.safetensors
``tokenizer.py``  a facade over ``tokenizers.Tokenizer`` with the attributes featx reads from a tokenizer
``select.py``     whether a request and a model folder can run natively, and why not
``random_init.py`` ``--random-init``'s weights drawn as transformers' ``from_config`` draws them, bit for bit
``fuse.py``       CPU fusions of the prepacked encoder (one query/key/value linear, linear + residual add)
``onednn.py``     CPU linear layers through oneDNN with weights reordered once (prepacked)
``packing.py``    a padded batch's blocks run on its real tokens only (CPU), attention alone padded
``deberta.py``    DeBERTa-v2/v3's disentangled attention on the band of relative positions in use (CPU)

Nothing here imports transformers; ``FEATX_NATIVE=0`` turns the native path off.
"""

from ...lazy import lazy_exports

__all__ = [
    "bert",
    "checkpoint",
    "deberta",
    "fuse",
    "mpnet",
    "onednn",
    "packing",
    "random_init",
    "roberta",
    "select",
    "tokenizer",
]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use

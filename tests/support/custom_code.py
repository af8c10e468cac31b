"""A model folder's own Python code, for the tests that check it never runs unless the user asks: written
beside a tiny model as ``custom_model.py``, it leaves a marker file when imported."""

CUSTOM_CODE = """
from pathlib import Path
Path({marker!r}).write_text("custom code ran")
from transformers import BertConfig, BertModel


class CustomConfig(BertConfig):
    model_type = "featx-custom-bert"


class CustomModel(BertModel):
    config_class = CustomConfig
"""

"""The notebooks run top to bottom against a tiny model's features and results, and are committed clean."""

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import SENTENCES, write_csv
from results_fixtures import synthetic_results, write_results

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "notebooks" / "layerwise.ipynb"


def test_committed_notebook_has_no_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)
    parameters = [cell for cell in code if "parameters" in cell.metadata.get("tags", [])]
    assert len(parameters) == 1 and 'ROOT / "out" / "demo.features.h5"' in parameters[0].source


def test_layerwise_notebook_runs_on_tiny_model_outputs(tiny_model, tmp_path, monkeypatch):
    from featx.extractor import extract

    corpus = write_csv(tmp_path / "corpus.csv", SENTENCES)
    features = extract(corpus, model=str(tiny_model), output=tmp_path / "corpus.features.h5", progress=False).output
    frame, meta = synthetic_results(label="sentiment", names=("neg", "pos"), layers=range(3),
                                    poolings=("cls", "mean", "max"), peak=(1, "max"))
    results, _ = write_results(frame, meta, tmp_path / "corpus.features.sentiment.probe")
    monkeypatch.setenv("FEATX_FEATURES", str(features))
    monkeypatch.setenv("FEATX_RESULTS", str(results))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # raises on any failing cell

    text = "".join(output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", []))
    assert f"results:  {results}" in text
    assert "best: layer 1, max pooling, accuracy 0.710" in text
    images = [output for cell in notebook.cells for output in cell.get("outputs", [])
              if "image/png" in output.get("data", {})]
    assert len(images) == 4  # curves, heatmap, per-class F1, PCA
    errors = [output for cell in notebook.cells for output in cell.get("outputs", []) if output.output_type == "error"]
    assert not errors


@pytest.mark.parametrize("name", sorted(path.name for path in (REPO / "notebooks").glob("*.ipynb")))
def test_every_notebook_is_valid(name):
    nbformat.validate(nbformat.read(REPO / "notebooks" / name, as_version=4))

"""The notebooks run top to bottom against a tiny model's features and results, and are committed clean."""

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from support.results import tiny_rows
from support.tiny import write_csv

import featx

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "notebooks" / "layerwise.ipynb"
DEPLOY = REPO / "notebooks" / "deploy.ipynb"


def _executed(path: Path, folder: Path, monkeypatch) -> list:
    """The outputs of every cell of the notebook at ``path``, run top to bottom in ``folder`` against this
    checkout (raises on any failing cell)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    return [output for cell in notebook.cells for output in cell.get("outputs", [])]


@pytest.mark.parametrize(
    ("notebook_path", "default"),
    [(NOTEBOOK, 'ROOT / "out" / "demo.features.h5"'), (DEPLOY, 'ROOT / "out" / "sentiment.featx"')],
)
def test_committed_notebook_has_no_outputs(notebook_path, default):
    notebook = nbformat.read(notebook_path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)
    parameters = [cell for cell in code if "parameters" in cell.metadata.get("tags", [])]
    assert len(parameters) == 1 and default in parameters[0].source  # make demo's output


@pytest.mark.slow
def test_layerwise_notebook_runs_on_tiny_model_outputs(tiny_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # extract and probe remember their outputs in ./.featx/
    corpus = write_csv(tmp_path / "corpus.csv", tiny_rows(), header=("text", "sentiment", "split"))
    features = featx.extract(
        corpus, model=str(tiny_model), output=tmp_path / "corpus.features.h5", poolings="cls,mean,max", progress=False
    ).output
    result = featx.probe(features, label="sentiment", layers="all", jobs=1, n_bootstrap=200)
    best = result.best()
    random = featx.extract(
        corpus,
        model=str(tiny_model),
        output=tmp_path / "corpus.random.h5",
        poolings="cls,mean,max",
        random_init=True,
        progress=False,
    ).output
    baseline = featx.probe(
        random, label="sentiment", layers="all", jobs=1, n_bootstrap=200, predictions=f"{best.pooling}/logreg"
    )
    monkeypatch.setenv("FEATX_COMPARE", f"{result.csv_path},{baseline.csv_path}")
    monkeypatch.setenv("FEATX_FEATURES", str(features))
    monkeypatch.setenv("FEATX_RESULTS", str(result.csv_path))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    outputs = _executed(NOTEBOOK, tmp_path, monkeypatch)
    text = "".join(output.get("text", "") for output in outputs)
    assert f"results:  {result.csv_path}" in text
    tables = "".join(output.get("data", {}).get("text/plain", "") for output in outputs)
    assert "majority" in tables and "lexical" in tables  # the chosen rows beside both references
    assert f"best: layer {int(best.layer)}, {best.pooling} pooling, accuracy {best.accuracy:.3f}" in text
    # curves, heatmap, F1, PCA, the two-model comparison and its CKA heatmap
    assert sum("image/png" in output.get("data", {}) for output in outputs) == 6
    assert "paired test per layer" in text and "(random init)" in text
    assert not [output for output in outputs if output.output_type == "error"]
    assert not [output["text"] for output in outputs if output.get("name") == "stderr"]


@pytest.mark.slow
def test_deploy_notebook_runs_on_a_tiny_models_bundle(tiny_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = tiny_rows()
    corpus = write_csv(tmp_path / "corpus.csv", rows, header=("text", "sentiment", "split"))
    features = featx.extract(
        corpus, model=str(tiny_model), output=tmp_path / "corpus.h5", poolings="mean", progress=False
    ).output
    fitted = featx.fit(features, label="sentiment", folds=3, output=tmp_path / "s.featx", jobs=1)
    test_rows = [row for row in rows if row[2] == "test"]
    monkeypatch.setenv("FEATX_BUNDLE", str(fitted.path))
    monkeypatch.setenv("FEATX_CORPUS", str(corpus))
    monkeypatch.setenv("FEATX_N_ROWS", str(len(test_rows)))
    outputs = _executed(DEPLOY, tmp_path, monkeypatch)
    text = "".join(output.get("text", "") + output.get("data", {}).get("text/plain", "") for output in outputs)
    assert not [output for output in outputs if output.output_type == "error"]
    assert not [output["text"] for output in outputs if output.get("name") == "stderr"]  # no warning, no bar
    assert "chosen by accuracy on cross-validation over the training rows" in text
    assert "lexical baseline" in text and "majority class" in text
    # every test row through the real encoder: the accuracy fit reported on them
    assert f"sentiment: accuracy {fitted.test['score']:.3f} on {len(test_rows)} held-out rows" in text
    assert "5-fold accuracy" in text


@pytest.mark.parametrize("name", sorted(path.name for path in (REPO / "notebooks").glob("*.ipynb")))
def test_every_notebook_is_valid(name):
    nbformat.validate(nbformat.read(REPO / "notebooks" / name, as_version=4))

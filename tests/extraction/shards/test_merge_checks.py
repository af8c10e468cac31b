"""``featx merge`` refuses damaged shards and manifests before it writes or deletes anything."""

from __future__ import annotations

import json

import h5py
import numpy as np
from click.testing import CliRunner
from support.shards import run_shards

from featx.cli import main
from featx.extraction.shards.sharding import ShardSpec, manifest_path


def _one_line_exit_2(result) -> str:
    assert result.exit_code == 2, result.output
    assert result.output.startswith("featx: error: ") and "Traceback" not in result.output
    return result.output


def test_a_shard_with_nan_rows_is_refused_and_nothing_is_deleted(tiny_model, corpus, tmp_path):
    output = tmp_path / "out.h5"
    run_shards(corpus, output, tiny_model, 2)
    shard = ShardSpec(1, 2).path(output)
    with h5py.File(shard, "r+") as file:
        values = file["pooled/mean"][()]
        values[3, 1, :] = np.nan
        file["pooled/mean"][...] = values
    message = _one_line_exit_2(CliRunner().invoke(main, ["merge", str(output), "-q"]))
    assert "inf or NaN" in message and shard.name in message
    assert shard.exists() and ShardSpec(0, 2).path(output).exists() and manifest_path(output).exists()
    assert not output.exists()


def test_a_manifest_naming_an_absolute_output_is_refused(tiny_model, corpus, tmp_path):
    output = tmp_path / "out.h5"
    run_shards(corpus, output, tiny_model, 2)
    path = manifest_path(output)
    manifest = json.loads(path.read_text())
    for bad in ("/etc/passwd", "../elsewhere.h5"):
        path.write_text(json.dumps({**manifest, "output": bad}))
        message = _one_line_exit_2(CliRunner().invoke(main, ["merge", str(output), "-q"]))
        assert "shard manifest" in message and "'output'" in message
    path.write_text(json.dumps({**manifest, "shard_count": 0}))
    assert "'shard_count'" in _one_line_exit_2(CliRunner().invoke(main, ["merge", str(output), "-q"]))
    path.write_text(json.dumps(manifest))
    merged = CliRunner().invoke(main, ["merge", str(output), "-q"])
    assert merged.exit_code == 0, merged.output

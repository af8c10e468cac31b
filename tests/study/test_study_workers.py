"""The local engine's probe workers: started by ``prepare`` before any stage, each with its share of the
cores (two workers on two cores: one BLAS thread each) and the probing code imported, and stopped by
``close``."""

from __future__ import annotations

import os

from threadpoolctl import threadpool_info

from featx.study.engines import LocalEngine
from featx.study.workers import share_of_cores


def test_prepared_workers_use_their_share_of_the_cores():
    engine = LocalEngine()
    engine.prepare(2)
    pool = engine._pool
    try:
        assert pool is not None
        want = share_of_cores(2)
        assert pool.submit(os.getenv, "OMP_NUM_THREADS").result() == str(want)
        blas = [lib["num_threads"] for lib in pool.submit(threadpool_info).result() if lib["user_api"] == "blas"]
        assert blas and set(blas) == {want}
    finally:
        engine.close()
    assert engine._pool is None

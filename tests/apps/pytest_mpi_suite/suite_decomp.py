"""A pytest-mpi suite over mpipartition, run as ``mpiexec -n N python -m pytest --with-mpi``
(as mpipartition's own CI runs its tests): each rank runs every test; the ``mpi`` marks,
``mpi_tmp_path`` and the min-size skips are pytest-mpi's."""
import numpy as np
import pytest
from mpi4py import MPI
from mpipartition import Partition, distribute, exchange, overload


def _particles(dim, n, seed):
    rng = np.random.RandomState(seed)
    labels = "xyz"[:dim]
    data = {x: rng.uniform(0, 1, n) for x in labels}
    data["id"] = MPI.COMM_WORLD.rank * n + np.arange(n, dtype=np.int64)
    return data, list(labels)


@pytest.mark.mpi
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_partition_covers_the_box(dim):
    p = Partition(dim)
    assert int(np.prod(p.decomposition)) == p.nranks == MPI.COMM_WORLD.size
    volume = p.comm.allreduce(float(np.prod(p.extent)))
    assert abs(volume - 1.0) < 1e-12
    assert np.array(p.ranklist).shape == tuple(p.decomposition)


@pytest.mark.mpi
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("iterations", [1, 2])
def test_distribute_keeps_every_particle_once(dim, iterations):
    p = Partition(dim)
    data, keys = _particles(dim, 200, 1000 + p.rank)
    out = distribute(p, 1.0, data, keys, all2all_iterations=iterations)
    for i, k in enumerate(keys):
        assert np.all(out[k] >= p.origin[i]) and np.all(out[k] < p.origin[i] + p.extent[i])
    ids = np.sort(np.concatenate(p.comm.allgather(out["id"])))
    assert np.array_equal(ids, np.arange(200 * p.nranks))


@pytest.mark.mpi(min_size=4)
def test_overload_copies_the_margin():
    p = Partition(2)  # mpipartition overloads only along axes split in two or more
    data, keys = _particles(2, 300, 7 + p.rank)
    data = distribute(p, 1.0, data, keys)
    mine = len(data["id"])
    over = overload(p, 1.0, data, 0.05, keys)
    assert len(over["id"]) >= mine
    total = p.comm.allreduce(len(over["id"]))
    assert total >= 300 * p.nranks


@pytest.mark.mpi
def test_exchange_by_key():
    p = Partition(3)
    n = 50
    owned = p.rank * n + np.arange(n, dtype=np.int64)
    rng = np.random.RandomState(3 + p.rank)
    want = rng.randint(0, n * p.nranks, size=40).astype(np.int64)
    data = {"key": want, "value": want * 2}
    out = exchange(p, data, "key", owned, do_all2all=True)
    assert np.all(np.isin(out["key"], owned))
    assert np.array_equal(out["value"], out["key"] * 2)
    assert p.comm.allreduce(len(out["key"])) == 40 * p.nranks


@pytest.mark.mpi(min_size=2)
def test_mpi_tmp_path_is_shared(mpi_tmp_path):
    comm = MPI.COMM_WORLD
    (mpi_tmp_path / f"rank{comm.rank}").write_text(str(comm.rank))
    comm.Barrier()
    assert sorted(f.name for f in mpi_tmp_path.iterdir()) == sorted(f"rank{r}" for r in range(comm.size))


@pytest.mark.mpi(min_size=64)
def test_needs_64_ranks():
    assert MPI.COMM_WORLD.size >= 64


@pytest.mark.mpi
@pytest.mark.xfail(reason="a decomposition of 0 dimensions is refused", strict=True)
def test_zero_dimensions():
    Partition(0)


def test_rank_dependent_failure():
    assert MPI.COMM_WORLD.rank != 1, "rank 1 fails this test on purpose"

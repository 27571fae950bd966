"""zeus's ChainManager (run unmodified under smpyrun and mpiexec): the ranks split into
two chains, each sampling with its own pool of ranks; the chains are gathered on chain 0.
zeus draws from ``random`` and ``numpy.random``, seeded per chain here."""
import random

import numpy as np
import zeus
from zeus import ChainManager


def log_prob(x):
    return -0.5 * np.sum(x ** 2)


ndim, nwalkers, nsteps = 3, 12, 40
with ChainManager(2) as cm:
    rank = cm.get_rank
    np.random.seed(10 + rank)
    random.seed(20 + rank)
    start = 0.01 * np.random.randn(nwalkers, ndim)
    sampler = zeus.EnsembleSampler(nwalkers, ndim, log_prob, pool=cm.get_pool, verbose=False)
    sampler.run_mcmc(start, nsteps, progress=False)
    chain = sampler.get_chain(flat=True, discard=10)
    chains = cm.gather(chain, root=0)
    if rank == 0:
        print("chains", len(chains), [c.shape for c in chains])
        print("means", [f"{c.mean():.12f}" for c in chains])
        print("tau", np.round(zeus.AutoCorrTime(chains[0].reshape(30, nwalkers, ndim)), 8))

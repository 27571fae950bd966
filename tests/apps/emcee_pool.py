"""emcee's EnsembleSampler with schwimmbad's MPIPool (run unmodified under smpyrun and
mpiexec): the master samples a 3-D Gaussian, the workers evaluate the log-probabilities.
Seeded, so the chain is the same in every run; only the master prints."""
import sys

import emcee
import numpy as np
from schwimmbad import MPIPool


def log_prob(x):
    return -0.5 * np.sum(x ** 2)


with MPIPool() as pool:
    if not pool.is_master():
        pool.wait()
        sys.exit(0)
    ndim, nwalkers = 3, 16
    p0 = np.random.RandomState(42).randn(nwalkers, ndim)
    sampler = emcee.EnsembleSampler(nwalkers, ndim, log_prob, pool=pool)
    sampler.random_state = np.random.RandomState(7).get_state()
    sampler.run_mcmc(p0, 50)
    chain = sampler.get_chain()
    print("shape", chain.shape)
    print(f"mean {chain.mean():.12f}")
    print(f"acc {sampler.acceptance_fraction.mean():.6f}")
    print("done")

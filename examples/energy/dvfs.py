"""SimGrid's SMPI energy example: each rank computes 1 Gflop at pstate 0, 1 and 2.

    smpyrun -np 2 --energy --platform examples/platforms/energy_platform.yaml --hostfile examples/energy/hosts.txt examples/energy/dvfs.py
"""
from mpi4py import MPI

import smpy

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
for pstate in range(smpy.get_pstate_count()):
    smpy.set_pstate(pstate)
    smpy.execute_flops(1e9)
    print(f"[{MPI.Wtime():.6f}] rank {rank}: pstate {pstate} ({smpy.host_speed():.0f} flop/s), "
          f"energy so far {smpy.get_consumed_energy():.2f} J")

"""DEAP's OneMax genetic algorithm with mpi4py.futures' MPIPoolExecutor as the map (run
unmodified as ``python -m mpi4py.futures deap_onemax.py`` at np > 1, or spawning its workers
at np 1). Every process, the workers included (they run this module as ``__worker__``),
creates the classes in ``deap.creator``; seeded, only the master prints."""
import random

import numpy
from deap import algorithms, base, creator, tools
from mpi4py.futures import MPIPoolExecutor

creator.create("FitnessMax", base.Fitness, weights=(1.0,))
creator.create("Individual", list, fitness=creator.FitnessMax)

toolbox = base.Toolbox()
toolbox.register("attr_bool", random.randint, 0, 1)
toolbox.register("individual", tools.initRepeat, creator.Individual, toolbox.attr_bool, 60)
toolbox.register("population", tools.initRepeat, list, toolbox.individual)


def eval_one_max(individual):
    return (sum(individual),)


toolbox.register("evaluate", eval_one_max)
toolbox.register("mate", tools.cxTwoPoint)
toolbox.register("mutate", tools.mutFlipBit, indpb=0.05)
toolbox.register("select", tools.selTournament, tournsize=3)

if __name__ == "__main__":
    random.seed(64)
    with MPIPoolExecutor() as ex:
        toolbox.register("map", ex.map)
        pop = toolbox.population(n=100)
        hof = tools.HallOfFame(1)
        stats = tools.Statistics(lambda ind: ind.fitness.values)
        stats.register("avg", numpy.mean)
        pop, log = algorithms.eaSimple(pop, toolbox, cxpb=0.5, mutpb=0.2, ngen=15, stats=stats,
                                       halloffame=hof, verbose=False)
        print("best", sum(hof[0]), "".join(map(str, hof[0])))
        print("avg", ["{:.4f}".format(r["avg"]) for r in log])
        print("workers", ex.num_workers)

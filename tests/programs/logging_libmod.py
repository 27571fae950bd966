"""A library module for logging_ranks.py: configures its logger when imported, as libraries
do (``--cfg=smpy/shared-modules:logging_libmod`` makes it shared, as an installed package)."""

import logging

log = logging.getLogger("libmod")
log.addHandler(logging.NullHandler())
log.setLevel(logging.ERROR)


def work(rank):
    log.warning("libmod warning from rank %d", rank)  # below the level set at import
    log.error("libmod error from rank %d", rank)

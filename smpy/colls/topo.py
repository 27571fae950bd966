"""Communication trees of Open MPI's tuned module (coll_tuned_topo.c, as in SimGrid's
coll_tuned_topo.cpp): each builder returns ``(parent, children)`` for one rank, with
``parent == -1`` at the root.

* :func:`kary_tree` — k-ary tree on ranks shifted by the root, level by level
  (``ompi_coll_tuned_topo_build_tree``); fanout 2 is the binary tree.
* :func:`in_order_bintree` — binary tree rooted at ``size - 1`` whose in-order traversal
  is the rank order (non-commutative reductions).
* :func:`bmtree` / :func:`in_order_bmtree` — binomial trees (children ``vrank ^ 2^k``).
* :func:`chain` — ``fanout`` chains hanging from the root (pipelines).
"""

from __future__ import annotations


def _pown(fanout: int, num: int) -> int:
    if num < 0:
        return 0
    return fanout ** num


def _level(fanout: int, rank: int) -> int:
    level, num = 0, 0
    while num <= rank:
        num += _pown(fanout, level)
        level += 1
    return level - 1


def kary_tree(fanout: int, size: int, rank: int, root: int) -> tuple[int, list[int]]:
    if size < 2:
        return -1, []
    shifted = (rank - root) % size
    level = _level(fanout, shifted)
    delta = _pown(fanout, level)
    children = []
    for i in range(fanout):
        child = shifted + delta * (i + 1)
        if child >= size:
            break
        children.append((child + root) % size)
    slimit = (_pown(fanout, level) - 1) // (fanout - 1) if fanout > 1 else 0
    sparent = shifted
    if sparent < fanout:
        sparent = 0
    else:
        while sparent >= slimit:
            sparent -= delta // fanout
    parent = -1 if rank == root else (sparent + root) % size
    return parent, children


def in_order_bintree(size: int, rank: int) -> tuple[int, list[int]]:
    """Rooted at ``size - 1``; children listed [left (higher ranks), right (lower ranks)]."""
    parent_out = -1
    children: list[int] = []
    myrank = rank
    parent = size - 1
    delta = 0
    while True:
        rightsize = size >> 1
        lchild = rchild = -1
        if size - 1 > 0:
            lchild = parent - 1
            if lchild > 0:
                rchild = rightsize - 1
        if myrank == parent:
            if lchild >= 0:
                children.append(lchild + delta)
            if rchild >= 0:
                children.append(rchild + delta)
            break
        if myrank > rchild:
            if myrank == lchild:
                parent_out = parent + delta
            size = size - rightsize - 1
            delta += rightsize
            myrank -= rightsize
            parent = size - 1
        else:
            if myrank == rchild:
                parent_out = parent + delta
            size = rightsize
            parent = rchild
    return parent_out, children


def bmtree(size: int, rank: int, root: int) -> tuple[int, list[int]]:
    index = (rank - root) % size
    mask = 1
    while mask <= index:
        mask <<= 1
    parent = -1
    if rank != root:
        parent = ((index ^ (mask >> 1)) + root) % size
    children = []
    while mask < size:
        remote = index ^ mask
        if remote >= size:
            break
        children.append((remote + root) % size)
        mask <<= 1
    return parent, children


def in_order_bmtree(size: int, rank: int, root: int) -> tuple[int, list[int]]:
    vrank = (rank - root) % size
    parent = -1
    children = []
    mask = 1
    while mask < size:
        remote = vrank ^ mask
        if remote < vrank:
            parent = (remote + root) % size
            break
        if remote < size:
            children.append((remote + root) % size)
        mask <<= 1
    return parent, children


def chain(fanout: int, size: int, rank: int, root: int) -> tuple[int, list[int]]:
    fanout = max(1, min(fanout, 32))
    if size - 1 < fanout:
        fanout = size - 1
    srank = (rank - root) % size
    if fanout <= 1:
        if size == 1:
            return -1, []
        parent = -1 if srank == 0 else (srank - 1 + root) % size
        nxt = [] if srank + 1 >= size else [(srank + 1 + root) % size]
        return parent, nxt
    maxchainlen = (size - 1) // fanout
    if (size - 1) % fanout:
        maxchainlen += 1
        mark = (size - 1) % fanout
    else:
        mark = fanout + 1
    if rank == root:
        nexts = [(root + 1) % size]
        for i in range(1, fanout):
            n = nexts[-1] + maxchainlen
            if i > mark:
                n -= 1
            nexts.append(n % size)
        return -1, nexts
    if srank - 1 < mark * maxchainlen:
        column = (srank - 1) // maxchainlen
        head = 1 + column * maxchainlen
        length = maxchainlen
    else:
        column = mark + (srank - 1 - mark * maxchainlen) // (maxchainlen - 1)
        head = mark * maxchainlen + 1 + (column - mark) * (maxchainlen - 1)
        length = maxchainlen - 1
    prev = 0 if srank == head else srank - 1
    nxt = [] if srank == head + length - 1 or srank + 1 >= size else [(srank + 1 + root) % size]
    return (prev + root) % size, nxt

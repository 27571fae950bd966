"""Docstrings of the public facade callables that do not carry their own, from one table.

``help(MPI.Comm.Bcast)`` should say what the call does, as under mpi4py. Most facade methods
are thin (parse the arguments, one runtime call) and their meaning is MPI's, so the text is
kept here, keyed by name: :data:`DOCS` holds the base entries, and the systematic families
are derived from them — ``I<call>`` is the nonblocking form (it returns a ``Request``),
``<call>_init`` the persistent form (a ``Prequest``; ``Start`` runs it), a lowercase
``<call>`` the same operation on any picklable Python object, ``File.Read*``/``Write*`` by
position (individual pointer, ``_at`` explicit offset, ``_shared``/``_ordered`` shared
pointer), collective (``_all``) and split (``_begin``/``_end``). :data:`BY_CLASS` overrides
an entry for one class (an intercommunicator's collectives address the remote group).

:func:`apply` runs once, at the end of ``import smpy.mpi``; a callable that has its own
docstring keeps it. ``tests/test_invariants.py`` checks that none is left without one.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["DOCS", "BY_CLASS", "doc_for", "apply"]

DOCS: dict[str, str] = {
    # communicators: information
    "Get_rank": "Return the rank of this process in the communicator (group).",
    "Get_size": "Return the number of processes in the communicator (group).",
    "rank": "Rank of this process.",
    "size": "Number of processes.",
    "Get_name": "Return the name of the object (MPI_COMM_NULL and such for null handles).",
    "Set_name": "Set the name of the object.",
    "name": "Name of the object.",
    "Get_group": "Return the group of processes of the communicator (file: of the communicator it was opened on).",
    "group": "Group of processes.",
    "Is_inter": "Return True for an intercommunicator.",
    "Is_intra": "Return True for an intracommunicator.",
    "is_inter": "True for an intercommunicator.",
    "is_intra": "True for an intracommunicator.",
    "is_topo": "True when the communicator carries a topology.",
    "Get_topology": "Return the topology kind of the communicator (CART, GRAPH, DIST_GRAPH or UNDEFINED).",
    "topology": "Topology kind (CART, GRAPH, DIST_GRAPH or UNDEFINED).",
    "Compare": "Compare two objects: IDENT, CONGRUENT (communicators), SIMILAR or UNEQUAL.",
    "Abort": "Terminate the whole MPI job with an error code (the run ends with status 'abort').",
    "Clone": "Duplicate the communicator (same as Dup).",
    "Dup": "Duplicate: a new object with the same group (communicators: a new context, attributes copied).",
    "Dup_with_info": "Duplicate the communicator, with hints.",
    "Idup": "Nonblocking duplicate of the communicator: (new communicator, request).",
    "Idup_with_info": "Nonblocking duplicate of the communicator, with hints.",
    "Free": "Free the object (the handle becomes null).",
    "free": "Free the object if it is not null or predefined.",
    "Split": "Split into disjoint communicators, one per color, ranks ordered by key (collective).",
    "Create": "Create a communicator of the processes of a group (collective over the parent).",
    "Create_intercomm": "Create an intercommunicator from two intracommunicators joined by their leaders through a peer communicator.",
    "Create_from_group": "Create a communicator from a group (collective over the group; MPI-4 sessions).",
    "Create_from_groups": "Create an intercommunicator from a local and a remote group (MPI-4 sessions).",
    "Merge": "Merge the two groups of an intercommunicator into an intracommunicator (high orders the groups).",
    "Get_remote_group": "Return the remote group of the intercommunicator.",
    "Get_remote_size": "Return the number of processes of the remote group.",
    "remote_group": "Remote group of the intercommunicator.",
    "remote_size": "Number of processes of the remote group.",
    # point-to-point
    "Send": "Send a buffer message to rank dest with a tag (standard mode); return when the buffer can be reused.",
    "Isend": "Start a standard-mode send of a buffer message to rank dest: returns a Request.",
    "Issend": "Start a synchronous-mode send: the Request completes once the matching receive has started.",
    "Ibsend": "Start a buffered-mode send (through the attached buffer): returns a Request.",
    "Irsend": "Start a ready-mode send (a matching receive must already be posted): returns a Request.",
    "Send_init": "Create a persistent standard-mode send request (a Prequest; each Start sends the buffer).",
    "Ssend_init": "Create a persistent synchronous-mode send request (a Prequest).",
    "Bsend_init": "Create a persistent buffered-mode send request (a Prequest).",
    "Rsend_init": "Create a persistent ready-mode send request (a Prequest).",
    "Recv_init": "Create a persistent receive request (a Prequest; each Start posts the receive).",
    "Irecv": "Start a receive of a buffer message from source with a tag: returns a Request.",
    "Ssend": "Send in synchronous mode: return once the matching receive has started.",
    "Bsend": "Send in buffered mode, through the buffer attached with Attach_buffer.",
    "Rsend": "Send in ready mode (a matching receive must already be posted).",
    "Recv": "Receive a buffer message from source with a tag (ANY_SOURCE, ANY_TAG match any); fill status.",
    "Sendrecv": "Send a message and receive one in a single call (no deadlock between the two).",
    "Sendrecv_replace": "Send a buffer and receive a message into the same buffer.",
    "Probe": "Block until a message matching source and tag can be received; fill status.",
    "Iprobe": "Return True when a message matching source and tag can be received (nonblocking probe).",
    "Mprobe": "Block until a matching message arrives and remove it from matching: return its Message.",
    "Improbe": "Nonblocking matched probe: a Message for a matching message, or None.",
    "send": "Send a picklable Python object to rank dest (blocking, standard mode).",
    "ssend": "Send a picklable Python object in synchronous mode.",
    "bsend": "Send a picklable Python object in buffered mode.",
    "recv": "Receive a pickled Python object; return it (buf: optional receive buffer for the pickle).",
    "sendrecv": "Send a Python object and receive one in a single call.",
    "isend": "Nonblocking send of a picklable Python object: returns a Request (wait() returns None).",
    "issend": "Nonblocking synchronous send of a picklable Python object.",
    "ibsend": "Nonblocking buffered send of a picklable Python object.",
    "irecv": "Nonblocking receive of a Python object: returns a Request whose wait() returns the object.",
    "probe": "Block until a message matching source and tag can be received; return True.",
    "iprobe": "Return True when a message matching source and tag can be received.",
    "mprobe": "Matched probe for a pickled Python object: return its Message.",
    "improbe": "Nonblocking matched probe for a pickled Python object: a Message or None.",
    "Isendrecv": "Nonblocking send and receive in one call: returns a Request.",
    "Isendrecv_replace": "Nonblocking send and receive into the same buffer: returns a Request.",
    "Psend_init": "Create a partitioned send request (MPI-4): partitions are sent as Pready marks them.",
    "Precv_init": "Create a partitioned receive request (MPI-4): Parrived tells which partitions arrived.",
    "Attach_buffer": "Attach a user buffer for buffered sends (Bsend); BUFFER_AUTOMATIC lets MPI allocate.",
    "Detach_buffer": "Detach the buffer of buffered sends, once its messages are sent; return it.",
    "Flush_buffer": "Block until every buffered message of the attached buffer has been sent.",
    "Iflush_buffer": "Nonblocking Flush_buffer: returns a Request.",
    # collectives
    "Barrier": "Block until every process of the communicator has entered the barrier.",
    "Bcast": "Broadcast a buffer from the root process to all the others.",
    "Gather": "Gather equal-size blocks from all processes into the root's receive buffer (in rank order).",
    "Gatherv": "Gather blocks of varying sizes (counts, displacements) into the root's receive buffer.",
    "Scatter": "Scatter equal-size blocks of the root's send buffer, one to each process.",
    "Scatterv": "Scatter blocks of varying sizes (counts, displacements) from the root.",
    "Allgather": "Gather equal-size blocks from all processes into every process's receive buffer.",
    "Allgatherv": "Gather blocks of varying sizes from all processes to all of them.",
    "Alltoall": "Send a distinct equal-size block to every process and receive one from each.",
    "Alltoallv": "All-to-all exchange with varying counts and displacements.",
    "Alltoallw": "All-to-all exchange with varying counts, byte displacements and datatypes.",
    "Reduce": "Reduce the send buffers of all processes with op into the root's receive buffer.",
    "Allreduce": "Reduce the send buffers of all processes with op; every process gets the result.",
    "Reduce_scatter": "Reduce element-wise with op, then scatter the result in blocks of recvcounts.",
    "Reduce_scatter_block": "Reduce element-wise with op, then scatter the result in equal blocks.",
    "Scan": "Inclusive prefix reduction: process i gets the reduction of processes 0..i.",
    "Exscan": "Exclusive prefix reduction: process i gets the reduction of processes 0..i-1.",
    "barrier": "Barrier synchronization (lowercase form: same as Barrier).",
    "bcast": "Broadcast a picklable Python object from root; return it on every process.",
    "gather": "Gather Python objects to root: a list on the root, None elsewhere.",
    "scatter": "Scatter a sequence of Python objects from root (one item per process); return this process's item.",
    "allgather": "Gather Python objects from all processes; return the list on every process.",
    "alltoall": "Exchange a sequence of Python objects: item j goes to process j; return the received list.",
    "reduce": "Reduce Python objects with op (default SUM) to root; the result on the root, None elsewhere.",
    "allreduce": "Reduce Python objects with op (default SUM); return the result on every process.",
    "scan": "Inclusive prefix reduction of Python objects.",
    "exscan": "Exclusive prefix reduction of Python objects (None on process 0).",
    "Neighbor_allgather": "Gather one block from each incoming neighbor of the topology.",
    "Neighbor_allgatherv": "Gather blocks of varying sizes from the incoming neighbors.",
    "Neighbor_alltoall": "Send a distinct block to each outgoing neighbor and receive one from each incoming neighbor.",
    "Neighbor_alltoallv": "Neighborhood all-to-all with varying counts and displacements.",
    "Neighbor_alltoallw": "Neighborhood all-to-all with varying counts, byte displacements and datatypes.",
    "neighbor_allgather": "Gather Python objects from the incoming neighbors; return the list.",
    "neighbor_alltoall": "Exchange Python objects with the neighbors (one per outgoing neighbor); return the received list.",
    # fault tolerance (ULFM)
    "Revoke": "Revoke the communicator (ULFM; MPICH does not provide MPI_Comm_revoke: NotImplementedError).",
    "Is_revoked": "Return whether the communicator is revoked (ULFM).",
    "Get_failed": "Return the group of processes known to have failed (ULFM).",
    "Ack_failed": "Acknowledge failed processes; return how many are acknowledged (ULFM).",
    "Agree": "Agree on a flag: the bitwise AND of the flags of all processes (ULFM).",
    "Iagree": "Nonblocking Agree: the result is stored in the one-int buffer flag (ULFM).",
    "Shrink": "Create a communicator of the processes that have not failed (ULFM).",
    "Ishrink": "Nonblocking Shrink: (new communicator, request) (ULFM).",
    # topologies
    "Create_cart": "Create a Cartesian topology communicator (dims, periods; reorder).",
    "Create_graph": "Create a graph topology communicator from index and edges arrays.",
    "Create_dist_graph": "Create a distributed graph topology communicator from edges given by any process.",
    "Create_dist_graph_adjacent": "Create a distributed graph topology from each process's own neighbors.",
    "Cart_map": "Return the rank this process would have in a Cartesian topology (UNDEFINED when not in it).",
    "Graph_map": "Return the rank this process would have in a graph topology (UNDEFINED when not in it).",
    "Get_dim": "Return the number of dimensions of the Cartesian topology.",
    "dim": "Number of dimensions.",
    "ndim": "Number of dimensions.",
    "Get_topo": "Return the topology (Cartesian: dims, periods, coords; graph: index, edges).",
    "topo": "Topology information.",
    "dims": "Dimensions (Cartesian) or (nnodes, nedges) (graph).",
    "periods": "Periodicity of each dimension.",
    "coords": "Coordinates of this process.",
    "Get_cart_rank": "Return the rank of the process at the given coordinates.",
    "Get_coords": "Return the coordinates of a rank.",
    "Shift": "Return (source, dest) ranks for a shift along a direction by disp (PROC_NULL off a non-periodic edge).",
    "Sub": "Partition the Cartesian topology into sub-grids of the kept dimensions.",
    "Get_dims": "Return (number of nodes, number of edges) of the graph topology.",
    "Get_neighbors": "Return the neighbors of a rank in the graph topology.",
    "Get_neighbors_count": "Return the number of neighbors of a rank in the graph topology.",
    "Get_dist_neighbors": "Return (sources, destinations, weights) of this process in the distributed graph.",
    "Get_dist_neighbors_count": "Return (indegree, outdegree, weighted) of this process in the distributed graph.",
    "nnodes": "Number of nodes of the graph.",
    "nedges": "Number of edges of the graph.",
    "index": "Index array of the graph.",
    "edges": "Edges array of the graph.",
    "neighbors": "Neighbors of this process.",
    "nneighbors": "Number of neighbors of this process.",
    "indegree": "Number of incoming neighbors.",
    "outdegree": "Number of outgoing neighbors.",
    "inedges": "Incoming neighbors.",
    "outedges": "Outgoing neighbors.",
    "inoutedges": "Incoming and outgoing neighbors.",
    # groups
    "Incl": "Return the group of the listed ranks, in that order.",
    "Excl": "Return the group without the listed ranks.",
    "Range_incl": "Return the group of the ranks in the (first, last, stride) ranges.",
    "Range_excl": "Return the group without the ranks in the (first, last, stride) ranges.",
    "Union": "Return the union of two groups (the first's order, then the second's new members).",
    "Intersection": "Return the members of the first group that are also in the second.",
    "Intersect": "Return the members of the first group that are also in the second.",
    "Difference": "Return the members of the first group that are not in the second.",
    "Translate_ranks": "Translate ranks of this group into ranks of another group (UNDEFINED if absent).",
    # requests
    "Wait": "Wait for the request to complete; fill status.",
    "Test": "Return True if the request is complete (then it is freed, as by Wait); fill status.",
    "Waitall": "Wait for all requests to complete.",
    "Testall": "Return True if all requests are complete.",
    "Waitany": "Wait for any one request to complete; return its index.",
    "Testany": "Test for completion of any one request: (index, flag).",
    "Waitsome": "Wait for at least one request to complete; return the indices of the completed ones.",
    "Testsome": "Return the indices of the completed requests (None when there is no active request).",
    "Get_status": "Return True if the request is complete, without freeing it; fill status.",
    "Get_status_all": "Return True if all requests are complete, without freeing them.",
    "Get_status_any": "Return (index, flag) for any complete request, without freeing it.",
    "Get_status_some": "Return the indices of the complete requests, without freeing them.",
    "Cancel": "Cancel a pending communication request.",
    "wait": "Wait for the request; return the received Python object (None for sends).",
    "test": "Test the request: (flag, received object or None).",
    "waitall": "Wait for all requests; return the list of received objects.",
    "testall": "Test all requests: (flag, list of objects or None).",
    "waitany": "Wait for any request: (index, object).",
    "testany": "Test for any request: (index, flag, object).",
    "waitsome": "Wait for some requests: (indices, objects).",
    "testsome": "Test for some requests: (indices, objects).",
    "get_status": "Return True if the request is complete, without freeing it.",
    "get_status_all": "Return True if all requests are complete, without freeing them.",
    "get_status_any": "Return (index, flag) for any complete request, without freeing it.",
    "get_status_some": "Return the indices of the complete requests, without freeing them.",
    "cancel": "Cancel the request.",
    "Start": "Start a persistent (or generalized) request.",
    "Startall": "Start a list of persistent requests.",
    "Pready": "Mark a partition of a partitioned send as ready to be sent.",
    "Pready_list": "Mark the listed partitions as ready.",
    "Pready_range": "Mark the partitions from low to high as ready.",
    "Parrived": "Return True if the given partition of a partitioned receive has arrived.",
    "Complete": "Notify that the generalized request has completed.",
    "complete": "Notify that the generalized request has completed (lowercase form).",
    # messages
    "Message.Recv": "Receive the matched message into a buffer (blocking).",
    "Message.Irecv": "Receive the matched message into a buffer (nonblocking): returns a Request.",
    "Message.recv": "Receive the matched pickled Python object; return it.",
    "Message.irecv": "Nonblocking receive of the matched Python object: returns a Request.",
    "Message.Probe": "Blocking matched probe on a communicator: return the Message.",
    "Message.Iprobe": "Nonblocking matched probe on a communicator: a Message or None.",
    "Message.probe": "Matched probe for a Python object: return the Message.",
    "Message.iprobe": "Nonblocking matched probe for a Python object: a Message or None.",
    # status
    "Get_source": "Return the source of the message.",
    "Set_source": "Set the source.",
    "Get_tag": "Return the tag of the message.",
    "Set_tag": "Set the tag.",
    "Get_error": "Return the error code.",
    "Set_error": "Set the error code.",
    "Get_count": "Return the number of elements of the datatype received (UNDEFINED if not a whole number).",
    "Set_elements": "Set the number of elements received (of a datatype).",
    "Is_cancelled": "Return True if the request was cancelled.",
    "Set_cancelled": "Set the cancelled flag.",
    "source": "Message source.",
    "tag": "Message tag.",
    "error": "Error code.",
    "count": "Byte count.",
    "cancelled": "Cancelled flag.",
    # handles
    "py2f": "Return the Fortran handle (MPICH's integer handle).",
    "f2py": "Return the object of a Fortran handle.",
    "toint": "Return the integer handle.",
    "fromint": "Return the object of an integer handle.",
    "fromhandle": "Return the object of an MPI handle.",
    "handle": "MPI handle (MPICH's handle value, as an unsigned integer).",
    # info
    "Info.Create": "Create a new info object (optionally from a mapping or a sequence of pairs).",
    "Create_env": "Create an info object with the keys MPI defines for the environment (command, argv, maxprocs...).",
    "Get": "Return the value of a key, or None.",
    "Set": "Set the value of a key.",
    "Delete": "Delete a key (files: delete the file).",
    "Get_nkeys": "Return the number of keys.",
    "Get_nthkey": "Return the n-th key.",
    "get": "Return the value of a key, or a default.",
    "keys": "Return the list of keys.",
    "values": "Return the list of values.",
    "items": "Return the list of (key, value) pairs.",
    "update": "Update from a mapping and keyword arguments.",
    "pop": "Remove a key and return its value (or the default).",
    "popitem": "Remove and return a (key, value) pair.",
    "copy": "Return a duplicate of the info object.",
    "clear": "Remove every key.",
    "Get_info": "Return the hints in use, as an Info object.",
    "Set_info": "Set new hints.",
    "info": "Hints (an Info object).",
    # environment
    "Init": "Initialize MPI (mpi4py initializes at import unless mpi4py.rc.initialize is False).",
    "Init_thread": "Initialize MPI with a thread support level; return the level provided.",
    "Finalize": "Terminate MPI (sessions: finalize the session).",
    "Is_initialized": "Return True once MPI has been initialized.",
    "Is_finalized": "Return True once MPI has been finalized.",
    "Query_thread": "Return the thread support level provided.",
    "Is_thread_main": "Return True when called from the thread that initialized MPI.",
    "Get_version": "Return the MPI standard version (major, minor).",
    "Get_library_version": "Return the MPI library version string (smpy's, in MPICH's format).",
    "Get_processor_name": "Return the name of this process's simulated host.",
    "Get_error_string": "Return the error string of an error code.",
    "Get_error_class": "Return the error class of an error code.",
    "Wtick": "Return the resolution of Wtime (s).",
    "Pcontrol": "Control profiling (accepted; no effect).",
    "get_vendor": "Return the MPI vendor name and version: ('MPICH', (major, minor, micro)) as smpy emulates it.",
    # sessions
    "Create_group": "Create a group from a process set name (sessions), or a communicator from a group over its members.",
    "Get_num_psets": "Return the number of process sets.",
    "Get_nth_pset": "Return the name of the n-th process set.",
    "Get_pset_info": "Return the info of a process set (mpi_size).",
    # files
    "Open": "Open a file collectively over a communicator with an access mode (MODE_*).",
    "Close": "Close the file (collective).",
    "Get_amode": "Return the access mode.",
    "amode": "Access mode.",
    "Get_atomicity": "Return the atomicity mode.",
    "Set_atomicity": "Set the atomicity mode (collective).",
    "atomicity": "Atomicity mode.",
    "Get_byte_offset": "Return the absolute byte position of a view-relative offset.",
    "Get_position": "Return the individual file pointer (in etypes of the view).",
    "Get_position_shared": "Return the shared file pointer (in etypes of the view).",
    "Set_size": "Resize the file (collective).",
    "Preallocate": "Preallocate storage for the file (collective).",
    "Get_type_extent": "Return the extent of a datatype in the file (native representation).",
    "Get_view": "Return the view: (displacement, etype, filetype, datarep).",
    "Set_view": "Set the view: displacement, etype, filetype and data representation (collective).",
    "Seek": "Move the individual file pointer (SEEK_SET, SEEK_CUR, SEEK_END).",
    "Seek_shared": "Move the shared file pointer (collective).",
    "Sync": "Synchronize: flush written data (files) / public and private window copies (windows).",
    "group_size": "Number of processes of the file's group.",
    "group_rank": "Rank of this process in the file's group.",
}

#: per-class entries where the same name means something else
BY_CLASS: dict[str, dict[str, str]] = {
    "Intercomm": {
        "Barrier": "Block until every process of both groups has entered the barrier.",
        "Bcast": "Broadcast from the root (root=ROOT) of one group to every process of the other group.",
        "Gather": "Gather blocks from every process of the remote group to the root (root=ROOT).",
        "Scatter": "Scatter blocks from the root (root=ROOT) to the processes of the remote group.",
        "Allgather": "Each group gathers the blocks of the other group.",
        "Allreduce": "Each group receives the reduction of the other group's send buffers.",
        "Reduce": "Reduce the remote group's send buffers to the root (root=ROOT).",
        "Create": "Create an intercommunicator of the processes of a local group (collective).",
        "Split": "Split both groups by color into new intercommunicators (collective).",
    },
    "Group": {"Get_size": "Return the number of processes in the group.",
              "Get_rank": "Return the rank of this process in the group (UNDEFINED if not a member).",
              "Compare": "Compare two groups: IDENT, SIMILAR or UNEQUAL.",
              "Dup": "Duplicate the group.", "Free": "Free the group."},
    "Info": {"Dup": "Duplicate the info object.", "Free": "Free the info object."},
    "Session": {"Attach_buffer": "Attach a buffer for buffered sends on communicators of the session.",
                "Detach_buffer": "Detach the session's buffer.",
                "Flush_buffer": "Flush the session's buffered messages.",
                "Iflush_buffer": "Nonblocking flush of the session's buffered messages.",
                "Get_info": "Return the hints of the session."},
    "File": {"Get_size": "Return the size of the file in bytes.", "Delete": "Delete a file by name.",
             "size": "Size of the file in bytes."},
    "Grequest": {"Start": "Create and start a generalized request from query, free and cancel functions."},
}

_FILE_POS = {"": "at the individual file pointer", "_at": "at an explicit offset",
             "_shared": "at the shared file pointer", "_ordered": "in rank order, at the shared file pointer"}


def _file_doc(name: str) -> str | None:
    """``[I](Read|Write)[_at|_shared|_ordered][_all][_begin|_end]``."""
    nb = name.startswith("I") and name[1:2] in ("r", "w")
    base = name[1:].capitalize() if nb else name
    verb = "read" if base.startswith("Read") else "write" if base.startswith("Write") else None
    if verb is None:
        return None
    rest = base[len("Read") if verb == "read" else len("Write"):]
    split = ""
    for suffix, what in (("_begin", "start a split collective "), ("_end", "finish a split collective ")):
        if rest.endswith(suffix):
            rest, split = rest[: -len(suffix)], what
    coll = rest.endswith("_all") or rest == "_ordered"
    rest = rest[: -len("_all")] if rest.endswith("_all") else rest
    if rest not in _FILE_POS:
        return None
    kind = split or ("nonblocking " if nb else "") + ("collective " if coll and not split else "")
    text = f"{kind}{verb} {_FILE_POS[rest]}"
    return text[0].upper() + text[1:] + (" (returns a Request)." if nb else ".")


def doc_for(cls_name: str, name: str) -> str | None:
    """The docstring of ``cls_name.name`` from the table, or None."""
    table = BY_CLASS.get(cls_name, {})
    if name in table:
        return table[name]
    if f"{cls_name}.{name}" in DOCS:
        return DOCS[f"{cls_name}.{name}"]
    if cls_name == "File":
        text = _file_doc(name)
        if text:
            return text
    if name in DOCS:
        return DOCS[name]
    stem = name[1:2].upper() + name[2:]
    if name.startswith("I") and stem in DOCS | table:
        base = table.get(stem) or DOCS[stem]
        return "Nonblocking form of " + stem + " (returns a Request): " + base[0].lower() + base[1:]
    if name.endswith("_init"):
        stem = name[: -len("_init")]
        base = table.get(stem) or DOCS.get(stem)
        if base:
            return "Persistent form of " + stem + " (returns a Prequest; Start runs it): " + base[0].lower() + base[1:]
    return None


def _members(cls: type) -> list[tuple[type, str, Any]]:
    out = []
    for klass in cls.__mro__:
        if not klass.__module__.startswith("smpy."):
            continue
        for name, value in vars(klass).items():
            if not name.startswith("_"):
                out.append((klass, name, value))
    return out


def _set(value: Any, text: str) -> None:
    target = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
    try:
        target.__doc__ = text
    except (AttributeError, TypeError):
        pass


def _lacks(value: Any) -> bool:
    target = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
    if not (isinstance(target, property) or callable(target)):
        return False
    doc = getattr(target, "__doc__", None)
    return not (doc and doc.strip())


def apply(namespace: dict[str, Any]) -> None:
    """Give every public class member and function of ``namespace`` (smpy.mpi's) that has
    no docstring the table's, looked up by the class that uses it."""
    for obj_name, obj in list(namespace.items()):
        if obj_name.startswith("_"):
            continue
        if isinstance(obj, type) and obj.__module__.startswith("smpy."):
            for klass, name, value in _members(obj):
                if _lacks(value):  # by the class defining it: an inherited method keeps its meaning
                    text = doc_for(klass.__name__, name)
                    if text:
                        _set(value, text)
        elif inspect.isfunction(obj) or callable(obj) and getattr(obj, "__module__", "").startswith("smpy."):
            if _lacks(obj):
                text = doc_for("", obj_name)
                if text:
                    _set(obj, text)

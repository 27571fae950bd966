# ruff: noqa: F401, F403
"""smpy's ``mpi4py.MPI``: the public facade. Under smpyrun, ``from mpi4py import MPI``
returns this module. One module per MPI object; no simulation logic here."""

from __future__ import annotations

from smpy.mpi import docstrings as _docstrings
from smpy.mpi.buffer import *
from smpy.mpi.comm import COMM_NULL, COMM_SELF, COMM_WORLD, Comm, Intracomm
from smpy.mpi.comm_inter import *
from smpy.mpi.comm_mgmt import *
from smpy.mpi.comm_persist import *
from smpy.mpi.comm_topo import *
from smpy.mpi.datatype import *  # noqa: F403 - every predefined datatype constant
from smpy.mpi.datatype import Datatype, _datatype_create, _datatype_decode, _typealign, _typecode
from smpy.mpi.environment import (
    SUBVERSION,
    VERSION,
    Finalize,
    Get_abi_fortran_info,
    Get_abi_info,
    Get_abi_version,
    Get_error_class,
    Get_error_string,
    Get_hw_resource_info,
    Get_library_version,
    Get_processor_name,
    Get_version,
    Init,
    Init_thread,
    Is_finalized,
    Is_initialized,
    Is_thread_main,
    Pcontrol,
    Query_thread,
    Wtick,
    Wtime,
    get_vendor,
)
from smpy.mpi.errhandler import *
from smpy.mpi.file import *
from smpy.mpi.group import GROUP_EMPTY, GROUP_NULL, Group
from smpy.mpi.info import INFO_ENV, INFO_NULL, MAX_INFO_KEY, MAX_INFO_VAL, Info
from smpy.mpi.intercomm import *
from smpy.mpi.message import MESSAGE_NO_PROC, MESSAGE_NULL, Message
from smpy.mpi.msgpickle import Pickle, pickle
from smpy.mpi.msgspec import BOTTOM, IN_PLACE
from smpy.mpi.op import *  # noqa: F403 - every predefined op constant
from smpy.mpi.op import Op
from smpy.mpi.request import REQUEST_NULL, Grequest, Prequest, Request
from smpy.mpi.sentinels import BottomType, BufferAutomaticType, InPlaceType
from smpy.mpi.session import *
from smpy.mpi.spawn import Close_port, Lookup_name, Open_port, Publish_name, Unpublish_name
from smpy.mpi.status import F_ERROR, F_SOURCE, F_STATUS_SIZE, F_TAG, Status
from smpy.mpi.topo import *
from smpy.mpi.win import *
from smpy.runtime.constants import (
    ANY_SOURCE,
    ANY_TAG,
    CONGRUENT,
    IDENT,
    KEYVAL_INVALID,
    PROC_NULL,
    ROOT,
    SIMILAR,
    THREAD_FUNNELED,
    THREAD_MULTIPLE,
    THREAD_SERIALIZED,
    THREAD_SINGLE,
    UNDEFINED,
    UNEQUAL,
)
from smpy.runtime.constants import KEYVAL_APPNUM as APPNUM
from smpy.runtime.constants import KEYVAL_IO as IO
from smpy.runtime.constants import KEYVAL_LASTUSEDCODE as LASTUSEDCODE
from smpy.runtime.constants import KEYVAL_TAG_UB as TAG_UB
from smpy.runtime.constants import KEYVAL_UNIVERSE_SIZE as UNIVERSE_SIZE
from smpy.runtime.constants import KEYVAL_WTIME_IS_GLOBAL as WTIME_IS_GLOBAL
from smpy.runtime.errors import *  # noqa: F403 - ERR_* error classes
from smpy.runtime.errors import MPIException as Exception  # noqa: A001 - mpi4py's name

_docstrings.apply(globals())  # the table's docstrings where a public callable has none
__all__ = [n for n in dir() if not n.startswith("_")]

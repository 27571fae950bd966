"""MPI constants with MPICH's values (so programs that print or compare them agree)."""

ANY_SOURCE = -2
ANY_TAG = -1
PROC_NULL = -1
ROOT = -3
UNDEFINED = -32766
TAG_UB = 536870911  # MPICH's MPI_TAG_UB attribute value (2**29 - 1)

# matching channels of a communicator: user point-to-point vs collectives (like MPI's
# separate context ids), so that ANY_TAG receives never see collective traffic
P2P = 0
COLL = 1

# thread levels
THREAD_SINGLE = 0
THREAD_FUNNELED = 1
THREAD_SERIALIZED = 2
THREAD_MULTIPLE = 3

# comparison results
IDENT = 0
CONGRUENT = 1
SIMILAR = 2
UNEQUAL = 3

#: bytes added to every message on the wire (SMPI's envelope)
ENVELOPE_BYTES = 16

# predefined attribute keyvals (MPICH's handle values)
KEYVAL_TAG_UB = 0x64400001
KEYVAL_IO = 0x64400005
KEYVAL_WTIME_IS_GLOBAL = 0x64400007
KEYVAL_UNIVERSE_SIZE = 0x64400009
KEYVAL_LASTUSEDCODE = 0x6440000B
KEYVAL_APPNUM = 0x6440000D
KEYVAL_INVALID = 0x24000000

"""Error classes and edge cases of requests (printed; compared with real MPICH)."""

import pickle
import sys

from mpi4py import MPI

comm = MPI.COMM_SELF


def out(*values):
    sys.stdout.write(" ".join(str(v) for v in values) + "\n")


def err(name, fn):
    try:
        fn()
        out(name, "ok")
    except MPI.Exception as e:
        out(name, "error", e.Get_error_class())


err("bsend_no_buffer", lambda: comm.Bsend(b"abc", 0, 0))
buf = bytearray(10 + MPI.BSEND_OVERHEAD)
MPI.Attach_buffer(buf)
err("bsend_too_big", lambda: comm.Bsend(bytearray(100), 0, 0))
err("bsend_fits", lambda: comm.Bsend(bytearray(10), 0, 0))
comm.Recv(bytearray(10), 0, 0)
out("detach", MPI.Detach_buffer() is buf)
err("bsend_proc_null", lambda: comm.Bsend(b"abc", MPI.PROC_NULL, 0))
err("precv_any_source", lambda: comm.Precv_init(bytearray(4), 1))
p = comm.Psend_init(bytearray(4), 2, 0, 0)
p.Start()
err("pready_out_of_range", lambda: p.Pready(5))
out("message_pickle", pickle.loads(pickle.dumps(MPI.MESSAGE_NULL)) is MPI.MESSAGE_NULL)
out("request_pickle", pickle.loads(pickle.dumps(MPI.REQUEST_NULL)) is MPI.REQUEST_NULL)
try:
    pickle.dumps(comm.Send_init(b"", MPI.PROC_NULL))
except ValueError as e:
    out("prequest_pickle", e)
s = MPI.Status()
s.source, s.tag, s.error = 1, 2, 3
s.Set_elements(MPI.INT, 5)
s2 = pickle.loads(pickle.dumps(s))
out("status_pickle", s2.source, s2.tag, s2.error, s2.Get_count(MPI.INT), s2.Get_elements(MPI.BYTE))
try:
    MPI.Prequest(MPI.Grequest.Start())
except TypeError:
    out("prequest_of_grequest TypeError")
out("message_iprobe_none", MPI.Message.iprobe(comm) is None)
r = comm.isend("hi", 0, 3)
m = MPI.Message.probe(comm, 0, 3)
out("message_probe", m.recv(), bool(m))
r.wait()
g = MPI.Grequest.Start()
out("greq_handle", MPI.Grequest.fromhandle(g.handle) == g, MPI.Request.f2py(g.py2f()) == g)
g.Complete()
g.Wait()
copy = pickle.loads(pickle.dumps(MPI.Message(MPI.MESSAGE_NO_PROC)))
out("message_copy_pickle", copy is not MPI.MESSAGE_NO_PROC, copy == MPI.MESSAGE_NO_PROC)

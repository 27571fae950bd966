"""The hot-path constructors that inline their base classes' ``__init__`` (p2p requests,
network flows: issue 24) set every inherited field exactly as the base constructors do."""

from __future__ import annotations

from types import SimpleNamespace

from smpy.kernel.activity import Activity, RateActivity
from smpy.kernel.engine import Engine
from smpy.kernel.sharing import SharedActivity
from smpy.network.links import Link
from smpy.network.model import Flow, NetworkConfig, NetworkModel, _RouteInfo
from smpy.runtime.p2p import RECV, SEND, RecvRequest, Request, SendRequest


def _slots(*classes: type) -> list[str]:
    return [n for c in classes for n in c.__slots__ if n != "__weakref__"]


def _same(a: object, b: object, names: list[str]) -> None:
    for n in names:
        va, vb = getattr(a, n), getattr(b, n)
        assert type(va) is type(vb) and va == vb, f"{type(a).__name__}.{n}: {va!r} != {vb!r}"
        if isinstance(va, list):
            assert va is not vb  # a list of its own


def test_requests_set_what_request_and_activity_set() -> None:
    engine = Engine()
    engine.now = 2.5
    owner = SimpleNamespace(world=SimpleNamespace(engine=engine))
    comm = object()
    for cls, kind in ((SendRequest, SEND), (RecvRequest, RECV)):
        flat = cls(owner, comm, 1, "MPI_X", 3, 7)
        ref = cls.__new__(cls)
        Request.__init__(ref, owner, kind, comm, 1, "MPI_X", 3, 7)
        _same(flat, ref, _slots(Activity, Request)[:-1])  # all but "polled" (never set at init)
        assert not hasattr(flat, "polled") and not hasattr(ref, "polled")
        assert flat.engine is engine and flat.owner is owner and flat.comm is comm


def test_flow_sets_what_shared_activity_sets() -> None:
    engine = Engine()
    engine.now = 1.0
    model = NetworkModel(engine, [Link("l", 1e9, 1e-6)], NetworkConfig())
    info = _RouteInfo(2e-6, 3.0, 5e8, ((object(), 1.0),))
    flat = Flow(model, (), 100.0, info, 0.9, 2.0)
    ref = Flow.__new__(Flow)
    SharedActivity.__init__(ref, model, 100.0, 3.0, 5e8, info.uses, 0.9)
    _same(flat, ref, _slots(Activity, RateActivity, SharedActivity))
    assert flat.route == () and flat.size == 100.0 and flat.latency == 4e-6


def test_executions_set_what_rate_activity_sets() -> None:
    from smpy.cpu.host import Host
    from smpy.cpu.model import CpuModel, Exec

    engine = Engine()
    engine.now = 1.25
    host = Host("h", 2, [1e9])
    model = CpuModel(engine, [host])
    flat = Exec(model, host, 5e6, 3e8, "compute", 0.25)
    ref = Exec.__new__(Exec)
    RateActivity.__init__(ref, engine, 5e6)
    ref.model, ref.host, ref.bound, ref.label, ref.memory = model, host, 3e8, "compute", 0.25
    _same(flat, ref, _slots(Activity, RateActivity, Exec))

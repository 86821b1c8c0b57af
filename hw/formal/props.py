"""Named formal statements and hand-written history registers (Amaranth 0.5 has no ``Past``/``Stable``).

A :class:`Props` collects the assertions, assumptions and covers of one formal wrapper under names: each
statement's Amaranth message is its name, which the RTLIL carries as the ``$check`` cell's ``FORMAT``
(hw/formal/sby.py renames the cell after it, so that a failure is reported by name). Names are unique in a
wrapper (a :class:`ValueError` otherwise).

History: :meth:`Props.past` is a register of a value one cycle old; :attr:`Props.past_valid` is 0 in the
first cycle (when ``past`` holds only the register's init) and 1 after, so a property over ``past`` is
written ``~props.past_valid | ...``.
"""

from amaranth.hdl import Assert, Assume, Cover, Fragment, Signal, Value

__all__ = ["Props", "internals"]


class Props:
    """The named statements of one wrapper, added to module ``m`` in ``domain`` (its history registers)."""

    KINDS = ("assert", "assume", "cover")

    def __init__(self, m, domain: str = "sync"):
        self._m, self._domain = m, domain
        self._names: dict[str, str] = {}
        self.past_valid = Signal(name="past_valid")
        m.d[domain] += self.past_valid.eq(1)

    @property
    def names(self) -> dict[str, str]:
        """name -> kind ("assert", "assume" or "cover"), in the order added."""
        return dict(self._names)

    def _add(self, kind, name, cond, stmt):
        if not name.isidentifier():
            raise ValueError(f"property name: must be an identifier, got {name!r}")
        if name in self._names:
            raise ValueError(f"property name: {name!r} is used twice")
        self._names[name] = kind
        self._m.d.comb += stmt(Value.cast(cond), name)

    def asserts(self, name: str, cond, when=None, reach=None) -> None:
        """What the design must do (proved): ``cond``, or with ``when`` "``cond`` whenever ``when``".
        Its reachability is a Cover named ``<name>_reached`` (:meth:`reach_of`) of ``reach`` (default
        ``when``): the case the assertion is about happens."""
        if when is not None:
            cond = ~Value.cast(when) | Value.cast(cond)
        self._add("assert", name, cond, Assert)
        reach = when if reach is None else reach
        if reach is not None:
            self._add("cover", self.reach_of(name), reach, Cover)

    @staticmethod
    def reach_of(name: str) -> str:
        """The name of the Cover that shows assertion ``name``'s antecedent reachable."""
        return f"{name}_reached"

    def assumes(self, name: str, cond) -> None:
        """What the environment does (assumed)."""
        self._add("assume", name, cond, Assume)

    def covers(self, name: str, cond) -> None:
        """A state the proof must show reachable (so that the assertions are not passed vacuously)."""
        self._add("cover", name, cond, Cover)

    def past(self, value, name: str | None = None) -> Signal:
        """A register holding ``value`` one cycle ago (its init 0; see :attr:`past_valid`)."""
        value = Value.cast(value)
        reg = Signal(len(value), name=name or "past")
        self._m.d[self._domain] += reg.eq(value)
        return reg

    def stalled(self, valid, ready, name: str) -> Signal:
        """A register: a transfer was offered and not taken in the cycle before (``valid`` without
        ``ready``)."""
        return self.past(Value.cast(valid) & ~Value.cast(ready), name=f"{name}_stalled")

    def hold_rules(self, valid, ready, payload, name: str):
        """The AXI rule "VALID, once asserted, stays asserted until the handshake, and its payload stays
        with it" (IHI 0022, A3.2.1) as two conditions: (valid held, payload stable), each 1 when kept,
        and the antecedent of both (a transfer waited in the cycle before)."""
        stalled = self.stalled(valid, ready, name)
        before = self.past(payload, name=f"{name}_before")
        valid = Value.cast(valid)
        return ~stalled | valid, ~stalled | ~valid | (Value.cast(payload) == before), stalled


def internals(elaboratable):
    """``elaboratable`` elaborated (a Fragment, to be added as the submodule in its place) and the
    registers and wires its statements drive (under If / Switch too: a Switch's ``cases``), by name
    (``sub.name`` inside a submodule; a name Amaranth could not trace is ``$signal``, unusable): the
    invariants k-induction needs are about the primitives' own toggles and stages, which are locals
    of their ``elaborate`` (Fragment's ``statements`` and ``subfragments``: Amaranth internals, pinned in
    tests/test_private_api.py)."""
    frag = Fragment.get(elaboratable, None)
    found = {}

    def assigned(stmts, prefix):
        for stmt in stmts:
            if isinstance(getattr(stmt, "lhs", None), Signal):
                found[prefix + stmt.lhs.name] = stmt.lhs
            for _, body, _ in getattr(stmt, "cases", ()):      # the statements under If / Switch
                assigned(body, prefix)

    def walk(f, prefix):
        for stmts in f.statements.values():
            assigned(stmts, prefix)
        for sub, name, _ in f.subfragments:
            walk(sub, f"{prefix}{name}.")
    walk(frag, "")
    return frag, found

"""The XRT backend (host/xrt/) against the stand-in pyxrt (sim/fake_pyxrt.py) and its register-level
kernel model (sim/kernel_model.py): the same scatter, registers, arguments and gather a card sees,
checked against the golden model.

The HBM placement is the shared hw.model.layout.HbmLayout (at least 4 lanes, 2^k >= C/2).
"""

import json
import sys
import time

import numpy as np
import pytest

from nantucket.host import xrt as X
from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.record import RECORD_BYTES, RECORD_WORDS
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin
from nantucket.sim.kernel_model import HbmModel, KernelModel, MemoryFault
from nantucket.hw.model.layout import HbmLayout as Layout

P = F.P
EDGES = [0, 1, 2, P - 1, P - 2, 2**32 - 1, 2**32, 2**63, 2**64 - 2**32]
NONCANON = [P, P + 1, 2**64 - 1, 2**64 - 2]            # the host must reduce these
PARAMS = [BuildParams(lanes=4, log_core=2, channels=2), BuildParams(lanes=4, log_core=3, channels=4),
          BuildParams(lanes=8, log_core=4, channels=8), BuildParams(lanes=4, log_core=4, channels=32)]
SMALL = BuildParams(lanes=4, log_core=3, channels=4)


def points(n, seed=0, edges=True):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    if edges:
        vals = np.array(EDGES + NONCANON, dtype=np.uint64)
        x[:min(n, vals.size)] = vals[:n]
    return x


def make(params, tmp_path, xclbin_params=None, backend_params="same", **knobs):
    fake = FakePyxrt(**knobs)
    path = write_xclbin(tmp_path / "nantucket.xclbin", xclbin_params or params)
    bp = params if backend_params == "same" else backend_params
    return fake, X.XrtBackend(bp, xclbin=path, pyxrt_module=fake,
                              timeout_s=1.0, progress=False)


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: p.tag())
def test_forward_native_size_matches_the_golden_model(params, tmp_path):
    fake, be = make(params, tmp_path)
    for seed in range(2):
        x = points(params.n_points, seed)
        y = be.run(x)
        assert y.dtype == np.uint64 and np.array_equal(y, ntt_model.ntt(x))
    assert fake.kernel_model.runs == 2
    assert set(be.timings) == {"to-device", "kernel", "from-device"}
    assert all(t >= 0 for t in be.timings.values())


@pytest.mark.parametrize("inverse", [False, True], ids=["forward", "inverse"])
def test_every_smaller_size_and_the_inverse(tmp_path, inverse):
    params = SMALL
    _, be = make(params, tmp_path)
    for log_n in range(0, params.log_n + 1):
        x = points(1 << log_n, seed=log_n)
        want = ntt_model.dft_naive([int(v) for v in x], inverse=inverse)
        assert be.run(x, inverse=inverse).tolist() == want, f"n = 2^{log_n}"


def test_adapter_talks_to_xrt_like_a_card(tmp_path):
    params = SMALL
    fake, be = make(params, tmp_path)
    layout = Layout(params)
    setup = list(fake.calls)
    assert setup[:3] == ["device(0)", "load_xclbin(nantucket.xclbin)", "kernel(nantucket)"]
    # the status record's buffer comes with the opening, on master m00_axi's bank; the point buffers
    # with the first run's size
    assert [c for c in setup if c.startswith("bo(")] == [f"bo({RECORD_BYTES}, group 0)"]
    fake.calls.clear()
    be.run(points(params.n_points))
    calls = fake.calls
    assert [c for c in calls if c.startswith("bo(")] == \
        [f"bo({layout.channel_bytes}, group {ch})" for ch in range(params.channels)]
    to_dev = [c for c in calls if "TO_DEVICE" in c]
    from_dev = [c for c in calls if "FROM_DEVICE" in c]
    # the input channels, then the cleared status record; after the wait the record, then the output
    assert to_dev == [f"sync(XCL_BO_SYNC_BO_TO_DEVICE, group {ch})" for ch in layout.read_channels(1)] + \
        ["sync(XCL_BO_SYNC_BO_TO_DEVICE, group 0)"]
    assert from_dev == ["sync(XCL_BO_SYNC_BO_FROM_DEVICE, group 0)"] + \
        [f"sync(XCL_BO_SYNC_BO_FROM_DEVICE, group {ch})" for ch in layout.write_channels(2)]
    assert [c for c in calls if c.startswith("set_arg")] == [f"set_arg({i})" for i in range(len(be.rmap.args))]
    i_start, i_wait = calls.index("start"), calls.index("wait(1000)")
    assert calls.index(to_dev[-1]) < i_start < i_wait < calls.index(from_dev[0])
    # The registers the kernel saw follow the register map.
    km = fake.kernel_model
    assert km.arg_value("log_n") == params.log_n
    for ch in range(params.channels):
        addr = km.arg_value(f"hbm_{ch:02d}")
        assert addr == be._bos[ch].address() and fake.hbm.bank_of(addr) == ch
    assert km.arg_value(R.RECORD_ARG) == be._status_buffer.bo.address() and \
        fake.hbm.bank_of(km.arg_value(R.RECORD_ARG)) == 0


def test_a_missing_sync_gives_wrong_results(tmp_path):
    # Host and device memory are separate in the stand-in, so the adapter's syncs really matter.
    params = SMALL
    _, be = make(params, tmp_path)
    x = points(params.n_points)
    assert np.array_equal(be.run(x), ntt_model.ntt(x))
    ch = list(Layout(params).read_channels(1))[0]
    be._bos[ch].sync = lambda *a: None
    assert not np.array_equal(be.run(x), ntt_model.ntt(x))


def test_identity_block(tmp_path):
    params = SMALL
    fake, be = make(params, tmp_path)
    assert "LANES 4 LOG_CORE 3 CHANNELS 4" in be.report["Identity"]
    assert [c for c in fake.calls if c.startswith("read_register")][:6] == \
        [f"read_register(0x{0x800 + 4 * i:x})" for i in range(6)]
    (tmp_path / "again").mkdir()
    _, be = make(params, tmp_path / "again", backend_params=None)      # params from the ID block
    assert be.params == params
    with pytest.raises(X.IdentityMismatch, match="built with"):
        make(params, tmp_path, xclbin_params=BuildParams(lanes=8, log_core=3, channels=4))
    with pytest.raises(X.IdentityMismatch, match="MAGIC"):
        make(params, tmp_path, id_overrides={"MAGIC": 0x1234})
    with pytest.raises(X.IdentityMismatch, match="version"):
        make(params, tmp_path, id_overrides={"VERSION": R.VERSION + 1})
    # the operations and commitment schemes the kernel carries are the build's
    assert "OPS 0x1 COMMIT 0x0" in be.report["Identity"]
    with pytest.raises(X.IdentityMismatch, match="OPS reads 0x3"):
        make(params, tmp_path, id_overrides={"OPS": 3})
    with pytest.raises(X.IdentityMismatch, match=r"commits with \['plonky3-babybear-16'\]"):
        make(params, tmp_path, id_overrides={"COMMIT": 1 << R.SCHEME_CODES["plonky3-babybear-16"]})


def test_without_read_register_falls_back_to_xclbin_metadata(tmp_path):
    params = SMALL
    fake, be = make(params, tmp_path, read_register=False)
    assert "xclbin metadata" in be.report["Identity"]
    x = points(params.n_points)
    assert np.array_equal(be.run(x), ntt_model.ntt(x))
    assert not any(c.startswith("read_register") for c in fake.calls)
    with pytest.raises(X.IdentityMismatch, match="arguments"):
        make(params, tmp_path, xclbin_params=BuildParams(lanes=4, log_core=3, channels=8),
             read_register=False)


def test_timeout_and_named_errors(tmp_path):
    params = SMALL
    _, be = make(params, tmp_path, hang=True)
    with pytest.raises(X.KernelTimeout, match="did not finish"):
        be.run(points(params.n_points))
    path = write_xclbin(tmp_path / "good.xclbin", params)
    with pytest.raises(X.DeviceOpenFailed) as e:
        X.XrtBackend(params, xclbin=path, device=1, pyxrt_module=FakePyxrt())
    assert isinstance(e.value.__cause__, RuntimeError) and "device 1" in str(e.value)
    bad = tmp_path / "bad.xclbin"
    bad.write_bytes(b"xclbin2\0garbage")
    with pytest.raises(X.XclbinLoadFailed, match="bad.xclbin"):
        X.XrtBackend(params, xclbin=bad, pyxrt_module=FakePyxrt())
    with pytest.raises(X.XclbinNotFound, match="make build"):
        X.XrtBackend(params, xclbin=tmp_path / "none.xclbin", pyxrt_module=FakePyxrt())
    other = write_xclbin(tmp_path / "other.xclbin", params, kernel_name="vadd")
    with pytest.raises(X.KernelNotFound, match="nantucket"):
        X.XrtBackend(params, xclbin=other, pyxrt_module=FakePyxrt())
    small_banks = X.XrtBackend(params, xclbin=path, pyxrt_module=FakePyxrt(bank_bytes=RECORD_BYTES))
    with pytest.raises(X.BufferAllocFailed, match="hbm_00") as e:      # buffers come with the run
        small_banks.run(points(params.n_points))
    assert isinstance(e.value.__cause__, RuntimeError)
    assert issubclass(X.XrtError, X.DeviceError)


def test_bad_arguments_and_sizes(tmp_path):
    params = SMALL
    _, be = make(params, tmp_path)
    assert be.supports(params.n_points) is None and be.supports(2) is None
    assert be.supports(128) is None                     # past one call: the four-step (tests/test_large.py)
    assert "roots of unity up to 2^32" in be.supports(1 << 33)
    with pytest.raises(X.UnsupportedSize):
        be.run(np.zeros((1, 0), dtype=np.uint64))
    with pytest.raises(X.UnsupportedSize, match="power of two"):
        be.run(points(48))
    path = write_xclbin(tmp_path / "x.xclbin", params)
    with pytest.raises(ValueError, match="device"):
        X.XrtBackend(params, xclbin=path, device=-1, pyxrt_module=FakePyxrt())
    with pytest.raises(TypeError, match="params"):
        X.XrtBackend({"lanes": 2}, xclbin=path, pyxrt_module=FakePyxrt())
    be.close()
    with pytest.raises(X.XrtError, match="closed"):
        be.run(points(64))


def test_missing_pyxrt_says_how_to_source_xrt(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyxrt", None)            # makes `import pyxrt` fail
    with pytest.raises(X.XrtUnavailable, match=r"source /opt/xilinx/xrt/setup\.sh") as e:
        X.import_pyxrt()
    assert isinstance(e.value.__cause__, ImportError)


def test_progress_lines(tmp_path):
    params = SMALL
    fake = FakePyxrt()
    lines = []
    be = X.XrtBackend(params, xclbin=write_xclbin(tmp_path / "p.xclbin", params), pyxrt_module=fake,
                      progress=lines.append)
    del lines[:]                                    # the stage lines of the opening (tests/test_api_hardening.py)
    be.run(points(params.n_points))
    stages = [line for line in lines if line.startswith("xrt: ")]
    assert stages == [f"xrt: kernel call: 2^{params.log_n} points, batch 1, flags 0x0", stages[1]]
    assert stages[1].startswith("xrt: kernel done in ")
    lines = [line for line in lines if not line.startswith("xrt: ")]
    layout = Layout(params)
    n_in, n_out = len(layout.read_channels(1)), len(layout.write_channels(2))
    assert [l.split(",")[0] for l in lines if "/" in l] == \
        [f"to-device: {i}/{n_in} channels" for i in range(1, n_in + 1)] + \
        [f"from-device: {i}/{n_out} channels" for i in range(1, n_out + 1)]
    assert lines[0].startswith(f"to-device: scattered {params.n_points} points over {n_in} channels")
    assert lines[-1].startswith(f"from-device: gathered {params.n_points} points")
    assert all(l.endswith(" s") for l in lines)
    assert "scatter" in be.report["Host work"]


# -- the register-level kernel model itself ----------------------------------------------------------

def _model(params=SMALL):
    """A kernel model with a point buffer on every channel (``bases``) and its status record's buffer in
    HBM[0] (``km.record_base``)."""
    hbm = HbmModel(32)
    layout = Layout(params)
    km = KernelModel(params, hbm, layout)
    bases = [hbm.allocate(ch, layout.channel_bytes) for ch in range(params.channels)]
    km.record_base = hbm.allocate(0, RECORD_BYTES)
    for name, b in [(f"hbm_{ch:02d}", b) for ch, b in enumerate(bases)] + [(R.RECORD_ARG, km.record_base)]:
        a = km.rmap.arg(name)
        lo, hi = R.RegisterMap.split_pointer(b)
        km.write(a.offset, lo)
        km.write(a.offset + 4, hi)
    return km, hbm, layout, bases


def _point_buffers(hbm, record_base):
    """The buffers of ``hbm`` other than the status record's at ``record_base``."""
    return {a: buf for a, buf in hbm.buffers().items() if a != record_base}


def test_model_ap_ctrl_hs_semantics():
    km, hbm, layout, bases = _model()
    assert km.read(R.CTRL) == R.CTRL_AP_IDLE
    km.write(R.GIER, 1)
    km.write(R.IP_IER, 1)
    km.write(km.rmap.arg("log_n").offset, km.params.log_n)
    km.write(R.CTRL, R.CTRL_AP_START)
    assert km.interrupt and km.read(R.IP_ISR) == R.ISR_DONE
    assert km.read(R.CTRL) == R.CTRL_AP_DONE | R.CTRL_AP_IDLE | R.CTRL_AP_READY
    assert km.read(R.CTRL) == R.CTRL_AP_IDLE                    # ap_done cleared by the read
    km.write(R.IP_ISR, R.ISR_DONE)                             # toggle on write clears it
    assert km.read(R.IP_ISR) == 0 and not km.interrupt
    km.write(R.ID_BASE, 0)                                     # read only
    assert km.read(R.ID_BASE) == R.MAGIC and km.read(R.ID_BASE + 4 * 5) == 0
    with pytest.raises(ValueError, match="offset"):
        km.read(0x11)


def test_model_rejects_a_bad_size_without_touching_memory():
    km, hbm, layout, bases = _model()
    status = km.rmap.id_offset("STATUS")
    for b in bases:
        hbm.view(b, layout.channel_bytes)[:] = np.arange(layout.channel_bytes, dtype=np.uint8) | 1
    before = {a: buf.copy() for a, buf in _point_buffers(hbm, km.record_base).items()}
    for log_n in (km.params.min_log_n - 1, km.params.max_log_n + 1, 0, 2**32 - 1):
        km.write(km.rmap.arg("log_n").offset, log_n)
        km.write(R.CTRL, R.CTRL_AP_START)
        assert km.read(R.CTRL) & R.CTRL_AP_DONE and km.read(status) == R.STATUS_BAD_SIZE, log_n
        for a, buf in _point_buffers(hbm, km.record_base).items():
            assert np.array_equal(buf, before[a]), f"log_n = {log_n} wrote the buffer at 0x{a:x}"
    km.write(km.rmap.arg("log_n").offset, km.params.log_n)
    km.write(R.CTRL, R.CTRL_AP_START)
    assert km.read(status) == 0


def test_model_hangs_on_an_address_outside_its_channel():
    km, hbm, layout, bases = _model()
    a = km.rmap.arg("hbm_01")
    km.write(a.offset, bases[0] & 0xFFFF_FFFF)                 # master 1 pointed at HBM[0]
    km.write(a.offset + 4, bases[0] >> 32)
    km.write(km.rmap.arg("log_n").offset, km.params.log_n)
    km.write(R.CTRL, R.CTRL_AP_START)
    assert isinstance(km.fault, MemoryFault) and "HBM[1]" in str(km.fault)
    assert km.read(R.CTRL) == R.CTRL_AP_READY                  # accepted, then neither done nor idle
    assert km.read(R.CTRL) == 0
    km.write(R.CTRL, R.CTRL_AP_START)                          # a busy kernel ignores a start
    assert km.runs == 0


def test_nantucket_run_on_the_xrt_backend(tmp_path, monkeypatch, capsys):
    # The CLI's backend interface with this adapter: params come from the ID block, as on a card.
    from nantucket.host import backends, cli
    params = BuildParams(lanes=4, log_core=4, channels=8)
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    fake = FakePyxrt()
    monkeypatch.setitem(backends.BACKENDS, "xrt", lambda **o: X.XrtBackend(pyxrt_module=fake, **o))
    inp, exp = tmp_path / "in.txt", tmp_path / "out.txt"
    assert cli.main(["points", "6", str(inp), str(exp), "--inverse"]) == 0
    rc = cli.main(["run", str(inp), str(exp), "--inverse", "--backend", "xrt", "--xclbin", str(xclbin)])
    out = capsys.readouterr().out
    assert rc == 0 and "TEST PASSED" in out
    for line in ("To-device time", "Kernel time", "From-device time", "Identity", "Build params"):
        assert line in out
    assert fake.kernel_model.runs == 1


def test_emulation_mode_points_xrt_at_emconfig(tmp_path, monkeypatch):
    monkeypatch.setenv("XCL_EMULATION_MODE", "hw_emu")
    monkeypatch.delenv("EMCONFIG_PATH", raising=False)
    (tmp_path / "emconfig.json").write_text("{}")
    fake = FakePyxrt()
    be = X.XrtBackend(SMALL, xclbin=write_xclbin(tmp_path / "nantucket.xclbin", SMALL), pyxrt_module=fake)
    assert be.timeout_s is None                       # emulation may take very long: no timeout
    import os
    assert os.environ["EMCONFIG_PATH"] == str(tmp_path.resolve())
    assert "hw_emu" in be.report["Emulation"]


# -- timeouts: no abort in pyxrt, so a timed-out run's buffers are never handed back while it may run ----

class LateKernel:
    """A KernelModel whose next run's ap_done stays hidden until ``release()``: a kernel that finishes
    after the host's timeout."""

    def __init__(self, params, hbm, layout):
        self.model = KernelModel(params, hbm, layout)
        self.hold_next = False
        self.holding = False

    def read(self, offset):
        if offset == R.CTRL and self.holding:
            return 0                                     # busy: neither idle nor done
        return self.model.read(offset)

    def write(self, offset, value):
        self.model.write(offset, value)
        if offset == R.CTRL and value & R.CTRL_AP_START and self.hold_next:
            self.holding, self.hold_next = True, False

    def release(self):
        self.holding = False

    @property
    def interrupt(self):
        return self.model.interrupt


def test_timeout_says_how_long_and_a_retry_is_refused_until_the_run_completes(tmp_path):
    params = SMALL
    fake = FakePyxrt(kernel_factory=LateKernel)
    be = X.XrtBackend(params, xclbin=write_xclbin(tmp_path / "n.xclbin", params), pyxrt_module=fake,
                      timeout_s=0.3, progress=False)
    fake.kernel_model.hold_next = True
    t0 = time.monotonic()
    with pytest.raises(X.KernelTimeout, match=r"after 0\.[3-9] s \(limit 0\.3 s\)") as e:
        be.run(points(params.n_points, seed=1))
    assert time.monotonic() - t0 >= 0.3 and e.value.waited >= 0.3
    fake.calls.clear()
    with pytest.raises(X.KernelTimeout, match="previous run timed out"):
        be.run(points(params.n_points, seed=2))
    assert not [c for c in fake.calls if c.startswith(("sync", "start"))], "touched the busy run's buffers"
    fake.kernel_model.release()                          # the late run completes
    x = points(params.n_points, seed=3)
    assert np.array_equal(be.run(x), ntt_model.ntt(x))


def test_close_after_a_timeout_keeps_the_buffers_of_the_running_kernel(tmp_path):
    params = SMALL
    fake, be = make(params, tmp_path, hang=True)
    be.timeout_s = 0.05
    with pytest.raises(X.KernelTimeout):
        be.run(points(params.n_points))
    bos = list(be._bos.values())
    be.close()
    kept = [b for _, held in X.runs.STRANDED for b in held.values()]
    assert all(any(b is k for k in kept) for b in bos)


# -- pointer arguments are checked before the kernel starts ---------------------------------------------

def _bad(be, fake, match):
    fake.calls.clear()
    with pytest.raises(X.BadPointer, match=match):
        be.run(points(be.params.n_points))
    assert "start" not in fake.calls


def test_pointer_arguments_are_checked_before_starting(tmp_path, monkeypatch):
    params = SMALL
    fake, be = make(params, tmp_path)
    be.run(points(params.n_points))                    # allocates the buffers of this size
    bo = be._bos[1]
    good = bo.address()
    for addr, match in ((good + 8, "32-byte AXI beat"), (good + 32, "4096-byte boundary"),
                        (good + fake.bank_bytes, "leaves memory bank 1"),
                        (good - 4096, "leaves memory bank 1")):
        monkeypatch.setattr(bo, "address", lambda a=addr: a)
        _bad(be, fake, match)
    monkeypatch.setattr(bo, "address", lambda: good)
    monkeypatch.setattr(bo, "size", lambda: 64)
    _bad(be, fake, r"64 bytes, the layout of a 2\^6-point run needs 256")
    monkeypatch.undo()
    # two buffers in one window (a memory topology that puts two masters on one bank)
    monkeypatch.setattr(be, "_windows", {g: (0, 4 * fake.bank_bytes) for g in range(4)})
    monkeypatch.setattr(be._bos[2], "address", lambda: be._bos[0].address())
    _bad(be, fake, "overlap")
    monkeypatch.undo()
    x = points(params.n_points)
    assert np.array_equal(be.run(x), ntt_model.ntt(x))


def test_pointer_checks_follow_the_size_of_the_run(tmp_path, monkeypatch):
    """Needed bytes and burst alignment are those of the run's own layout (SMALL: a 2^5 run needs 128
    bytes per channel in 4-beat bursts, a 2^6 run 256 bytes in 8-beat bursts)."""
    fake, be = make(SMALL, tmp_path)
    for log_n in (5, 6):
        lay = Layout(SMALL, log_n)
        be.run(points(1 << log_n))                      # buffers of this size
        bo = be._bos[1]
        good, align = bo.address(), lay.burst_beats * 32
        assert lay.channel_bytes == (1 << log_n) // 2 * 8 and align == 32 * min(8, (1 << log_n) // 8)
        monkeypatch.setattr(bo, "address", lambda: good + align // 2)
        with pytest.raises(X.BadPointer, match=f"not aligned to {align} bytes"):
            be.run(points(1 << log_n))
        monkeypatch.undo()
        monkeypatch.setattr(bo, "size", lambda: lay.channel_bytes - 32)
        with pytest.raises(X.BadPointer, match=rf"{lay.channel_bytes - 32} bytes, the layout of a "
                                               rf"2\^{log_n}-point run needs {lay.channel_bytes}"):
            be.run(points(1 << log_n))
        monkeypatch.undo()
    assert fake.kernel_model.runs == 2


@pytest.mark.parametrize("params", PARAMS + [BuildParams(lanes=16, log_core=6, channels=8)],
                         ids=lambda p: p.tag())
def test_the_host_alignment_keeps_every_layout_burst_inside_4k(params):
    """The host's rule (base aligned to the longest burst of the run's size) checked against the bursts
    the layout of every native size describes: sufficient (no burst crosses 4 KiB) and necessary (one
    beat less and one does)."""
    for log_n in range(params.min_log_n, params.max_log_n + 1):
        lay = Layout(params, log_n)
        align = max(lay.burst_beats, lay.unit_beats) * 32

        def crossing(base):
            return [(ch, b, n) for p in (1, 2) for d in ("read", "write")
                    for ch, bursts in lay.bursts(p, d).items() for b, n in bursts
                    if (base + 32 * b) // 4096 != (base + 32 * (b + n) - 1) // 4096]
        for base in (0, 4096 - align, 3 * 4096 - 2 * align):
            assert not crossing(base), f"2^{log_n}"
        assert crossing(4096 - align + 32), f"2^{log_n}"


# -- identity without read_register ------------------------------------------------------------------

@pytest.mark.parametrize("other", [BuildParams(lanes=8, log_core=3, channels=4),
                                   BuildParams(lanes=4, log_core=2, channels=4),
                                   BuildParams(lanes=4, log_core=4, channels=4)], ids=lambda p: p.tag())
def test_without_read_register_another_build_is_an_identity_mismatch(tmp_path, other):
    """Same channel count, so the same argument count: the xclbin metadata cannot tell; the self-test can."""
    with pytest.raises(X.IdentityMismatch, match=f"not a {SMALL.tag()} build"):
        make(SMALL, tmp_path, xclbin_params=other, read_register=False)


class StatusKernel(LateKernel):
    """Sets extra STATUS bits (what a latched device error looks like to the host): in the STATUS register
    and, unless ``in_record`` is False, in the status record the kernel writes."""

    extra = 0
    in_record = True

    def read(self, offset):
        value = super().read(offset)
        return value | self.extra if offset == R.RegisterMap(self.model.params).id_offset("STATUS") else value

    def write(self, offset, value):
        super().write(offset, value)
        if offset == R.CTRL and value & R.CTRL_AP_START and self.in_record and self.model.last_record:
            at = self.model.record_address() + 4 * RECORD_WORDS.index("STATUS")
            word = self.model.hbm.view(at, 4).view("<u4")
            word[0] |= self.extra


def test_a_status_error_bit_is_a_device_error(tmp_path):
    params = SMALL
    fake = FakePyxrt(kernel_factory=StatusKernel)
    be = X.XrtBackend(params, xclbin=write_xclbin(tmp_path / "n.xclbin", params), pyxrt_module=fake,
                      timeout_s=0.2, progress=False)
    fake.kernel_model.extra = 1 << 7
    with pytest.raises(X.KernelFailed, match=r"device error: STATUS 0x00000080: undefined bits 0x80"):
        be.run(points(params.n_points))
    fake.kernel_model.hold_next = True                   # and a hang reports STATUS too
    with pytest.raises(X.KernelTimeout, match=r"STATUS 0x00000080"):
        be.run(points(params.n_points))


def test_a_status_register_that_disagrees_with_the_record_is_a_device_error(tmp_path):
    """Where the STATUS register can be read it must say what the status record says: an AXI error only
    the register reports is neither trusted nor dropped."""
    params = SMALL
    fake = FakePyxrt(kernel_factory=StatusKernel)
    be = X.XrtBackend(params, xclbin=write_xclbin(tmp_path / "n.xclbin", params), pyxrt_module=fake,
                      timeout_s=0.2, progress=False)
    fake.kernel_model.extra, fake.kernel_model.in_record = R.STATUS_AXI_ERROR | 2 << R.STATUS_AXI_RESP_SHIFT, False
    with pytest.raises(X.KernelFailed, match=r"STATUS reads 0x0000000a but the kernel's status record says "
                                             r"0x00000000: the two disagree") as e:
        be.run(points(params.n_points))
    assert "\n" not in str(e.value) and not isinstance(e.value, X.KernelAxiError)


def test_without_read_register_build_params_json_beside_the_xclbin_names_the_build(tmp_path):
    other = BuildParams(lanes=8, log_core=3, channels=4)
    (tmp_path / "build_params.json").write_text(json.dumps({"params": other.as_dict(), "target": "hw"}))
    fake, be = make(other, tmp_path, backend_params=None, read_register=False)
    assert be.params == other
    x = points(other.n_points)
    assert np.array_equal(be.run(x), ntt_model.ntt(x))
    with pytest.raises(X.IdentityMismatch, match=f"build_params.json says {other.tag()}"):
        make(SMALL, tmp_path, xclbin_params=other, read_register=False)


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("n_log", [None, 5, 4, 3, 0])    # the largest, smaller native ones, zero-padded ones
def test_locate_names_where_each_output_point_sat_in_hbm(inverse, n_log, tmp_path):
    """The place locate() names holds the kernel's output the host turned into point i: read it back
    from the card's buffer there (the kernel computes the inverse with its 1/N; a zero-padded size's
    inverse is (n/N) x_n there, which the host scales back by N/n)."""
    import re
    fake, be = make(SMALL, tmp_path)
    n = SMALL.n_points if n_log is None else 1 << n_log
    assert be.locate(0) is None                        # nothing ran yet
    y = be.run(points(n, 5), inverse=inverse)
    big = max(n, 1 << SMALL.min_log_n)
    scale = big // n if inverse else 1
    for i in range(n):
        where = re.fullmatch(r"HBM channel (\d+), byte 0x([0-9a-f]+)", be.locate(i))
        channel, offset = int(where[1]), int(where[2], 16)
        word = be._views[channel].view(np.uint8)[offset:offset + 8].view(np.uint64)[0]
        assert F.mul(int(word), scale) == int(y[i])
    be.close()


@pytest.mark.parametrize("resp, write, channel", [(2, False, 3), (3, True, 0)])
def test_an_axi_error_response_names_the_channel_and_direction(tmp_path, resp, write, channel):
    """STATUS as the control slave latches an HBM error response (bit, code, direction, channel, as the
    register map defines them) becomes a device error that says which channel and what it answered."""
    params = SMALL
    fake = FakePyxrt(kernel_factory=StatusKernel)
    be = X.XrtBackend(params, xclbin=write_xclbin(tmp_path / "n.xclbin", params), pyxrt_module=fake,
                      timeout_s=0.2, progress=False)
    fake.kernel_model.extra = (R.STATUS_AXI_ERROR | resp << R.STATUS_AXI_RESP_SHIFT
                               | (R.STATUS_AXI_WRITE if write else 0) | channel << R.STATUS_AXI_CHANNEL_SHIFT)
    name = {2: "SLVERR", 3: "DECERR"}[resp]
    with pytest.raises(X.KernelAxiError, match=f"HBM channel {channel} answered {name} to a "
                                               f"{'write' if write else 'read'}") as e:
        be.run(points(params.n_points))
    assert (e.value.channel, e.value.resp, e.value.resp_name, e.value.write) == (channel, resp, name, write)


# -- run-time sizes: every size from 2^min_log_n to 2^max_log_n runs natively, smaller ones are padded ----

NATIVE_BUILDS = [BuildParams(lanes=4, log_core=4, channels=4), BuildParams(lanes=8, log_core=5, channels=8),
                 BuildParams(lanes=16, log_core=6, channels=32)]


def _live_buffer_bytes(fake, params):
    """Bytes each HBM channel of the build holds in live (not freed) point buffers (HBM[0] also holds the
    status record's, RECORD_BYTES from the opening on)."""
    return {ch: fake.hbm.allocated_bytes(ch) - (RECORD_BYTES if ch == 0 else 0) for ch in range(params.channels)}


@pytest.mark.parametrize("params", NATIVE_BUILDS, ids=lambda p: p.tag())
def test_every_size_runs_natively_or_padded_to_the_smallest_native_size(params, tmp_path):
    """Every n = 2^m up to the build's largest size, forward and inverse, every input kind: right against
    the golden model, the kernel ran log_n = max(m, min_log_n) (read back from its argument register), and
    the buffers hold exactly that size's points, nothing of the build's maximum."""
    from nantucket.host.workloads import KINDS, make_points
    fake, be = make(params, tmp_path)
    for m in range(params.max_log_n + 1):
        ran = max(m, params.min_log_n)
        lay = Layout(params, ran)
        for inverse in (False, True):
            x = make_points(m, KINDS[(m + inverse) % len(KINDS)], seed=m) if m else points(1, seed=inverse)
            y = be.run(x, inverse=inverse)
            assert np.array_equal(y, ntt_model.ntt(x, inverse=inverse)), f"2^{m}, inverse={inverse}"
            assert fake.kernel_model.arg_value("log_n") == ran == fake.kernel_model.last_log_n
            assert be.kernel_log_n == ran
            assert _live_buffer_bytes(fake, params) == {ch: lay.channel_bytes for ch in range(params.channels)}
            assert all(b.size() == lay.channel_bytes == (1 << ran) // (params.channels // 2) * 8
                       for b in be._bos.values())


def test_sizes_switch_from_run_to_run_on_one_open_device(tmp_path):
    """2^8, 2^5, 2^8, 2^7, 2^7, ... on one device without reopening it: each run right, new buffers only
    when the size changes (the old ones freed first), none for a repeated size."""
    params = NATIVE_BUILDS[0]                                   # native 2^4 .. 2^8
    fake, be = make(params, tmp_path)
    last = None
    for i, m in enumerate([8, 5, 8, 7, 7, 4, 2, 6, 8, 0, 3]):
        ran = max(m, params.min_log_n)
        fake.calls.clear()
        x = points(1 << m, seed=i)
        assert np.array_equal(be.run(x, inverse=bool(i % 2)), ntt_model.ntt(x, inverse=bool(i % 2))), m
        assert fake.kernel_model.last_log_n == ran
        allocs = [c for c in fake.calls if c.startswith("bo(")]
        frees = [c for c in fake.calls if c.startswith("free(")]
        if ran == last:
            assert not allocs and not frees, f"2^{m}: reallocated for an unchanged size"
        else:
            nbytes = Layout(params, ran).channel_bytes
            assert allocs == [f"bo({nbytes}, group {ch})" for ch in range(params.channels)]
            if last is not None:
                old = Layout(params, last).channel_bytes
                assert sorted(frees) == sorted(f"free({old}, group {ch})" for ch in range(params.channels))
                assert fake.calls.index(frees[-1]) < fake.calls.index(allocs[0]), "freed after allocating"
        last = ran
        assert _live_buffer_bytes(fake, params) == \
            {ch: Layout(params, ran).channel_bytes for ch in range(params.channels)}


def _start_raw(fake, be, log_n):
    """Start the kernel through the pyxrt run interface with log_n in its argument register and the
    backend's current buffers; returns the final state."""
    run = fake.run(be._kernel)
    run.set_arg(be.rmap.arg("log_n").index, log_n)
    run.set_arg(be.rmap.arg("batch").index, 1)          # a run's unset arguments are 0, and batch 0 is refused
    for a in be.rmap.pointer_args:
        run.set_arg(a.index, be._bos[a.channel])
    run.start()
    return run.wait(1000)


@pytest.mark.parametrize("params", NATIVE_BUILDS[:2], ids=lambda p: p.tag())
def test_a_log_n_outside_the_native_range_is_bad_size_and_touches_no_memory(params, tmp_path):
    fake, be = make(params, tmp_path)
    x = points(1 << params.min_log_n, seed=3)
    assert np.array_equal(be.run(x), ntt_model.ntt(x))
    status = be.rmap.id_offset("STATUS")
    before = {a: buf.copy() for a, buf in _point_buffers(fake.hbm, be._status_buffer.bo.address()).items()}
    for log_n in (params.min_log_n - 1, params.max_log_n + 1, 0, 31):
        assert _start_raw(fake, be, log_n) == fake.ert_cmd_state.ERT_CMD_STATE_COMPLETED, log_n
        assert fake.kernel_model.read(status) == R.STATUS_BAD_SIZE, log_n
        for a, buf in _point_buffers(fake.hbm, be._status_buffer.bo.address()).items():
            assert np.array_equal(buf, before[a]), f"log_n = {log_n} wrote the buffer at 0x{a:x}"
    for log_n in (params.min_log_n, params.max_log_n):          # the ends of the range are accepted
        be.run(points(1 << log_n))
        assert fake.kernel_model.read(status) == 0 and fake.kernel_model.last_log_n == log_n


def test_the_host_names_a_rejected_size(tmp_path, monkeypatch):
    """A kernel that rejects the size the host asked for (STATUS.bad_size) is a KernelFailed naming it:
    here the host is made to ask for 2^(2k+1) in buffers large enough for it."""
    from dataclasses import replace
    params = SMALL
    fake, be = make(params, tmp_path)
    too_big = Layout(replace(params, log_core=params.log_core + 1), params.max_log_n + 1)
    monkeypatch.setattr(be, "layout_for", lambda log_n: too_big)
    monkeypatch.setattr(be.rmap, "check_start", lambda *a: 0)      # the host's own check would refuse first
    with pytest.raises(X.KernelFailed, match=rf"rejected log_n = {params.max_log_n + 1} \(STATUS.bad_size\)") as e:
        be.run(points(params.n_points))
    assert fake.kernel_model.runs == 1 and fake.kernel_model.last_log_n is None
    failed_run_addresses = {ch: b.address() for ch, b in be._bos.items()}
    # The failed run's buffers go with the next size, although its traceback (in e) is still alive: the
    # simulated card's HBM models hold only the largest size's bytes from the start of each channel.
    monkeypatch.undo()
    x = points(16)
    assert np.array_equal(be.run(x), ntt_model.ntt(x))
    assert e.value.__traceback__ is not None
    assert fake.hbm.allocated_bytes() == params.channels * Layout(params, 4).channel_bytes + RECORD_BYTES
    assert {ch: b.address() for ch, b in be._bos.items()} == failed_run_addresses


def test_the_report_says_which_size_the_kernel_ran(tmp_path):
    params = SMALL                                              # native 2^4 .. 2^6
    _, be = make(params, tmp_path)
    assert "Kernel size" not in be.report and be.kernel_log_n is None
    for m, text in ((6, "2^6 points, native"), (5, "2^5 points, native"), (4, "2^4 points, native"),
                    (3, "2^4 points (2^3 zero-padded by the host)"),
                    (0, "2^4 points (2^0 zero-padded by the host)")):
        be.run(points(1 << m))
        assert be.report["Kernel size"] == text and be.kernel_log_n == max(m, 4)


def test_the_self_test_leaves_no_run_behind(tmp_path):
    """Without the ID block the self-test runs at open; the report and locate() speak of user runs only."""
    fake, be = make(SMALL, tmp_path, read_register=False)
    assert fake.kernel_model.runs == 2                          # the 2^6 transform and the 2^7 probe
    assert "Kernel size" not in be.report and be.kernel_log_n is None and be.locate(0) is None
    assert fake.hbm.allocated_bytes() == RECORD_BYTES           # the probe's buffers are freed, the record's kept
    x = points(16)
    assert np.array_equal(be.run(x), ntt_model.ntt(x)) and be.kernel_log_n == 4


def test_nantucket_run_reports_the_native_size(tmp_path, monkeypatch, capsys):
    from nantucket.host import backends, cli
    params = BuildParams(lanes=4, log_core=4, channels=8)       # native 2^4 .. 2^8
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    fake = FakePyxrt()
    monkeypatch.setitem(backends.BACKENDS, "xrt", lambda **o: X.XrtBackend(pyxrt_module=fake, **o))
    for log_n, text in ((6, "2^6 points, native"), (2, "2^4 points (2^2 zero-padded by the host)")):
        inp, exp = tmp_path / f"in{log_n}.txt", tmp_path / f"out{log_n}.txt"
        assert cli.main(["points", str(log_n), str(inp), str(exp)]) == 0
        capsys.readouterr()
        assert cli.main(["run", str(inp), str(exp), "--backend", "xrt", "--xclbin", str(xclbin)]) == 0
        out = capsys.readouterr().out
        assert f"Kernel size....... {text}\n" in out and "TEST PASSED" in out
        assert cli.main(["run", str(inp), str(exp), "--backend", "xrt", "--xclbin", str(xclbin), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["kernel_log_n"] == max(log_n, 4) and report["device_report"]["Kernel size"] == text
        assert report["verdict"] == "PASSED"


def test_the_id_block_native_range_must_be_the_builds(tmp_path):
    """The host runs every size of params.min_log_n .. max_log_n natively, so it refuses a kernel whose
    ID block reports another range (e.g. a bitstream from before run-time sizes)."""
    fake, be = make(SMALL, tmp_path)
    assert f"MIN_LOG_N {SMALL.min_log_n} MAX_LOG_N {SMALL.max_log_n}" in be.report["Identity"]
    for name, value in (("MIN_LOG_N", SMALL.max_log_n), ("MAX_LOG_N", SMALL.max_log_n - 1), ("MIN_LOG_N", 0)):
        with pytest.raises(X.IdentityMismatch, match=f"{name} reads {value}, but a {SMALL.tag()} build"):
            make(SMALL, tmp_path, id_overrides={name: value})


@pytest.mark.parametrize("params", NATIVE_BUILDS[:2], ids=lambda p: p.tag())
def test_model_runs_a_smaller_size_in_the_front_of_larger_buffers(params):
    """Buffers of the largest size, a run of each smaller native size: the model reads the input from
    the first N/R points of each input channel, writes the pass-1 state and X there, exactly as
    HbmLayout(params, log_n) places them, and touches no byte beyond."""
    from nantucket.hw.model import fourstep
    km, hbm, big, bases = _model(params)
    sentinel = np.uint64(0x5A5A_5A5A_5A5A_5A5A)
    for log_n in range(params.min_log_n, params.max_log_n):
        lay = Layout(params, log_n)
        words = {ch: hbm.view(b, big.channel_bytes).view(np.uint64) for ch, b in enumerate(bases)}
        for w in words.values():
            w[:] = sentinel
        x = points(1 << log_n, seed=log_n) % np.uint64(P)
        lay.scatter_into(x, words, "input")
        km.write(km.rmap.arg("log_n").offset, log_n)
        km.write(R.CTRL, R.CTRL_AP_START)
        assert km.read(R.CTRL) & R.CTRL_AP_DONE and km.last_log_n == log_n and km.fault is None
        assert np.array_equal(lay.gather_from(words, "output"), ntt_model.ntt(x))
        state = fourstep.pass1(x, 1 << lay.pass_sizes[0]).reshape(-1)
        assert np.array_equal(lay.gather_from(words, "state"), state)
        for ch, w in words.items():
            assert np.all(w[lay.channel_bytes // 8:] == sentinel), f"2^{log_n}: wrote past its part of HBM[{ch}]"


def test_model_hangs_when_a_buffer_is_too_small_for_the_size():
    """A buffer smaller than the run's layout needs is an access outside it: an AXI fault, no done;
    the size the buffers do hold runs."""
    params = NATIVE_BUILDS[0]
    hbm = HbmModel(32)
    small = Layout(params, params.max_log_n - 1)
    bases = [hbm.allocate(ch, small.channel_bytes) for ch in range(params.channels)]
    for log_n, fits in ((params.max_log_n, False), (params.max_log_n - 1, True)):
        km = KernelModel(params, hbm, Layout(params))         # a fresh kernel: a hung one never restarts
        for ch, b in enumerate(bases):
            a = km.rmap.arg(f"hbm_{ch:02d}")
            for offset, word in zip(a.word_offsets, R.RegisterMap.split_pointer(b)):
                km.write(offset, word)
        km.write(km.rmap.arg("log_n").offset, log_n)
        km.write(R.CTRL, R.CTRL_AP_START)
        assert (km.fault is None) == fits and bool(km.read(R.CTRL) & R.CTRL_AP_DONE) == fits, log_n


def test_default_build_runs_small_sizes_natively(tmp_path):
    """The default build (L16_k12_C32, native 2^8 .. 2^24): 2^8, 2^9 and 2^13 run natively in buffers
    of their own size (not 2^24's 8 MiB per channel), 2^3 is padded to 2^8."""
    params = BuildParams()
    fake, be = make(params, tmp_path)
    for m, inverse in ((8, False), (9, True), (13, False), (3, True)):
        ran = max(m, 8)
        x = points(1 << m, seed=m)
        assert np.array_equal(be.run(x, inverse=inverse), ntt_model.ntt(x, inverse=inverse)), m
        assert fake.kernel_model.last_log_n == ran == be.kernel_log_n
        assert fake.hbm.allocated_bytes() == params.channels * (1 << ran) // 16 * 8 + RECORD_BYTES


def test_hbm_model_frees_and_reuses_memory_first_fit():
    hbm = HbmModel(2, bank_bytes=5 * 4096)
    a = hbm.allocate(1, 100)
    b = hbm.allocate(1, 4097)                   # page aligned, after a
    assert (a, b) == (5 * 4096, 6 * 4096) and hbm.allocated_bytes(1) == 4197
    hbm.free(a)
    assert hbm.allocate(1, 4096) == a            # the freed page is reused first
    assert hbm.allocate(1, 2 * 4096) == 8 * 4096
    with pytest.raises(MemoryFault, match="out of memory"):
        hbm.allocate(1, 1)
    with pytest.raises(MemoryFault, match="no buffer allocated"):
        hbm.free(a + 8)
    assert hbm.allocated_bytes(0) == 0


# -- the kernel's transforms: inverse, coset, batches as kernel arguments; orders in the layout --

ALL = frozenset({"inverse", "coset", "batch"})
SHIFTS = [None, 7, 2**31, 2**63 + 5, P - 1]         # the words of the last three need negative C ints


def _flags(inverse, coset):
    return (R.FLAG_INVERSE if inverse else 0) | (R.FLAG_COSET if coset is not None else 0)


@pytest.mark.parametrize("computes", [ALL, frozenset()], ids=["kernel", "host-fallback"])
@pytest.mark.parametrize("n_log", [3, 4, 6])             # zero-padded, smallest native, largest native
def test_every_combination_matches_the_golden_transform(tmp_path, computes, n_log):
    """Every inverse x coset x order x batch against hw.model.ntt.transform, and the arguments the
    kernel saw: the flags the kernel computes with (none for the host fallback), the batch of the last
    call (B split into calls of at most 2^(2k - log_n)), the 64-bit shift."""
    fake = FakePyxrt()
    path = write_xclbin(tmp_path / "nantucket.xclbin", SMALL)
    be = X.XrtBackend(SMALL, xclbin=path, pyxrt_module=fake, timeout_s=1.0, progress=False,
                      kernel_computes=computes)
    km = fake.kernel_model
    native = max(n_log, SMALL.min_log_n)
    limit = (1 << (SMALL.max_log_n - native)) if computes else 1
    seed = 0
    for batch in (1, 3):
        for inverse in (False, True):
            for coset in SHIFTS:
                for order in ("nn", "nr", "rn", "rr"):
                    seed += 1
                    x = points(batch << n_log, seed).reshape(batch, -1)
                    x = x[0] if batch == 1 else x
                    want = ntt_model.transform(x, inverse=inverse, coset=coset, order=order)
                    runs = km.runs
                    got = be.run(x, inverse, coset=coset, order=order)
                    what = f"B={batch} inverse={inverse} coset={coset} order={order}"
                    assert got.shape == want.shape and np.array_equal(got, want), what
                    assert km.runs - runs == -(-batch // limit), what
                    assert km.arg_value("log_n") == native and km.arg_value("batch") == (batch - 1) % limit + 1
                    # a padded inverse coset is the kernel's plain inverse, scaled by g^-j on the host
                    k_coset = coset if computes and not (inverse and n_log < native) else None
                    assert km.arg_value("flags") == (_flags(inverse and bool(computes), k_coset)), what
                    if k_coset is not None:             # without a coset the register keeps the last shift
                        assert km.coset_shift == k_coset, what


def test_shift_words_are_c_ints_and_reach_the_kernel_whole(tmp_path):
    """pyxrt's set_arg takes a C int (the stand-in raises TypeError otherwise): the two words of g go as
    signed ints, and the kernel's registers hold g's 64 bits."""
    fake, be = make(SMALL, tmp_path)
    for g in (1, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63, 2**64 - 2**32, P - 1):
        be.run(points(16, g % 97), coset=g)
        km = fake.kernel_model
        assert km.coset_shift == g
        assert km.arg_value("coset_shift_lo") == g & 0xFFFF_FFFF and km.arg_value("coset_shift_hi") == g >> 32
    # a run without a coset leaves the last shift in the register (the kernel's set-up for it stays valid)
    be.run(points(16, 5))
    assert km.coset_shift == P - 1 and km.arg_value("flags") == 0
    assert [X.c_int(w) for w in (0, 2**31 - 1, 2**31, 2**32 - 1)] == [0, 2**31 - 1, -2**31, -1]
    with pytest.raises(ValueError):
        X.c_int(2**32)


def test_a_batch_larger_than_the_kernel_takes_is_split(tmp_path):
    """B x N > 2^(2k): calls of the largest batch that fits, in three buffer sets of that batch (the call
    going up, the one running, the one coming back), allocated once and kept for the next run."""
    fake, be = make(SMALL, tmp_path)                    # 2^6 points per call at most
    fake.calls.clear()
    x = points(9 * 16, 3).reshape(9, 16)
    assert np.array_equal(be.run(x, coset=7), ntt_model.transform(x, coset=7))
    assert be.kernel_runs == [(4, 4, R.FLAG_COSET), (4, 4, R.FLAG_COSET), (4, 1, R.FLAG_COSET)]
    nbytes = 4 * Layout(SMALL, 4).channel_bytes
    assert [c for c in fake.calls if c.startswith("bo(")] == \
        [f"bo({nbytes}, group {ch})" for _ in range(3) for ch in range(SMALL.channels)]
    assert "3 calls, batch 9 (split: at most 4 per call)" in be.report["Kernel calls"]
    fake.calls.clear()
    assert np.array_equal(be.run(x[::-1]), ntt_model.transform(x[::-1]))
    assert not [c for c in fake.calls if c.startswith("bo(")]
    be.kernel_runs.clear()
    y = points(2 * 64, 4).reshape(2, 64)                # the largest size: one transform per call
    assert np.array_equal(be.run(y, inverse=True), ntt_model.transform(y, inverse=True))
    assert be.kernel_runs == [(6, 1, R.FLAG_INVERSE)] * 2


def test_batched_buffers_are_reused_while_they_fit_and_freed_before_new_ones(tmp_path):
    fake, be = make(SMALL, tmp_path)
    one = Layout(SMALL, 4).channel_bytes
    for batch, new in ((2, True), (1, False), (2, False), (3, True), (4, True), (1, False)):
        fake.calls.clear()
        x = points(batch * 16, batch).reshape(batch, 16)
        assert np.array_equal(be.run(x), ntt_model.transform(x))
        allocs = [c for c in fake.calls if c.startswith("bo(")]
        frees = [c for c in fake.calls if c.startswith("free(")]
        assert bool(allocs) == new, batch
        if new:
            assert allocs == [f"bo({batch * one}, group {ch})" for ch in range(SMALL.channels)]
            assert not frees or fake.calls.index(frees[-1]) < fake.calls.index(allocs[0])
    assert _live_buffer_bytes(fake, SMALL) == {ch: 4 * one for ch in range(SMALL.channels)}


def test_the_host_refuses_what_the_kernel_would_and_sends_nothing(tmp_path):
    fake, be = make(SMALL, tmp_path)
    bufs = be.allocate(Layout(SMALL, 4), 8)
    fake.calls.clear()
    for kwargs, reasons in ((dict(batch=8), ("bad_batch",)), (dict(batch=0, coset=0), ("bad_batch", "bad_shift")),
                            (dict(coset=P), ("bad_shift",))):
        with pytest.raises(X.KernelRefused, match="the host refused the start") as e:
            be.execute_ntt(bufs, **kwargs)
        assert e.value.reasons == reasons
    assert "start" not in fake.calls and fake.kernel_model.runs == 0


@pytest.mark.parametrize("args, reasons", [
    (dict(log_n=4, batch=8), ("bad_batch",)),
    (dict(log_n=4, batch=0), ("bad_batch",)),
    (dict(log_n=5, flags=R.FLAG_COSET, coset_shift=0), ("bad_shift",)),
    (dict(log_n=5, flags=R.FLAG_COSET | R.FLAG_INVERSE, coset_shift=P), ("bad_shift",)),
    (dict(log_n=4, flags=0x4), ("bad_flags",)),
    (dict(log_n=3, batch=0, flags=R.FLAG_COSET | 0x8, coset_shift=0),
     ("bad_size", "bad_batch", "bad_shift", "bad_flags")),
    (dict(log_n=6, input_log_m=3), ("bad_lde_pair",)),
    (dict(log_n=5, chain_log_n=4), ("bad_lde_pair",)),
    (dict(log_n=4, chain_log_n=6, batch=2), ("bad_lde_pair",)),
    (dict(log_n=5, op=1), ("bad_op",)),
    (dict(log_n=9, op=1 << 31), ("bad_size", "bad_op")),
])
def test_a_start_the_kernel_refuses_touches_no_memory_and_is_named(tmp_path, args, reasons):
    """Sent past the host's own check: the kernel finishes at once with the STATUS bits, memory is
    untouched, and KernelRefused names every reason."""
    fake, be = make(SMALL, tmp_path)
    bufs = be.allocate(Layout(SMALL, 4), 8)
    for view in bufs.views.values():
        view[:] = np.arange(view.size, dtype=np.uint64) * np.uint64(2**40 + 3)
    for ch, bo in bufs.bos.items():
        bo.sync(fake.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE, bo.size(), 0)
    before = {a: buf.copy() for a, buf in _point_buffers(fake.hbm, be._status_buffer.bo.address()).items()}
    runs = fake.kernel_model.runs
    with pytest.raises(X.KernelRefused, match="the kernel refused the start") as e:
        be._start_and_wait(bufs, R.Run(**args))
    assert e.value.reasons == reasons
    for name in reasons:
        assert f"STATUS.{name}" in str(e.value)
    if "op" in args:                    # the message names the op and what the build carries
        assert f"op = {args['op']}" in str(e.value) and "carries 0 ntt" in str(e.value)
    assert fake.kernel_model.runs == runs + 1
    for a, buf in _point_buffers(fake.hbm, be._status_buffer.bo.address()).items():
        assert np.array_equal(buf, before[a]), f"the refused start wrote the buffer at 0x{a:x}"


def test_orders_are_layout_tables_built_once(tmp_path):
    """A bit-reversed order is a point table of the layout step, built once per size and buffer, and
    scattering reversed rows equals scattering the rows permuted to natural order first."""
    from nantucket.host import hbm_io
    lay = Layout(SMALL, 5)
    assert hbm_io.point_table(lay, "input") is hbm_io.point_table(Layout(SMALL, 5), "input")
    rows = points(2 * 32, 9).reshape(2, 32) % np.uint64(P)
    rev = ntt_model.bit_reverse_indices(5)
    direct = np.zeros((SMALL.channels, 2 * lay.points_per_channel), dtype=np.uint64)
    permuted = direct.copy()
    hbm_io.scatter_rows(lay, rows, direct, reverse=True)
    hbm_io.scatter_rows(lay, np.ascontiguousarray(rows[:, rev]), permuted)
    assert np.array_equal(direct, permuted)
    back = hbm_io.gather_rows(lay, direct, 2, buffer="input", reverse=True)
    assert np.array_equal(back, rows)
    for e in range(2):          # element e in its own region of every channel, placed by the layout
        region = [c[e * lay.points_per_channel:(e + 1) * lay.points_per_channel] for c in permuted]
        assert np.array_equal(lay.gather(region, "input"), rows[e, rev])


def test_the_run_report_names_the_kernel_calls_and_host_work(tmp_path):
    _, be = make(SMALL, tmp_path)
    be.run(points(64, 1), inverse=True, coset=7, order="rr")
    assert be.report["Kernel calls"] == "1 call, batch 1, flags inverse+coset"
    assert be.report["Host work"].startswith("layout only")
    be.run(points(8, 1), inverse=True, coset=7)
    assert "zero-padding" in be.report["Host work"] and "coset scaling" in be.report["Host work"]


# -- zero-extended inputs and chained runs (input_log_m, chain_log_n) ----------------------------------

CHAIN_BUILDS = [BuildParams(lanes=8, log_core=5, channels=8), BuildParams(lanes=4, log_core=4, channels=4)]


def test_the_lde_arguments_are_sent_on_every_run_and_reset(tmp_path):
    """A chained run sets input_log_m / chain_log_n; the next plain run sends 0 for both (a register keeps
    its value between runs otherwise)."""
    fake, be = make(SMALL, tmp_path)
    bufs = be.allocate(Layout(SMALL, 6), 1)
    be.upload(bufs, points(16, 3).reshape(1, 16) % np.uint64(P))
    be.execute_ntt(bufs, 1, log_n=4, chain_log_n=6)
    be.execute_ntt(bufs, 1, input_log_m=4)
    km = fake.kernel_model
    assert (km.arg_value("log_n"), km.arg_value("input_log_m"), km.arg_value("chain_log_n")) == (6, 4, 0)
    be.run(points(32, 1))
    assert (km.arg_value("log_n"), km.arg_value("input_log_m"), km.arg_value("chain_log_n")) == (5, 0, 0)


@pytest.mark.parametrize("kwargs, argument", [
    (dict(log_n=6, input_log_m=3), "input_log_m = 3"),          # below the native sizes
    (dict(log_n=5, input_log_m=6), "input_log_m = 6"),          # more than the run's points
    (dict(log_n=4, chain_log_n=7), "chain_log_n = 7"),          # past the build's largest size
    (dict(log_n=6, chain_log_n=5), "chain_log_n = 5"),          # smaller than the run
    (dict(log_n=4, chain_log_n=6, batch=2), "chain_log_n = 6 with batch = 2"),   # 2 x 2^6 > 2^6
])
def test_the_host_refuses_an_lde_pair_the_kernel_would_and_sends_nothing(tmp_path, kwargs, argument):
    fake, be = make(SMALL, tmp_path)
    bufs = be.allocate(Layout(SMALL, 6), 2)
    fake.calls.clear()
    with pytest.raises(X.KernelRefused, match="the host refused the start") as e:
        be.execute_ntt(bufs, **kwargs)
    assert e.value.reasons == ("bad_lde_pair",)
    assert argument in str(e.value) and "STATUS.bad_lde_pair" in str(e.value) and "\n" not in str(e.value)
    assert "start" not in fake.calls and fake.kernel_model.runs == 0


@pytest.mark.parametrize("params", CHAIN_BUILDS, ids=lambda p: p.tag())
def test_the_host_refuses_every_pair_outside_lde_pairs(tmp_path, params):
    from nantucket.hw.model.layout import lde_pairs
    fake, be = make(params, tmp_path)
    bufs = be.allocate(Layout(params), 1)
    pairs = lde_pairs(params)
    sizes = range(params.min_log_n, params.max_log_n + 1)
    for m in sizes:
        for n in sizes:
            for kwargs in (dict(log_n=n, input_log_m=m), dict(log_n=m, chain_log_n=n)):
                if (m, n) in pairs:
                    assert not be.rmap.check_start(batch=1, **kwargs)
                    continue
                with pytest.raises(X.KernelRefused) as e:
                    be.execute_ntt(bufs, **kwargs)
                assert e.value.reasons == ("bad_lde_pair",)
    assert fake.kernel_model.runs == 0


def test_a_chained_run_needs_buffers_for_the_larger_size(tmp_path):
    fake, be = make(SMALL, tmp_path)
    bufs = be.allocate(Layout(SMALL, 4), 2)
    with pytest.raises(X.BadPointer, match="2\\^6-point run needs"):
        be.execute_ntt(bufs, 1, chain_log_n=6)
    assert fake.kernel_model.runs == 0


def _golden_padded(values, n, inverse=False, coset=None):
    """The golden transform of each row of ``values`` zero-extended to n points (extension in numpy)."""
    ext = np.zeros((values.shape[0], n), dtype=np.uint64)
    ext[:, :values.shape[1]] = values
    return ntt_model.transform(ext, inverse=inverse, coset=coset)


@pytest.mark.parametrize("params", CHAIN_BUILDS, ids=lambda p: p.tag())
def test_a_chained_pair_runs_on_the_card_with_no_sync_between(params, tmp_path):
    """Per supported pair (m, t) with t > m, a batch: the 2^m inverse writes each output point where
    HbmLayout.output_as_input(t) says, and the 2^t coset run reads it there (input_log_m = m), with no
    sync in between; both steps equal the golden model's."""
    from nantucket.hw.model.layout import lde_pairs
    fake, be = make(params, tmp_path)
    for m, t in sorted(p for p in lde_pairs(params) if p[0] < p[1]):
        batch = min(3, be.batch_limit(t))
        values = np.stack([points(1 << m, seed=m + 10 * t + r) % np.uint64(P) for r in range(batch)])
        bufs = be.allocate(be.layout_for(t), batch)
        be.upload(bufs, values)
        fake.calls.clear()
        be.execute_ntt(bufs, batch, inverse=True, log_n=m, chain_log_n=t)
        coeffs = ntt_model.transform(values, inverse=True)
        bo_words = {ch: fake.hbm.view(bo.address(), bo.size()).view(np.uint64) for ch, bo in bufs.bos.items()}
        channel, offset = Layout(params, m, batch).output_as_input(t)
        on_card = np.array([bo_words[int(c)][int(o) // 8] for c, o in zip(channel, offset)])
        assert np.array_equal(on_card, coeffs.reshape(-1)), f"(m, t) = ({m}, {t}): chained output misplaced"
        be.execute_ntt(bufs, batch, coset=7, input_log_m=m)
        # each run's syncs are its status record's alone (cleared before, read after; HBM[0])
        record = ["sync(XCL_BO_SYNC_BO_TO_DEVICE, group 0)", "sync(XCL_BO_SYNC_BO_FROM_DEVICE, group 0)"]
        assert [c for c in fake.calls if c.startswith("sync(")] == 2 * record, "a host round trip in the chain"
        got = be.download(bufs, batch)
        assert np.array_equal(got, _golden_padded(coeffs, 1 << t, coset=7)), f"(m, t) = ({m}, {t})"
        del bufs


@pytest.mark.parametrize("params", CHAIN_BUILDS, ids=lambda p: p.tag())
def test_upload_extended_writes_only_the_live_units_and_the_kernel_reads_no_zeros(params, tmp_path):
    """Buffers full of stale words: upload_padded scatters only the M points' units (every other word
    keeps its stale value) and a run with input_log_m = m transforms the zero-extended rows exactly."""
    from nantucket.hw.model.layout import lde_pairs
    fake, be = make(params, tmp_path)
    stale = np.uint64(0xDEAD_0000_BEEF_0001)
    for m, t in sorted(p for p in lde_pairs(params) if p[0] < p[1])[:4]:
        batch = 2
        rows = np.stack([points(1 << m, seed=m * t + r) % np.uint64(P) for r in range(batch)])
        bufs = be.allocate(be.layout_for(t), batch)
        for view in bufs.views.values():
            view[:] = stale
        be.upload_padded(bufs, rows)
        lay = Layout(params, t, batch)
        index = np.arange(batch << t)
        channel, offset = lay.place("input", index)
        placed = np.array([bufs.views[int(c)][int(o) // 8] for c, o in zip(channel, offset)]).reshape(batch, -1)
        assert np.array_equal(placed[:, :1 << m], rows)
        assert (placed[:, 1 << m:] == stale).all(), f"(m, t) = ({m}, {t}): the host wrote a zero unit"
        be.execute_ntt(bufs, batch, inverse=True, input_log_m=m)
        assert np.array_equal(be.download(bufs, batch), _golden_padded(rows, 1 << t, inverse=True))
        del bufs
    with pytest.raises(ValueError, match="zero-extended input"):
        be.upload_padded(be.allocate(be.layout_for(params.max_log_n)), np.zeros((1, params.lanes), np.uint64))


def test_the_kernel_decodes_the_run_the_driver_started(tmp_path):
    """execute_run writes Run.words() in register order; the kernel model's start decodes one Run from the
    argument registers (Run.from_words): it is the run that was sent, every field of it."""
    fake, be = make(SMALL, tmp_path)
    big, batched = be.allocate(Layout(SMALL, 6), 1), be.allocate(Layout(SMALL, 5), 2)
    sent = ((big, R.Run.of(6, inverse=True, coset=5)), (big, R.Run.of(4, coset=P - 1, chain_log_n=6)),
            (big, R.Run.of(6, coset=2**40 + 3, input_log_m=4, chain_log_n=6)),
            (batched, R.Run.of(5, inverse=True, coset=9, batch=2)))
    for bufs, run in sent:
        be.execute_run(bufs, run)
        assert fake.kernel_model.last_run == run
        assert be.kernel_runs[-1] == (run.log_n, run.batch, run.flags)
    assert fake.kernel_model.runs == len(sent)

"""The kernel's status record (hw/model/record.py) end to end without a card: the register-level kernel
model writes it (sim/kernel_model.py), the stand-in pyxrt injects device faults (sim/fake_pyxrt.py), and
the XRT driver (host/xrt/) decodes it into named errors and the report's measured figures, with and
without ``kernel.read_register``; the command line exits 3 on each fault with one line."""

import json
from dataclasses import replace

import numpy as np
import pytest

from nantucket.host import backends
from nantucket.host import xrt as X
from nantucket.host.cli import main
from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.record import RECORD_BYTES
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin
from nantucket.sim.kernel_model import HbmModel, KernelModel

SMALL = BuildParams(lanes=4, log_core=3, channels=4)        # native 2^4 .. 2^6
#: The record's words in address order, written out here from the record's definition (an NTT run's: its
#: engine's four words in the engine area, the rest of it 0).
WORDS = ("MAGIC", "VERSION", "LANES", "LOG_CORE", "CHANNELS", "STATUS", "MIN_LOG_N", "MAX_LOG_N", "FIELD", "OPS",
         "COMMIT", "SEQUENCE", "OP", "RUN", "BATCH", "TOTAL_DMA_CYCLES", "RESULT_LO", "RESULT_HI", "RESULT_BYTES",
         "PASS1_DMA_CYCLES", "PASS1_NTT_CYCLES", "PASS2_DMA_CYCLES", "PASS2_NTT_CYCLES") + tuple(
             f"ENGINE_{i}" for i in range(4, 13))
CYCLES = ("TOTAL_DMA_CYCLES", "PASS1_DMA_CYCLES", "PASS1_NTT_CYCLES", "PASS2_DMA_CYCLES", "PASS2_NTT_CYCLES")
ZERO_FOR_NTT = ("RESULT_LO", "RESULT_HI", "RESULT_BYTES") + WORDS[23:]


def axi_status(channel, resp, write):
    """STATUS of an AXI error response as the register map documents it: bit 1 axi_error, bits 3..2 the
    response, bit 4 a write, bits 14..8 the channel."""
    return 1 << 1 | resp << 2 | (1 << 4 if write else 0) | channel << 8


def points(n, seed=0):
    return np.random.default_rng(seed).integers(0, F.P, size=n, dtype=np.uint64)


# -- the model writes the record ----------------------------------------------------------------------

class Card:
    """A KernelModel with a point buffer on every channel and a page for the record in HBM[0], driven
    through its registers as ap_ctrl_hs does."""

    def __init__(self, params=SMALL, **options):
        self.hbm = HbmModel(32)
        self.km = KernelModel(params, self.hbm, HbmLayout(params), **options)
        self.layout = HbmLayout(params)
        self.bases = [self.hbm.allocate(ch, self.layout.channel_bytes) for ch in range(params.channels)]
        self.record_base = self.hbm.allocate(0, 4096)
        for ch, b in enumerate(self.bases):
            self.set(f"hbm_{ch:02d}", b)
        self.set(R.RECORD_ARG, self.record_base)

    def set(self, name, value):
        for i, offset in enumerate(self.km.rmap.arg(name).word_offsets):
            self.km.write(offset, (value >> (32 * i)) & 0xFFFF_FFFF)

    def start(self, **args):
        for name, value in args.items():
            self.set(name, value)
        self.km.write(R.CTRL, R.CTRL_AP_START)
        return bool(self.km.read(R.CTRL) & R.CTRL_AP_DONE)

    def record(self, at=None):
        raw = self.hbm.view(self.record_base if at is None else at, RECORD_BYTES)
        return dict(zip(WORDS, (int(w) for w in np.frombuffer(raw.tobytes(), dtype="<u4"))))

    def place_input(self, x, log_n):
        lay = HbmLayout(self.km.params, log_n)
        words = {ch: self.hbm.view(b, self.layout.channel_bytes).view(np.uint64) for ch, b in enumerate(self.bases)}
        lay.scatter_into(x, words, "input")
        return lay, words


def test_the_model_writes_the_record_of_every_start_with_the_runs_arguments():
    card = Card()
    ids = R.RegisterMap(SMALL).id_values
    starts = [dict(log_n=6, batch=1, flags=0),
              dict(log_n=4, batch=2, flags=R.FLAG_INVERSE),
              dict(log_n=5, batch=1, flags=R.FLAG_COSET, coset_shift_lo=7, coset_shift_hi=0),
              dict(log_n=6, batch=1, flags=0, input_log_m=4)]
    for sequence, args in enumerate(starts, start=1):
        assert card.start(**args), args
        rec = card.record()
        assert rec["MAGIC"].to_bytes(4, "big") == b"NTKT" and rec["VERSION"] == R.VERSION == 7
        # the whole identification block, the NTT's op code and nothing in the result and spare engine words
        assert {n: rec[n] for n in WORDS[:11] if n != "STATUS"} == ids and rec["OPS"] == 1 and rec["OP"] == 0
        assert all(rec[n] == 0 for n in ZERO_FOR_NTT)
        assert rec["STATUS"] == 0
        assert rec["SEQUENCE"] == sequence
        assert rec["RUN"] == (args["log_n"] | args["flags"] << 8 | args.get("input_log_m", 0) << 16)
        assert rec["BATCH"] == args["batch"]
        assert all(rec[n] == 0 for n in CYCLES)        # the model has no clock
    assert card.km.read(card.km.rmap.id_offset("STATUS")) == 0


def test_the_record_goes_to_the_status_address_rounded_down_to_the_record():
    card = Card()
    card.hbm.view(card.record_base, 4096)[:] = 0xEE
    assert card.start(log_n=6, batch=1, status=card.record_base + 2 * RECORD_BYTES + 17)
    assert card.record(card.record_base + 2 * RECORD_BYTES)["MAGIC"] == R.MAGIC
    untouched = card.hbm.view(card.record_base, 4096).copy()
    untouched[2 * RECORD_BYTES:3 * RECORD_BYTES] = 0xEE
    assert np.all(untouched == 0xEE)


@pytest.mark.parametrize("where", ["unallocated", "HBM[1]"])
def test_a_record_address_outside_hbm0s_buffers_is_a_fault_and_the_kernel_hangs(where):
    card = Card()
    address = card.bases[1] if where == "HBM[1]" else card.record_base + 64 * 4096
    assert not card.start(log_n=6, batch=1, status=address)
    assert card.km.fault is not None and card.km.runs == 0


def test_a_refused_start_writes_the_refusal_bits_and_no_cycles_and_nothing_else():
    card = Card(record_cycles=lambda run: {n: 1000 + i for i, n in enumerate(CYCLES)})
    for b in card.bases:
        card.hbm.view(b, card.layout.channel_bytes)[:] = 0x5A
    refusals = [(dict(log_n=3, batch=1, flags=0), 1 << 0),              # bad_size
                (dict(log_n=4, batch=0, flags=0), 1 << 15),             # bad_batch
                (dict(log_n=4, batch=1, flags=1 << 5), 1 << 17)]        # bad_flags
    for sequence, (args, bits) in enumerate(refusals, start=1):
        assert card.start(**args)
        rec = card.record()
        assert rec["STATUS"] == bits and rec["SEQUENCE"] == sequence and rec["BATCH"] == args["batch"]
        assert rec["RUN"] & 0xFFFF == args["log_n"] | args["flags"] << 8
        assert all(rec[n] == 0 for n in CYCLES), args
        for b in card.bases:
            assert np.all(card.hbm.view(b, card.layout.channel_bytes) == 0x5A), "a refused start wrote memory"
    assert card.start(log_n=6, batch=1, flags=0)        # accepted: the given cycle words
    rec = card.record()
    assert rec["SEQUENCE"] == 4 and rec["STATUS"] == 0 and [rec[n] for n in CYCLES] == [1000, 1001, 1002, 1003, 1004]


# -- the model's injected AXI error responses -----------------------------------------------------------

@pytest.mark.parametrize("channel", range(SMALL.channels))
@pytest.mark.parametrize("resp", [2, 3])
def test_an_injected_response_completes_the_run_and_latches_in_status_and_record(channel, resp):
    """Every channel of a plain run is read in one pass and written in the other, so a read or a write
    fault of any channel shows; the data is still the transform (an error response is no lost data)."""
    for write in (False, True):
        card = Card()
        x = points(64, seed=channel)
        lay, words = card.place_input(x, 6)
        card.km.inject(channel, rresp=0 if write else resp, bresp=resp if write else 0)
        assert card.start(log_n=6, batch=1), "an error response still finishes the run"
        want = axi_status(channel, resp, write)
        assert card.km.read(card.km.rmap.id_offset("STATUS")) == want == card.record()["STATUS"]
        assert np.array_equal(lay.gather_from(words, "output"), ntt_model.ntt(x))
        card.km.inject(channel, 0, 0)
        assert card.start() and card.record()["STATUS"] == 0 and card.record()["SEQUENCE"] == 2


def test_the_first_error_is_kept_pass_1_reads_first():
    """L4_k3_C4 reads channels 0, 2 and writes 1, 3 in pass 1; pass 2 the other way round (the layout)."""
    lay = HbmLayout(SMALL)
    assert (lay.read_channels(1), lay.write_channels(1)) == ([0, 2], [1, 3])
    for injected, first in (
            ({0: (2, 3)}, (0, 2, False)),                  # read in pass 1, written in pass 2
            ({1: (2, 3)}, (1, 3, True)),                   # written in pass 1, read in pass 2
            ({3: (2, 0), 1: (0, 3)}, (1, 3, True)),        # a pass-1 write before a pass-2 read
            ({1: (0, 3), 2: (3, 0)}, (2, 3, False)),       # a pass-1 read before a pass-1 write
            ({2: (0, 3), 3: (0, 2)}, (3, 2, True)),        # pass 1 writes 3 before pass 2 writes 2
            ({2: (0, 3), 0: (0, 2)}, (0, 2, True))):       # one step: by channel
        card = Card()
        for ch, (rresp, bresp) in injected.items():
            card.km.inject(ch, rresp, bresp)
        assert card.start(log_n=6, batch=1)
        assert card.record()["STATUS"] == axi_status(*first), injected


def test_a_refused_start_touches_no_channel_so_gets_no_error():
    card = Card()
    card.km.inject(0, rresp=2, bresp=2)
    assert card.start(log_n=9, batch=1) and card.record()["STATUS"] == R.STATUS_BAD_SIZE
    assert card.km.read(card.km.rmap.id_offset("STATUS")) == R.STATUS_BAD_SIZE
    assert card.start(log_n=6) and card.record()["STATUS"] == axi_status(0, 2, False)


def test_inject_checks_its_arguments():
    km = Card().km
    for args, name in (((4, 2, 0), "channel"), ((-1, 2, 0), "channel"), ((0, 4, 0), "rresp"),
                       ((0, 0, True), "bresp")):
        with pytest.raises(ValueError, match=name):
            km.inject(*args)


# -- the stand-in pyxrt's fault knob --------------------------------------------------------------------

def test_fake_pyxrt_checks_its_fault_knobs():
    with pytest.raises(ValueError, match="fault: expected one of"):
        FakePyxrt(fault="axi-reed")
    with pytest.raises(ValueError, match="fault_channel"):
        FakePyxrt(fault="axi-read", fault_channel=-1)
    with pytest.raises(ValueError, match="fault_resp"):
        FakePyxrt(fault="axi-write", fault_resp=0)
    with pytest.raises(ValueError, match="hang"):
        FakePyxrt(hang=True, fault="axi-read")
    with pytest.raises(TypeError, match="faults"):
        FakePyxrt(faults="hang")
    assert FakePyxrt(hang=True).fault == "hang" and FakePyxrt(fault="hang").hang


def test_a_fault_channel_the_build_does_not_have_is_refused_when_the_xclbin_loads(tmp_path):
    fake = FakePyxrt(fault="axi-read", fault_channel=SMALL.channels)
    with pytest.raises(X.XclbinLoadFailed, match="fault_channel: the L4_k3_C4 build has HBM channels 0..3"):
        X.XrtBackend(SMALL, xclbin=write_xclbin(tmp_path / "n.xclbin", SMALL), pyxrt_module=fake)


def test_the_status_argument_is_a_buffer_on_hbm0(tmp_path):
    fake = FakePyxrt()
    be = X.XrtBackend(SMALL, xclbin=write_xclbin(tmp_path / "n.xclbin", SMALL), pyxrt_module=fake, progress=False)
    a = be.rmap.record_arg
    assert be._kernel.group_id(a.index) == 0
    run = fake.run(be._kernel)
    run.set_arg(a.index, be._status_buffer.bo)
    with pytest.raises(RuntimeError, match="global memory"):
        run.set_arg(a.index, 0)


class _Watched(KernelModel):
    """A kernel model that counts its register reads after a start."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reads_after_start = None

    def read(self, offset):
        if self.reads_after_start is not None:
            self.reads_after_start += 1
        return super().read(offset)

    def write(self, offset, value):
        super().write(offset, value)
        if offset == R.CTRL and value & R.CTRL_AP_START:
            self.reads_after_start = 0


def test_a_hang_with_any_kernel_times_out_without_asking_it(tmp_path):
    fake = FakePyxrt(fault="hang", read_register=False, kernel_factory=lambda p, hbm, lay: _Watched(p, hbm, lay))
    fake.set_fault(None)                            # the self-test at the opening runs
    be = X.XrtBackend(SMALL, xclbin=write_xclbin(tmp_path / "n.xclbin", SMALL), pyxrt_module=fake,
                      timeout_s=0.1, progress=False)
    fake.set_fault("hang")
    with pytest.raises(X.KernelTimeout, match="did not finish"):
        be.run(points(64))
    km = fake.kernel_model
    assert km.runs == 3 and km.reads_after_start == 0      # it finished the run, and nobody asked


# -- the driver decodes the record ------------------------------------------------------------------------

def open_card(tmp_path, read_register, timeout_s=0.2, **knobs):
    fake = FakePyxrt(read_register=read_register, **knobs)
    return fake, X.XrtBackend(SMALL, xclbin=write_xclbin(tmp_path / "n.xclbin", SMALL), pyxrt_module=fake,
                              timeout_s=timeout_s, progress=False)


def check_runs_right(be, seed):
    x = points(64, seed)
    assert np.array_equal(be.run(x), ntt_model.ntt(x))
    y = points(2 * 16, seed + 1).reshape(2, 16)
    assert np.array_equal(be.run(y, inverse=True, coset=5), ntt_model.transform(y, inverse=True, coset=5))


@pytest.mark.parametrize("read_register", [True, False], ids=["read_register", "record-only"])
@pytest.mark.parametrize("fault, channel, resp", [("axi-read", 2, 2), ("axi-write", 1, 3), ("axi-read", 0, 3),
                                                  ("axi-write", 3, 2)])
def test_an_axi_fault_is_a_named_error_naming_the_channel_and_the_next_run_is_right(tmp_path, read_register,
                                                                                   fault, channel, resp):
    fake, be = open_card(tmp_path, read_register)
    check_runs_right(be, 1)
    fake.set_fault(fault, channel, resp)
    write = fault == "axi-write"
    name = {2: "SLVERR", 3: "DECERR"}[resp]
    with pytest.raises(X.KernelAxiError) as e:
        be.run(points(64, 2))
    assert (e.value.channel, e.value.resp, e.value.resp_name, e.value.write) == (channel, resp, name, write)
    message = str(e.value)
    assert message.startswith(f"HBM channel {channel} answered {name} to a {'write' if write else 'read'} "
                              f"of the kernel (master m{channel:02d}_axi)") and "\n" not in message
    assert isinstance(e.value, X.KernelFailed) and isinstance(e.value, X.DeviceError)
    fake.set_fault(None)
    check_runs_right(be, 3)


@pytest.mark.parametrize("read_register", [True, False], ids=["read_register", "record-only"])
def test_a_hang_is_a_timeout_and_a_reopened_card_runs_right(tmp_path, read_register):
    fake, be = open_card(tmp_path, read_register, timeout_s=0.1)
    fake.set_fault("hang")
    with pytest.raises(X.KernelTimeout, match="did not finish"):
        be.run(points(64))
    with pytest.raises(X.KernelTimeout, match="previous run timed out"):
        be.run(points(64))
    be.close()
    fake.set_fault(None)
    be = X.XrtBackend(SMALL, xclbin=write_xclbin(tmp_path / "n.xclbin", SMALL), pyxrt_module=fake,
                      timeout_s=1.0, progress=False)        # a new card: the xclbin loads again
    check_runs_right(be, 4)


@pytest.mark.parametrize("read_register", [True, False], ids=["read_register", "record-only"])
def test_an_axi_fault_during_the_self_test_names_the_channel(tmp_path, read_register):
    """Without read_register the opening runs a self-test, whose fault is the opening's error."""
    if read_register:
        _, be = open_card(tmp_path, read_register, fault="axi-read", fault_channel=2)
        with pytest.raises(X.KernelAxiError, match="HBM channel 2 answered SLVERR to a read"):
            be.run(points(64))
    else:
        with pytest.raises(X.IdentityMismatch, match="did not complete \\(HBM channel 2 answered SLVERR to a read"):
            open_card(tmp_path, read_register, fault="axi-read", fault_channel=2)


class _Skipping(KernelModel):
    """A kernel that finishes without writing its record (a half-finished run), from ``skip`` on."""
    skip = False

    def _write_record(self, run, refused):
        if not self.skip:
            super()._write_record(run, refused)


class _OtherRun(_Skipping):
    """A kernel that writes the record of another start (batch + 1) once ``skip`` is set."""

    def _write_record(self, run, refused):
        KernelModel._write_record(self, replace(run, batch=run.batch + 1) if self.skip else run, refused)


class _OtherBuild(_Skipping):
    """A kernel whose record (not its ID registers) reports 8 lanes once ``skip`` is set."""

    def _write_record(self, run, refused):
        KernelModel._write_record(self, run, refused)
        if self.skip:
            at = self.record_address() + 4 * WORDS.index("LANES")
            self.hbm.view(at, 4).view("<u4")[0] = 8


@pytest.mark.parametrize("read_register", [True, False], ids=["read_register", "record-only"])
@pytest.mark.parametrize("kernel, error, match", [
    (_Skipping, X.KernelFailed, "the kernel finished without writing its status record .*a half-finished run"),
    (_OtherRun, X.KernelFailed, r"status record describes another start \(log_n 6, batch 2, .*than the one "
                                r"sent \(log_n 6, batch 1"),
    (_OtherBuild, X.IdentityMismatch, "status record reports LANES 8, but a L4_k3_C4 build has LANES 4")])
def test_a_record_that_is_missing_or_not_this_runs_is_a_device_error(tmp_path, read_register, kernel, error, match):
    fake, be = open_card(tmp_path, read_register, kernel_factory=lambda p, hbm, lay: kernel(p, hbm, lay))
    check_runs_right(be, 5)
    fake.kernel_model.skip = True
    with pytest.raises(error, match=match) as e:
        be.run(points(64, 6))
    assert "\n" not in str(e.value) and isinstance(e.value, X.DeviceError)
    fake.kernel_model.skip = False
    check_runs_right(be, 7)


def test_a_start_the_kernel_refuses_is_read_from_the_record_alone(tmp_path):
    fake, be = open_card(tmp_path, read_register=False)
    bufs = be.allocate(HbmLayout(SMALL, 4), 8)
    with pytest.raises(X.KernelRefused, match=r"the kernel refused the start: rejected batch = 8") as e:
        be._start_and_wait(bufs, R.Run(4, batch=8))
    assert e.value.reasons == ("bad_batch",)
    assert fake.kernel_model.last_record[WORDS.index("STATUS")] == 1 << 15


#: STATUS.bad_align (bit 19), and what a base must be a multiple of: the DMA's longest burst, 8 beats of
#: 32 bytes (written out here from the AXI facts: no AXI4 burst may cross a 4 KiB boundary).
BAD_ALIGN, BURST_BYTES = 1 << 19, 8 * 32


def test_a_start_with_a_misaligned_base_is_refused_with_bad_align_and_touches_nothing():
    """Each hbm_NN base in turn off the longest burst by each low bit (the beat-aligned 32, 64, 128 too):
    done at once, the record's STATUS bad_align alone and no cycles, no point memory touched; aligned
    again, the next start runs and clears it."""
    card = Card(record_cycles=lambda run: {n: 7 for n in CYCLES})
    assert all(b % 4096 == 0 for b in card.bases)
    for b in card.bases:
        card.hbm.view(b, card.layout.channel_bytes)[:] = 0x5A
    sequence = 0
    for ch, base in enumerate(card.bases):
        for bit in range(BURST_BYTES.bit_length() - 1):
            sequence += 1
            assert card.start(log_n=6, batch=1, **{f"hbm_{ch:02d}": base + (1 << bit)}), (ch, bit)
            rec = card.record()
            assert rec["STATUS"] == BAD_ALIGN and rec["SEQUENCE"] == sequence, (ch, bit)
            assert all(rec[n] == 0 for n in CYCLES), (ch, bit)
            assert card.km.read(card.km.rmap.id_offset("STATUS")) == BAD_ALIGN
            for b in card.bases:
                assert np.all(card.hbm.view(b, card.layout.channel_bytes) == 0x5A), "a refused start wrote memory"
        card.set(f"hbm_{ch:02d}", base)
    assert card.start(log_n=6, batch=0) and card.record()["STATUS"] == 1 << 15      # bad_batch alone: aligned
    card.set("hbm_00", card.bases[0] + BURST_BYTES // 2)
    assert card.start(log_n=6, batch=0) and card.record()["STATUS"] == 1 << 15 | BAD_ALIGN
    card.set("hbm_00", card.bases[0])
    assert card.start(log_n=6, batch=1) and card.record()["STATUS"] == 0 and card.record()[CYCLES[0]] == 7


def test_the_host_refuses_a_base_the_kernel_would_refuse_though_the_runs_bursts_are_shorter(tmp_path):
    """A 2^4-point run of SMALL moves bursts of 2 beats (its host rule: 64-byte aligned), but the kernel's rule is
    the build's longest burst: the host's pointer check refuses the base first, naming bad_align, and sends
    nothing."""
    fake, be = open_card(tmp_path, read_register=False)
    bufs = be.allocate(HbmLayout(SMALL, 4), 1)
    short = max(HbmLayout(SMALL, 4).burst_beats, HbmLayout(SMALL, 4).unit_beats) * 32
    assert short < BURST_BYTES
    km = fake.kernel_model
    starts = km.starts
    for offset in range(short, BURST_BYTES, short):
        address = bufs.bos[2].address() + offset
        bufs.bos[2].address = lambda a=address: a
        with pytest.raises(X.BadPointer, match=rf"hbm_02 .* at 0x{address:x}: not aligned to {BURST_BYTES} bytes.*"
                                               r"STATUS.bad_align"):
            be._start_and_wait(bufs, R.Run(4))
        del bufs.bos[2].address
    assert km.starts == starts
    be._start_and_wait(bufs, R.Run(4))
    assert km.starts == starts + 1 and km.last_record[WORDS.index("STATUS")] == 0


@pytest.mark.parametrize("offset", [32, 1, BURST_BYTES - 32])
def test_the_host_names_a_misaligned_base_the_kernel_refused(tmp_path, monkeypatch, offset):
    """A buffer whose address is off the longest burst, sent past the host's own pointer check: the
    stand-in card's kernel refuses it (STATUS.bad_align in its record, nothing run) and the host's
    KernelRefused names the reason, the argument and its address; without the bypass the host refuses it
    first (BadPointer)."""
    fake, be = open_card(tmp_path, read_register=False)
    bufs = be.allocate(HbmLayout(SMALL, 6), 1)
    bo = bufs.bos[1]
    address = bo.address() + offset
    monkeypatch.setattr(bo, "address", lambda: address)
    km = fake.kernel_model
    starts, last_run = km.starts, km.last_run     # opening the card checked its identity with starts of its own
    with pytest.raises(X.BadPointer, match=r"hbm_01 .*not aligned"):
        be._start_and_wait(bufs, R.Run(6))
    assert km.starts == starts
    monkeypatch.setattr(be._runs, "check_pointers", lambda *a, **k: None)
    with pytest.raises(X.KernelRefused, match=rf"the kernel refused the start: rejected hbm_01 = 0x{address:x} "
                                              rf"\(STATUS.bad_align\): every base must be a multiple of "
                                              rf"{BURST_BYTES} bytes.*4 KiB boundary") as e:
        be._start_and_wait(bufs, R.Run(6))
    assert e.value.reasons == ("bad_align",) and "\n" not in str(e.value)
    assert km.last_record[WORDS.index("STATUS")] == BAD_ALIGN and km.starts == starts + 1
    assert km.last_run is last_run, "the refused start ran"


# -- the report: the kernel's own counts -----------------------------------------------------------------

def _cycles(run):
    """Made-up counts for a run of B x 2^log_n points, distinct per word."""
    work = run.batch << run.log_n
    return {"PASS1_DMA_CYCLES": work + 1, "PASS1_NTT_CYCLES": work + 2, "PASS2_DMA_CYCLES": work + 3,
            "PASS2_NTT_CYCLES": work + 4, "TOTAL_DMA_CYCLES": 2 * work + 50}


def test_the_report_gives_the_kernels_measured_cycles_and_time(tmp_path):
    fake, be = open_card(tmp_path, True, kernel_factory=lambda p, hbm, lay: KernelModel(p, hbm, lay,
                                                                                       record_cycles=_cycles))
    be.run(points(64))
    work = 64
    assert be.report["Measured cycles"] == (f"pass 1 {work + 1} DMA / {work + 2} NTT cycles, pass 2 {work + 3} DMA "
                                            f"/ {work + 4} NTT cycles, total {2 * work + 50} DMA cycles (measured "
                                            "by the kernel)")
    seconds = (2 * work + 50) / (SMALL.dma_mhz * 1e6)
    assert be.report["Measured time"] == (f"{seconds * 1e3:.4f} ms at the {SMALL.dma_mhz:g} MHz DMA clock (measured by the "
                                          "kernel, start to status record)")
    # 9 transforms of 2^4: calls of 4, 4 and 1 (B x N <= 2^6): the counts add up
    be.run(points(9 * 16).reshape(9, 16))
    total = sum(2 * (b << 4) + 50 for b in (4, 4, 1))
    assert be.report["Measured cycles"].endswith(f"total {total} DMA cycles over 3 calls (measured by the kernel)")
    assert be.kernel_measured == {"pass1_dma_cycles": 9 * 16 + 3, "pass1_ntt_cycles": 9 * 16 + 6,
                                  "pass2_dma_cycles": 9 * 16 + 9, "pass2_ntt_cycles": 9 * 16 + 12,
                                  "total_dma_cycles": total, "calls": 3, "seconds": pytest.approx(total / (SMALL.dma_mhz * 1e6))}


def test_a_kernel_without_counts_reports_no_measured_figures(tmp_path):
    fake, be = open_card(tmp_path, True)
    be.run(points(64))
    assert "Measured cycles" not in be.report and "Measured time" not in be.report and be.kernel_measured is None


def test_nantucket_run_json_carries_the_measured_figures(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    fake = FakePyxrt(kernel_factory=lambda p, hbm, lay: KernelModel(p, hbm, lay, record_cycles=_cycles))
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", SMALL)
    monkeypatch.setitem(backends.BACKENDS, "xrt", lambda **o: X.XrtBackend(pyxrt_module=fake, **o))
    inp, exp = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", "5", str(inp), str(exp)]) == 0
    capsys.readouterr()
    assert main(["run", str(inp), str(exp), "--backend", "xrt", "--xclbin", str(xclbin)]) == 0
    out = capsys.readouterr().out
    assert "Measured cycles... pass 1 33 DMA / 34 NTT cycles, pass 2 35 DMA / 36 NTT cycles, total 114 DMA" in out
    assert main(["run", str(inp), str(exp), "--backend", "xrt", "--xclbin", str(xclbin), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kernel_measured"]["total_dma_cycles"] == 114 and report["kernel_measured"]["calls"] == 1
    assert report["device_report"]["Measured time"].startswith(f"{114 / (SMALL.dma_mhz * 1e6) * 1e3:.4f} ms")


def test_the_sim_backend_reports_its_kernels_record_next_to_its_cycles(tmp_path, monkeypatch):
    """The sim backend's card with the model kernel in place of the Verilog one (no Verilator): its
    "Kernel cycles" (the simulation's count) stay, and the record's counts come too."""
    import nantucket.sim.cosim
    from nantucket.host.sim_backend import SimBackend
    from nantucket.sim.kernel_model import ModelCard

    def card(params, hbm, layout, **options):
        return ModelCard(params, hbm, layout, **options, ntt_cycles=lambda log_n, batch: 100 * batch)

    monkeypatch.setattr(nantucket.sim.cosim, "SimulatedKernel", card)
    monkeypatch.chdir(tmp_path)
    sim = SimBackend(SMALL)
    try:
        x = points(64)
        assert np.array_equal(sim.run(x), ntt_model.ntt(x))
        assert sim.report["Kernel cycles"].startswith("100 NTT cycles")
        assert "pass 1 " in sim.report["Measured cycles"] and "50 NTT cycles" in sim.report["Measured cycles"]
        dma = round(50 * SMALL.dma_mhz / SMALL.ntt_mhz)
        assert sim.kernel_measured["total_dma_cycles"] == 2 * dma
    finally:
        sim.close()


# -- the command line ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("fault, channel, text", [
    ("axi-read", 2, "HBM channel 2 answered SLVERR to a read of the kernel"),
    ("axi-write", 3, "HBM channel 3 answered SLVERR to a write of the kernel"),
    ("hang", 0, "the kernel did not finish")])
def test_nantucket_run_exits_3_with_one_line_on_a_device_fault(tmp_path, monkeypatch, capsys, fault, channel, text):
    monkeypatch.chdir(tmp_path)
    fake = FakePyxrt(fault=fault, fault_channel=channel)
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", SMALL)
    monkeypatch.setitem(backends.BACKENDS, "xrt", lambda **o: X.XrtBackend(pyxrt_module=fake, timeout_s=0.1, **o))
    inp, exp = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", "6", str(inp), str(exp)]) == 0
    capsys.readouterr()
    assert main(["run", str(inp), str(exp), "--backend", "xrt", "--xclbin", str(xclbin)]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"nantucket: device error: {text}") and err.count("\n") == 1, err
    assert main(["run", str(inp), str(exp), "--backend", "xrt", "--xclbin", str(xclbin), "--json"]) == 3
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["verdict"] == "ERROR" and report["exit_status"] == 3 and report["error"].startswith(text)

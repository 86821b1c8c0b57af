"""The simulator end of sim/cosim.py: serves register accesses and HBM backdoor requests for the host.

One cocotb test that connects to the host's socket and executes its commands against
sim.kernel_harness.KernelHarness with the build's clocks (BuildParams.dma_mhz on ap_clk, the DMA, and
ntt_mhz on ap_clk_2, the NTT engine; their defaults are hw/model/params.py's). AXI4-Lite goes through
cocotbext-axi's AxiLiteMaster, like XRT's register writes.
"""

import socket
import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge, Timer
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from nantucket.hw.model.params import BuildParams
from nantucket.sim.cosim import recv_msg, send_msg
from nantucket.hw.flow.runner import bench_facts



class CardTB:
    def __init__(self, dut, facts):
        self.dut = dut
        self.facts = facts
        self.params = BuildParams(**facts["params"]["params"])
        self.axil = None

    async def start(self):
        dut = self.dut
        cocotb.start_soon(Clock(dut.ap_clk, self.params.sim_period_ps("dma"), unit="ps").start())
        cocotb.start_soon(Clock(dut.ap_clk_2, self.params.sim_period_ps("ntt"), unit="ps").start())
        dut.refresh_en.value = int(self.facts.get("refresh", 1))
        dut.stall_en.value = int(self.facts.get("stalls", 0))
        dut.bd_load.value = 0
        dut.bd_dump.value = 0
        await self.inject(0, 0, 0)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), dut.ap_clk, dut.ap_rst_n,
                                  reset_active_level=False)
        await self.reset(16)

    async def reset(self, cycles: int):
        dut = self.dut
        dut.ap_rst_n.value = 0
        dut.ap_rst_n_2.value = 0
        await ClockCycles(dut.ap_clk, cycles)
        dut.ap_rst_n.value = 1
        dut.ap_rst_n_2.value = 1
        await ClockCycles(dut.ap_clk, 4)

    async def read(self, offset: int) -> int:
        r = await self.axil.read(offset, 4)
        return int.from_bytes(r.data, "little")

    async def write(self, offset: int, value: int) -> None:
        await self.axil.write(offset, value.to_bytes(4, "little"))

    async def inject(self, channel: int, rresp: int, bresp: int) -> None:
        """Error responses from one channel's HBM model, from the next ap_clk edge on."""
        await FallingEdge(self.dut.ap_clk)
        self.dut.inject_channel.value = channel
        self.dut.inject_rresp.value = rresp
        self.dut.inject_bresp.value = bresp

    async def pulse(self, port) -> None:
        """One ap_clk cycle of ``port`` high: the HBM models' file load or dump happens on that edge."""
        await FallingEdge(self.dut.ap_clk)
        port.value = 1
        await FallingEdge(self.dut.ap_clk)
        port.value = 0

    async def wait_idle(self, budget_ntt_cycles: int):
        """Run until the kernel is idle (CTRL.ap_idle, polled cheaply through the busy counter)."""
        dut = self.dut
        # Short steps first (a small run is done in a few hundred cycles, a refused start in a few), then
        # doubling: one timer callback per step instead of a Python wake-up per clock edge (the cycle count
        # itself comes from the harness's counter).
        step = 256
        spent = 0
        t0 = time.monotonic()
        while spent < budget_ntt_cycles:
            step = min(step, budget_ntt_cycles - spent)
            await Timer(step * self.params.sim_period_ps("ntt"), unit="ps")
            spent += step
            if not int(dut.kernel_busy.value):
                break
            if spent >> 17 != (spent - step) >> 17:
                wall = time.monotonic() - t0
                dut._log.info(f"kernel running: {spent} NTT cycles in {wall:.0f} s wall "
                              f"({spent / wall:.0f} cycles/s)")
            step = min(2 * step, 4096)
        idle = not int(dut.kernel_busy.value)
        err = [int(dut.err.value) >> (4 * c) & 15 for c in range(len(dut.err) // 4)]
        return idle, int(dut.ntt_cycles.value), [e for e in err if e] and err


@cocotb.test()
async def serve(dut):
    facts = bench_facts()
    tb = CardTB(dut, facts)
    await tb.start()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(facts["socket"])
    try:
        while True:
            cmd = recv_msg(sock)
            op, args = cmd[0], cmd[1:]
            try:
                if op == "quit":
                    send_msg(sock, ("ok",))
                    break
                elif op == "read":
                    send_msg(sock, ("ok", await tb.read(*args)))
                elif op == "write":
                    await tb.write(*args)
                    send_msg(sock, ("ok",))
                elif op == "load":
                    await tb.pulse(dut.bd_load)
                    send_msg(sock, ("ok",))
                elif op == "dump":
                    await tb.pulse(dut.bd_dump)
                    send_msg(sock, ("ok", facts["props"]["depth_beats"]))
                elif op == "wait_idle":
                    send_msg(sock, ("ok", *(await tb.wait_idle(*args))))
                elif op == "traffic":
                    await FallingEdge(dut.ap_clk)
                    dut.refresh_en.value, dut.stall_en.value = args
                    send_msg(sock, ("ok",))
                elif op == "inject":
                    await tb.inject(*args)
                    send_msg(sock, ("ok",))
                elif op == "step":
                    await ClockCycles(dut.ap_clk_2, args[0])
                    send_msg(sock, ("ok",))
                elif op == "interrupt":
                    await RisingEdge(dut.ap_clk)
                    send_msg(sock, ("ok", int(dut.interrupt.value)))
                elif op == "reset":
                    await tb.reset(*args)
                    send_msg(sock, ("ok",))
                else:
                    send_msg(sock, ("error", f"unknown command {op!r}"))
            except Exception as e:   # report to the host, keep serving
                send_msg(sock, ("error", f"{op}: {e!r}"))
    finally:
        sock.close()

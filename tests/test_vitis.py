"""Vitis build inputs (hw/flow/vitis.py, scripts/vitis_build.py): generated from BuildParams, consistent
with the register map and with the kernel RTL's ports; the driver stops cleanly without the tools and
runs them in order (with the HADAFileSet re-run) when they are there.

Where the tests need RTL without elaborating the kernel, the RTL side is a TEST-LOCAL STUB: an Amaranth
component with the kernel's Vitis port names and nothing inside, emitted with Amaranth's own Verilog
back end so the port parser sees the real emitter's style. The make targets are checked through
`make -n` (what would run) and `make build-inputs` into a temporary directory.
"""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from amaranth.back import verilog as amaranth_verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.flow import vitis as V
from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams

REPO = Path(__file__).resolve().parent.parent
PARAMS = [BuildParams(), BuildParams(lanes=4, log_core=6, channels=8)]
ids = lambda p: p.tag()


# -- TEST-LOCAL STUB of the kernel's top-level ports ---------------------------------------------

class _StubKernelPorts(wiring.Component):
    def __init__(self, channels, master_bits=R.MASTER_DATA_BITS, irq=True, drop_master=None):
        members = {"ap_clk": In(1), "ap_rst_n": In(1), "ap_clk_2": In(1), "ap_rst_n_2": In(1)}
        if irq:
            members["interrupt"] = Out(1)
        c = R.CONTROL_PORT
        members.update({f"{c}_awaddr": In(R.ADDRESS_BITS), f"{c}_awvalid": In(1), f"{c}_awready": Out(1),
                        f"{c}_wdata": In(32), f"{c}_wstrb": In(4), f"{c}_wvalid": In(1),
                        f"{c}_wready": Out(1), f"{c}_bresp": Out(2), f"{c}_bvalid": Out(1),
                        f"{c}_bready": In(1), f"{c}_araddr": In(R.ADDRESS_BITS), f"{c}_arvalid": In(1),
                        f"{c}_arready": Out(1), f"{c}_rdata": Out(32), f"{c}_rresp": Out(2),
                        f"{c}_rvalid": Out(1), f"{c}_rready": In(1)})
        for ch in range(channels):
            if ch == drop_master:
                continue
            m = R.master_port(ch)
            members.update({f"{m}_awaddr": Out(64), f"{m}_awlen": Out(8), f"{m}_awvalid": Out(1),
                            f"{m}_awready": In(1), f"{m}_wdata": Out(master_bits),
                            f"{m}_wstrb": Out(master_bits // 8), f"{m}_wlast": Out(1),
                            f"{m}_wvalid": Out(1), f"{m}_wready": In(1), f"{m}_bvalid": In(1),
                            f"{m}_bready": Out(1), f"{m}_araddr": Out(64), f"{m}_arlen": Out(8),
                            f"{m}_arvalid": Out(1), f"{m}_arready": In(1), f"{m}_rdata": In(master_bits),
                            f"{m}_rlast": In(1), f"{m}_rvalid": In(1), f"{m}_rready": Out(1)})
        super().__init__(members)

    def elaborate(self, platform):
        return Module()


def stub_verilog(params, **kw):
    return amaranth_verilog.convert(_StubKernelPorts(params.channels, **kw), name=R.KERNEL_NAME,
                                    emit_src=False)


# -- generated texts -------------------------------------------------------------------------------

@pytest.mark.parametrize("params", PARAMS, ids=ids)
def test_kernel_xml_matches_register_map(params):
    root = ET.fromstring(V.kernel_xml(params))
    kern = root.find("kernel")
    assert kern.get("name") == "nantucket" and kern.get("hwControlProtocol") == "ap_ctrl_hs"
    ports = {p.get("name"): p for p in kern.iter("port")}
    assert ports["s_axi_control"].get("mode") == "slave"
    assert int(ports["s_axi_control"].get("range"), 16) == 0x1000
    masters = [n for n, p in ports.items() if p.get("mode") == "master"]
    assert masters == [f"m{i:02d}_axi" for i in range(params.channels)]
    args = list(kern.iter("arg"))
    assert len(args) == 1 + params.channels + 13
    a0 = args[0]
    assert (a0.get("name"), a0.get("id"), int(a0.get("offset"), 16), int(a0.get("size"), 16),
            a0.get("addressQualifier"), a0.get("port")) == ("log_n", "0", 0x10, 4, "0", "s_axi_control")
    for i, a in enumerate(args[1:1 + params.channels]):
        assert a.get("name") == f"hbm_{i:02d}" and a.get("id") == str(i + 1)
        assert int(a.get("offset"), 16) == 0x18 + 8 * i and int(a.get("size"), 16) == 8
        assert a.get("addressQualifier") == "1" and a.get("port") == f"m{i:02d}_axi"
    after = 0x18 + 8 * params.channels          # the transform arguments follow the pointers
    got = [(a.get("name"), int(a.get("id")), int(a.get("offset"), 16), int(a.get("size"), 16), a.get("type"),
            a.get("addressQualifier"), a.get("port")) for a in args[1 + params.channels:]]
    c = params.channels
    assert got == [("flags", c + 1, after, 4, "uint", "0", "s_axi_control"),
                   ("batch", c + 2, after + 8, 4, "uint", "0", "s_axi_control"),
                   ("coset_shift_lo", c + 3, after + 16, 4, "uint", "0", "s_axi_control"),
                   ("coset_shift_hi", c + 4, after + 24, 4, "uint", "0", "s_axi_control"),
                   ("input_log_m", c + 5, after + 32, 4, "uint", "0", "s_axi_control"),
                   ("chain_log_n", c + 6, after + 40, 4, "uint", "0", "s_axi_control"),
                   ("row_step_lo", c + 7, after + 48, 4, "uint", "0", "s_axi_control"),
                   ("row_step_hi", c + 8, after + 56, 4, "uint", "0", "s_axi_control"),
                   ("op", c + 9, after + 64, 4, "uint", "0", "s_axi_control"),
                   ("commit_log_rows", c + 10, after + 72, 4, "uint", "0", "s_axi_control"),
                   ("commit_columns", c + 11, after + 80, 4, "uint", "0", "s_axi_control"),
                   ("commit_scheme", c + 12, after + 88, 4, "uint", "0", "s_axi_control"),
                   ("status", c + 13, after + 96, 8, "uint*", "1", "m00_axi")]     # the status record, HBM[0]


@pytest.mark.parametrize("params", PARAMS, ids=ids)
def test_connectivity_has_one_sp_line_per_master(params):
    cfg = V.connectivity_cfg(params)
    assert re.findall(r"^nk=(.*)$", cfg, flags=re.M) == ["nantucket:1"]
    sp = re.findall(r"^sp=nantucket_1\.m(\d\d)_axi:HBM\[(\d+)\]$", cfg, flags=re.M)
    assert [(int(a), int(b)) for a, b in sp] == [(i, i) for i in range(params.channels)]


@pytest.mark.parametrize("params", PARAMS, ids=ids)
def test_package_tcl(params, tmp_path):
    tcl = V.package_xo_tcl(params, [tmp_path / "rtl" / "nantucket.v"], tmp_path / "kernel.xml",
                           tmp_path / "nantucket.xo", tmp_path)
    assert tcl.count("{") == tcl.count("}")
    assert re.search(r"^package_xo -xo_path \{.*nantucket\.xo\} -kernel_name nantucket .*-kernel_xml "
                     r"\{.*kernel\.xml\}$", tcl, flags=re.M)
    for i in range(params.channels):
        assert f"ipx::associate_bus_interfaces -busif m{i:02d}_axi -clock ap_clk $core" in tcl
    assert "ap_clk_2 ap_rst_n_2" in tcl and "sdx_kernel_type rtl" in tcl
    assert f"m{params.channels:02d}_axi" not in tcl


def test_kernel_frequency_and_commands(tmp_path):
    vb = V.VitisBuild(BuildParams(), "hw_emu", out_dir=tmp_path)
    # clock 0 is the build's DMA clock (450 MHz by default: the HBM ports' limit), clock 1 the NTT request
    assert vb.kernel_frequency == "0:450|1:500"
    assert V.VitisBuild(BuildParams(dma_mhz=300), out_dir=tmp_path).kernel_frequency == "0:300|1:500"
    steps = dict(vb.commands())
    assert list(steps) == ["package", "link", "emconfig"]
    link = steps["link"]
    assert link[:4] == ["v++", "-l", "-t", "hw_emu"]
    assert link[link.index("--kernel_frequency") + 1] == "0:450|1:500"
    assert link[link.index("-o") + 1] == str(tmp_path / "nantucket.xclbin")
    assert "package" in steps and list(dict(V.VitisBuild(out_dir=tmp_path).commands())) == ["package", "link"]


def test_bad_build_arguments_are_named(tmp_path):
    with pytest.raises(ValueError, match="target"):
        V.VitisBuild(target="sw_emu", out_dir=tmp_path)
    with pytest.raises(TypeError, match="params"):
        V.VitisBuild(params={"lanes": 4}, out_dir=tmp_path)


# -- consistency with the RTL ----------------------------------------------------------------------

@pytest.mark.parametrize("params", PARAMS, ids=ids)
def test_stub_rtl_is_consistent(params):
    v = stub_verilog(params)
    ports = V.parse_verilog_ports(v)
    assert ports["m00_axi_wdata"] == ("output", 256) and ports["ap_clk_2"] == ("input", 1)
    assert ports["s_axi_control_awaddr"] == ("input", 12)
    assert V.check_consistency(params, v) == []


def test_consistency_catches_mismatches():
    params = BuildParams(lanes=4, log_core=6, channels=8)
    v = stub_verilog(params)
    xml = V.kernel_xml(params)
    cfg = V.connectivity_cfg(params)
    assert V.check_consistency(params, v, xml, cfg) == []
    bad_cfg = cfg.replace("sp=nantucket_1.m05_axi:HBM[5]\n", "")
    assert any("m05_axi" in p for p in V.check_consistency(params, v, xml, bad_cfg))
    swapped = cfg.replace("m05_axi:HBM[5]", "m05_axi:HBM[6]")
    assert any("HBM[6]" in p for p in V.check_consistency(params, v, xml, swapped))
    bad_xml = xml.replace('offset="0x040"', 'offset="0x044"')
    assert bad_xml != xml and any("m05_axi" in p for p in V.check_consistency(params, v, bad_xml, cfg))
    assert any("512" in p for p in V.check_consistency(params, stub_verilog(params, master_bits=512)))
    assert any("masters" in p for p in V.check_consistency(params, stub_verilog(params, drop_master=3)))
    assert any("interrupt" in p for p in V.check_consistency(params, stub_verilog(params, irq=False)))
    assert V.check_consistency(params, stub_verilog(params, irq=False),
                               V.kernel_xml(params, interrupt=False)) == []


def test_nested_amaranth_interfaces_are_flagged():
    # Amaranth names a nested interface member m00_axi__awaddr; Vitis would not infer m00_axi from it.
    from nantucket.hw.axi import Axi4Signature

    class Nested(wiring.Component):
        def __init__(self):
            super().__init__({"ap_clk": In(1), "m00_axi": Out(Axi4Signature())})

        def elaborate(self, platform):
            return Module()

    params = BuildParams(lanes=4, log_core=4, channels=2)
    problems = V.check_consistency(params, amaranth_verilog.convert(Nested(), name=R.KERNEL_NAME))
    assert any("'__'" in p and "m00_axi__" in p for p in problems)
    assert any("masters" in p for p in problems)


def test_parser_reads_ansi_headers_too():
    text = """
    // a hand-written wrapper
    module nantucket #(parameter W = 8) (
      input  wire        ap_clk, ap_rst_n,
      output wire [255:0] m00_axi_wdata,  /* 4 points */
      input  wire [11:0] s_axi_control_awaddr
    );
    endmodule
    module other(input [3:0] m01_axi_wdata); endmodule
    """
    ports = V.parse_verilog_ports(text)
    assert ports == {"ap_clk": ("input", 1), "ap_rst_n": ("input", 1),
                     "m00_axi_wdata": ("output", 256), "s_axi_control_awaddr": ("input", 12)}
    with pytest.raises(ValueError, match="verilog"):
        V.parse_verilog_ports(text, module="missing")


def test_kernel_rtl_is_consistent():
    params = BuildParams(lanes=4, log_core=4, channels=4)
    assert V.check_consistency(params, V.emit_kernel_verilog(params)) == []


# -- the driver ------------------------------------------------------------------------------------

def _driver(args, env_path, tmp_path, extra_env=None):
    env = dict(os.environ, PATH=str(env_path), PLATFORM_REPO_PATHS=str(tmp_path / "platforms"))
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-m", "nantucket.tools.vitis_build", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


def test_inputs_differ_only_by_the_lane_flag(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    for lanes in (8, 4):        # small builds: the driver emits the kernel Verilog too
        r = _driver(["--inputs-only", "--lanes", str(lanes), "--log-core", "4", "--channels", "4",
                     "--out-dir", str(tmp_path / f"L{lanes}")], empty, tmp_path)
        assert r.returncode == 0, r.stderr
        names = sorted(p.name for p in (tmp_path / f"L{lanes}").iterdir())
        assert {"kernel.xml", "connectivity.cfg", "package_xo.tcl", "build.sh", "build_params.json"} <= set(names)
        assert json.loads((tmp_path / f"L{lanes}" / "build_params.json").read_text())["params"]["lanes"] == lanes
    for name in ("kernel.xml", "connectivity.cfg"):      # lanes change the engine, not the interface
        assert (tmp_path / "L8" / name).read_text().split("\n")[1:] == \
               (tmp_path / "L4" / name).read_text().split("\n")[1:]


@pytest.mark.parametrize("target", ["hw", "hw_emu"])
def test_driver_stops_with_one_line_when_tools_are_missing(tmp_path, target):
    empty = tmp_path / "bin"
    empty.mkdir()
    out = tmp_path / "out"
    r = _driver(["--target", target, "--lanes", "4", "--log-core", "4", "--channels", "4",
                 "--out-dir", str(out)], empty, tmp_path)
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert len(err) == 1
    assert "vivado" in err[0] and "v++" in err[0] and "settings64.sh" in err[0]
    assert ("emconfigutil" in err[0]) == (target == "hw_emu")
    assert "platform xilinx_u55n_gen3x4_xdma_2_202110_1" in err[0]
    for name in ("kernel.xml", "connectivity.cfg", "package_xo.tcl", "build.sh"):
        assert (out / name).is_file()


def _fake_tools(bindir: Path, log: Path, hada_once: Path | None = None):
    """Shell stand-ins for vivado, v++ and emconfigutil that record their argv and make the outputs."""
    bindir.mkdir()
    scripts = {
        "vivado": 'echo "vivado $*" >> {log}; tcl=$(echo "$@" | sed "s/.*-source //"); '
                  'xo=$(sed -n "s/^package_xo -xo_path {{\\([^}}]*\\)}}.*/\\1/p" "$tcl"); '
                  'echo packaged > "$xo"',
        "v++": 'echo "v++ $*" >> {log}; '
               + ('if [ ! -e {flag} ]; then touch {flag}; echo "ERROR: [v++ 60-1] '
                  + V.HADA_ERROR + '"; exit 1; fi; ' if hada_once else '')
               + 'while [ $# -gt 0 ]; do if [ "$1" = -o ]; then echo xclbin > "$2"; fi; shift; done',
        "emconfigutil": 'echo "emconfigutil $*" >> {log}; '
                        'while [ $# -gt 0 ]; do if [ "$1" = --od ]; then echo {{}} > "$2/emconfig.json"; '
                        'fi; shift; done',
    }
    for name, body in scripts.items():
        p = bindir / name
        p.write_text("#!/bin/sh\n" + body.format(log=log, flag=hada_once) + "\n")
        p.chmod(0o755)


@pytest.mark.parametrize("target", ["hw", "hw_emu"])
def test_build_runs_the_tools_in_order(tmp_path, target):
    log = tmp_path / "calls.log"
    _fake_tools(tmp_path / "bin", log, hada_once=tmp_path / "hada_seen")
    plat = tmp_path / "platforms" / V.DEFAULT_PLATFORM
    plat.mkdir(parents=True)
    (plat / f"{V.DEFAULT_PLATFORM}.xpfm").write_text("<xpfm/>")
    monkey_path = f"{tmp_path / 'bin'}:/usr/bin:/bin"
    params = BuildParams(lanes=2, log_core=4, channels=4)
    vb = V.VitisBuild(params, target, out_dir=tmp_path / "out")
    lines = []
    old = dict(os.environ)
    os.environ.update(PATH=monkey_path, PLATFORM_REPO_PATHS=str(tmp_path / "platforms"))
    try:
        xclbin = V.build(vb, verilog=stub_verilog(params), log=lines.append, retries=1)
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert xclbin == vb.xclbin_path and xclbin.read_text() == "xclbin\n"
    calls = [c.split()[0] for c in log.read_text().splitlines()]
    assert calls == ["vivado", "v++", "v++"] + (["emconfigutil"] if target == "hw_emu" else [])
    assert any("re-running" in l and V.HADA_ERROR in l for l in lines)
    assert (vb.rtl_dir / "nantucket.v").read_text() == stub_verilog(params)
    assert (target == "hw_emu") == (vb.out_dir / "emconfig.json").is_file()
    link = log.read_text().splitlines()[1]
    assert f"--platform {plat / V.DEFAULT_PLATFORM}.xpfm" in link and f"0:{round(params.dma_mhz)}|1:500" in link


def test_build_reports_a_failing_step(tmp_path):
    bindir = tmp_path / "bin"
    _fake_tools(bindir, tmp_path / "calls.log")
    (bindir / "v++").write_text("#!/bin/sh\necho 'ERROR: timing'\nexit 3\n")
    plat = tmp_path / "platforms" / V.DEFAULT_PLATFORM
    plat.mkdir(parents=True)
    (plat / f"{V.DEFAULT_PLATFORM}.xpfm").write_text("<xpfm/>")
    params = BuildParams(lanes=2, log_core=4, channels=4)
    vb = V.VitisBuild(params, "hw", out_dir=tmp_path / "out")
    old = dict(os.environ)
    os.environ.update(PATH=f"{bindir}:/usr/bin:/bin", PLATFORM_REPO_PATHS=str(tmp_path / "platforms"))
    try:
        with pytest.raises(V.BuildFailed, match=r"link failed with exit status 3") as e:
            V.build(vb, verilog=stub_verilog(params), log=lambda m: None)
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert "re-run" not in str(e.value)
    assert "ERROR: timing" in (vb.out_dir / "link.out").read_text()


# -- build knobs -----------------------------------------------------------------------------------

def _make(*args, cwd=REPO):
    r = subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=900)
    return r


def test_vpp_flags_configs_and_hook_reach_the_link_command(tmp_path):
    cfg = tmp_path / "extra.cfg"
    cfg.write_text("[vivado]\nprop=run.impl_1.strategy=Performance_Explore\n")
    vb = V.VitisBuild(BuildParams(lanes=4, log_core=4, channels=4), "hw", out_dir=tmp_path / "out",
                      vpp_flags=("--optimize", "3"), config_files=(cfg,))
    link = dict(vb.commands())["link"]
    configs = [link[i + 1] for i, a in enumerate(link) if a == "--config"]
    assert configs == [str(vb.connectivity_path), str(cfg)]
    assert link[link.index("--vivado.prop") + 1] == f"run.impl_1.STEPS.OPT_DESIGN.TCL.PRE={vb.impl_hook_path}"
    assert link[link.index("--optimize") + 1] == "3" and link.index("--optimize") < link.index("-o")
    emu = dict(V.VitisBuild(BuildParams(lanes=4, log_core=4, channels=4), "hw_emu",
                            out_dir=tmp_path / "emu").commands())["link"]
    assert "--vivado.prop" not in emu                    # no implementation run in hw_emu
    with pytest.raises(ValueError, match="config_files"):
        V.VitisBuild(out_dir=tmp_path, config_files=(tmp_path / "missing.cfg",))


def test_inputs_carry_constraints_hook_and_xrt_ini(tmp_path):
    params = BuildParams(lanes=4, log_core=4, channels=2)
    vb = V.VitisBuild(params, "hw", out_dir=tmp_path, slr_plan=True, profile=True)
    written = vb.write_inputs(log=lambda m: None)
    assert {"constraints", "impl_hook", "slr_plan", "xrt.ini"} <= set(written)
    hook = vb.impl_hook_path.read_text()
    assert f"source {{{vb.cdc_path}}}" in hook and f"source {{{vb.slr_path}}}" in hook
    cdc = vb.cdc_path.read_text()
    verilog = vb.verilog_path.read_text()
    # one constraint line per synchronizer module of the Verilog (counted here from its ASYNC_REG regs)
    sync_modules = {m.group(1) for m in re.finditer(
        r"^module \\nantucket\.(\S+) \((?:(?!^endmodule).)*?\(\* ASYNC_REG = \"TRUE\" \*\)(?:\s*\(\*[^*]*\*\))*\s*reg ",
        verilog, flags=re.M | re.S)}
    calls = re.findall(r"^  nantucket_(?:async_)?ff_sync \$k \{(\S+)\}", cdc, flags=re.M)
    assert sorted(calls) == sorted(p.replace(".", "/") for p in sync_modules) and calls
    assert "module nantucket(" in verilog
    ini = vb.xrt_ini_path.read_text()
    assert "[Debug]" in ini and "device_trace=fine" in ini
    assert "--profile.data" in dict(vb.commands())["link"]
    assert "device_trace" not in V.xrt_ini(False)


def test_make_build_inputs_honours_every_knob(tmp_path):
    cfg = tmp_path / "extra.cfg"
    cfg.write_text("[advanced]\n")
    out = tmp_path / "out"
    r = _make("build-inputs", "TARGET=hw_emu", "FIELD=koalabear", "LANES=8", "LOG_CORE=4", "CHANNELS=4", f"VITIS_OUT={out}",
              "PLATFORM=my_platform", "VITIS_FLAGS=--optimize 3 --temp_dir 'a b'", f"VITIS_CFG={cfg}",
              "SLR_PLAN=1")
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads((out / "build_params.json").read_text())
    assert got["target"] == "hw_emu" and got["platform"] == "my_platform"
    assert (got["params"]["lanes"], got["params"]["log_core"], got["params"]["channels"]) == (8, 4, 4)
    assert got["params"]["field"] == "koalabear"
    assert got["vpp_flags"] == ["--optimize", "3", "--temp_dir", "a b"]
    assert got["config_files"] == [str(cfg)] and got["slr_plan"] is True
    script = (out / "build.sh").read_text()
    assert "v++ -l -t hw_emu" in script and "--optimize 3 --temp_dir 'a b'" in script
    assert f"--config {cfg}" in script and "emconfigutil" in script
    assert (out / "nantucket_slr.tcl").is_file() and (out / "nantucket_cdc.tcl").is_file()


def test_make_run_uses_the_built_xclbin():
    emu = _make("-n", "run", "TARGET=hw_emu", "LOG_N=8").stdout
    assert "XCL_EMULATION_MODE=hw_emu" in emu and "--backend xrt" in emu
    assert "--xclbin build/hw_emu/nantucket.xclbin" in emu and "build/hw_emu/xrt.ini" in emu
    hw = _make("-n", "run", "TARGET=hw").stdout
    assert "XCL_EMULATION_MODE" not in hw and "--xclbin build/hw/nantucket.xclbin" in hw
    plain = _make("-n", "run").stdout
    assert "--backend sim" in plain and "--xclbin" not in plain


def test_make_rtl_emits_the_packaged_top(tmp_path):
    assert "-m nantucket.tools.vitis_build --rtl build/rtl/nantucket.v" in _make("-n", "rtl").stdout
    out = tmp_path / "rtl" / "nantucket.v"
    r = _driver(["--rtl", str(out), "--lanes", "4", "--log-core", "4", "--channels", "2"], "/usr/bin:/bin",
                tmp_path)
    assert r.returncode == 0, r.stderr
    ports = V.parse_verilog_ports(out.read_text(), module="nantucket")
    assert ports["ap_clk_2"] == ("input", 1) and "m01_axi_wdata" in ports


def test_make_clean_leaves_the_xclbins(tmp_path):
    build = tmp_path / "build"
    for d in ("hw", "hw_emu", "run", "rtl", "synth"):
        (build / d).mkdir(parents=True)
        (build / d / ("nantucket.xclbin" if d.startswith("hw") else "x.txt")).write_text("x")
    lines = _make("-n", "clean", f"BUILD={build}").stdout.replace("\\\n", " ").splitlines()
    find = [l for l in lines if "find" in l]
    assert len(find) == 1
    subprocess.run(["bash", "-c", find[0].lstrip("@")], check=True)
    assert sorted(p.name for p in build.iterdir()) == ["hw", "hw_emu"]
    assert (build / "hw" / "nantucket.xclbin").is_file() and (build / "hw_emu" / "nantucket.xclbin").is_file()
    assert f"rm -rf {build}/hw {build}/hw_emu" in _make("-n", "clean-xclbin", f"BUILD={build}").stdout


def test_make_build_inputs_gives_a_31_bit_field_its_default_lanes(tmp_path):
    """Without LANES a 31-bit field's build gets its default 32 lanes (BuildParams.default_for), which at
    k = 4 do not fit: the one-line error says so; an unknown field stops with one line; neither writes
    anything. (FIELD= with LANES= reaching the build: test_make_build_inputs_honours_every_knob.)"""
    for field, needle in (("babybear", "lanes: 32 lanes exceed the 16 columns"), ("babybare", "babybear")):
        r = _make("build-inputs", f"FIELD={field}", "LOG_CORE=4", "CHANNELS=4", f"VITIS_OUT={tmp_path / field}")
        assert r.returncode != 0 and needle in r.stderr and not (tmp_path / field).exists(), r.stderr


def test_make_run_and_sim_full_take_the_field():
    run = _make("-n", "run", "FIELD=koalabear", "LOG_N=8").stdout
    assert run.count("--field koalabear") == 2 and "in_8_random_koalabear.txt" in run
    assert "--field goldilocks" in _make("-n", "run").stdout
    full = _make("-n", "sim-full", "FIELD=babybear").stdout
    assert "--field babybear" in full and "--lanes" not in full

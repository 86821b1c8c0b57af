"""The Vitis build flow: every input AMD's tools need, generated from the build parameters.

For a target (``hw`` or ``hw_emu``) and a platform, :class:`VitisBuild` writes into ``build/<target>/`` (the
build folder of hw/flow/build_root.py: ~/.cache/nantucket when installed from a wheel):

- ``rtl/nantucket.v``: the kernel Verilog (from ``hw.flow.catalog``'s "kernel" component, top module
  ``nantucket``), when that component exists;
- ``kernel.xml``: the RTL kernel description, generated from :class:`hw.model.regmap.RegisterMap`
  (the same map the gateware decodes), so the argument offsets cannot drift from the RTL;
- ``package_xo.tcl``: the Vivado batch script that packages the Verilog as an IP and runs ``package_xo``;
- ``connectivity.cfg``: ``nk=nantucket:1`` and one ``sp=nantucket_1.mNN_axi:HBM[NN]`` per channel;
- ``nantucket_cdc.tcl``: the clock-domain-crossing constraints of that Verilog (:mod:`hw.flow.constraints`),
  and ``impl_pre.tcl``, the implementation hook v++ runs before opt_design (it sources the CDC
  constraints and, with ``slr_plan``, ``nantucket_slr.tcl``, the pblocks of :mod:`hw.flow.slr_plan`);
- ``build.sh``: the exact tool commands, in order (package, link, and ``emconfigutil`` for hw_emu);
- ``xrt.ini``: XRT's profiling switches, for runs of the xclbin next to it;
- ``build_params.json``: the parameters the inputs were generated from.

:func:`build` then checks for ``vivado``, ``v++`` (and ``emconfigutil``) and the platform, stops with
one line naming what is missing when something is, and otherwise runs the commands with elapsed time,
recognising the known intermittent Vitis 2022.1 ``HADAFileSet::getSrcOptions() : NULL pointer``
failure (re-running is the workaround; ``retries`` does it automatically).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.hw.flow.build_root import build_base

__all__ = [
    "DEFAULT_PLATFORM", "TARGETS", "NTT_CLOCK_REQUEST_MHZ", "HADA_ERROR", "SETTINGS_HINT", "REPO_ROOT",
    "VitisBuild", "ToolsMissing", "BuildFailed", "kernel_xml", "connectivity_cfg", "package_xo_tcl",
    "parse_verilog_ports", "check_consistency", "find_platform", "missing_tools", "emit_kernel_verilog",
    "kernel_constraints", "xrt_ini", "build",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PLATFORM = "xilinx_u55n_gen3x4_xdma_2_202110_1"
TARGETS = ("hw", "hw_emu")
#: Clock 1 (ap_clk_2, the NTT engine) is requested at 500 MHz; v++ scales it down to what timing
#: closes at (the reference closed at 464 MHz). The projections use BuildParams.ntt_mhz instead: the
#: clock the open-flow timing estimate supports.
NTT_CLOCK_REQUEST_MHZ = 500
#: The known intermittent Vitis 2022.1 link failure; the workaround is to run the build again.
HADA_ERROR = "HADAFileSet::getSrcOptions() : NULL pointer"
SETTINGS_HINT = ("source /tools/Xilinx/Vitis/2022.1/settings64.sh and /opt/xilinx/xrt/setup.sh, "
                 "and set PLATFORM_REPO_PATHS=/opt/xilinx/platforms")
#: Where platforms live when PLATFORM_REPO_PATHS is not set.
DEFAULT_PLATFORM_DIRS = ("/opt/xilinx/platforms",)

_VENDOR = "nantucket.dev"
_LIBRARY = "RTLKernel"
_IP_VERSION = "1.0"


class ToolsMissing(RuntimeError):
    """vivado, v++, emconfigutil, the platform or the kernel RTL is not available (one-line message)."""


class BuildFailed(RuntimeError):
    """A Vitis tool returned an error; the message names the step and its log."""


# -- generated texts -------------------------------------------------------------------------------

def kernel_xml(params: BuildParams, interrupt: bool = True) -> str:
    """The RTL kernel's kernel.xml: control slave, one master per channel, the arguments of the
    register map with their ids, offsets and sizes."""
    rmap = R.RegisterMap(params)
    root = ET.Element("root", versionMajor="1", versionMinor="6")
    k = ET.SubElement(root, "kernel", name=R.KERNEL_NAME, language="ip_c",
                      vlnv=f"{_VENDOR}:{_LIBRARY}:{R.KERNEL_NAME}:{_IP_VERSION}", attributes="",
                      preferredWorkGroupSizeMultiple="0", workGroupSize="1",
                      interrupt="true" if interrupt else "false", hwControlProtocol="ap_ctrl_hs")
    ports = ET.SubElement(k, "ports")
    ET.SubElement(ports, "port", name=R.CONTROL_PORT, mode="slave", range=f"0x{R.ADDRESS_RANGE:X}",
                  dataWidth=str(R.DATA_BITS), portType="addressable", base="0x0")
    for port in rmap.master_ports:
        ET.SubElement(ports, "port", name=port, mode="master", range="0xFFFFFFFFFFFFFFFF",
                      dataWidth=str(R.MASTER_DATA_BITS), portType="addressable", base="0x0")
    args = ET.SubElement(k, "args")
    for a in rmap.args:
        ET.SubElement(args, "arg", name=a.name, addressQualifier=str(a.address_qualifier),
                      id=str(a.index), port=a.port, size=f"0x{a.size:X}", offset=f"0x{a.offset:03X}",
                      type=a.c_type, hostOffset="0x0", hostSize=f"0x{a.size:X}")
    ET.indent(root, "  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def connectivity_cfg(params: BuildParams) -> str:
    """v++ --link config: one compute unit, master NN on HBM pseudo-channel NN."""
    rmap = R.RegisterMap(params)
    lines = [f"# Generated by hw/flow/vitis.py for {params.tag()}; do not edit.", "[connectivity]",
             f"nk={R.KERNEL_NAME}:1"]
    for a in rmap.pointer_args:
        lines.append(f"sp={R.KERNEL_NAME}_1.{a.port}:HBM[{a.channel}]")
    return "\n".join(lines) + "\n"


def package_xo_tcl(params: BuildParams, verilog_files: list[Path], kernel_xml_path: Path,
                   xo_path: Path, work_dir: Path) -> str:
    """Vivado batch script: package the Verilog as a Vitis RTL kernel IP, then ``package_xo``."""
    rmap = R.RegisterMap(params)
    q = lambda p: "{" + str(p) + "}"                        # Tcl brace-quoting of a path
    files = " ".join(q(f) for f in verilog_files)
    lines = [
        f"# Generated by hw/flow/vitis.py for {params.tag()}; do not edit.",
        f"# vivado -mode batch -source package_xo.tcl  (in {work_dir})",
        f"set work_dir {q(work_dir)}",
        "set ip_dir $work_dir/packaged_kernel",
        "set proj_dir $work_dir/tmp_kernel_pack",
        "file delete -force $ip_dir $proj_dir",
        "create_project -force kernel_pack $proj_dir",
        f"add_files -norecurse [list {files}]",
        f"set_property top {R.KERNEL_NAME} [current_fileset]",
        "update_compile_order -fileset sources_1",
        f"ipx::package_project -root_dir $ip_dir -vendor {_VENDOR} -library {_LIBRARY} "
        "-taxonomy /KernelIP -import_files -set_current false",
        "ipx::unload_core $ip_dir/component.xml",
        "ipx::edit_ip_in_project -upgrade true -name tmp_edit_project -directory $ip_dir "
        "$ip_dir/component.xml",
        "set core [ipx::current_core]",
        "set_property core_revision 1 $core",
        "foreach up [ipx::get_user_parameters -of_objects $core] {",
        "  ipx::remove_user_parameter [get_property NAME $up] $core",
        "}",
        "set_property sdx_kernel true $core",
        "set_property sdx_kernel_type rtl $core",
        "set_property vitis_drc {ctrl_protocol ap_ctrl_hs} $core",
        "set_property ipi_drc {ignore_freq_hz true} $core",
        "# Two kernel clocks: ap_clk (clock 0, DMA + control) and ap_clk_2 (clock 1, NTT engine).",
        "foreach {clk rst} {ap_clk ap_rst_n ap_clk_2 ap_rst_n_2} {",
        "  if {[llength [ipx::get_bus_interfaces $clk -of_objects $core]] == 0} {",
        "    ipx::infer_bus_interface $clk xilinx.com:signal:clock_rtl:1.0 $core",
        "  }",
        "  if {[llength [ipx::get_bus_interfaces $rst -of_objects $core]] == 0} {",
        "    ipx::infer_bus_interface $rst xilinx.com:signal:reset_rtl:1.0 $core",
        "  }",
        "  set busif [ipx::get_bus_interfaces $clk -of_objects $core]",
        "  if {[llength [ipx::get_bus_parameters FREQ_TOLERANCE_HZ -of_objects $busif]] == 0} {",
        "    ipx::add_bus_parameter FREQ_TOLERANCE_HZ $busif",
        "  }",
        "  set_property value -1 [ipx::get_bus_parameters FREQ_TOLERANCE_HZ -of_objects $busif]",
        "  ipx::associate_bus_interfaces -clock $clk -reset $rst $core",
        "}",
        f"ipx::associate_bus_interfaces -busif {R.CONTROL_PORT} -clock ap_clk $core",
    ]
    for port in rmap.master_ports:
        lines.append(f"ipx::associate_bus_interfaces -busif {port} -clock ap_clk $core")
    lines += [
        "set_property xpm_libraries {XPM_CDC XPM_MEMORY XPM_FIFO} $core",
        "set_property supported_families { } $core",
        "set_property auto_family_support_level level_2 $core",
        "ipx::create_xgui_files $core",
        "ipx::update_checksums $core",
        "ipx::check_integrity -kernel $core",
        "ipx::save_core $core",
        "close_project -delete",
        f"file delete -force {q(xo_path)}",
        f"package_xo -xo_path {q(xo_path)} -kernel_name {R.KERNEL_NAME} -ip_directory $ip_dir "
        f"-kernel_xml {q(kernel_xml_path)}",
    ]
    return "\n".join(lines) + "\n"


# -- reading the RTL back --------------------------------------------------------------------------

_PORT_DECL = re.compile(r"\b(input|output|inout)\b\s*(?:wire|reg|logic)?\s*(?:signed\s*)?"
                        r"(?:\[\s*(\d+)\s*:\s*(\d+)\s*\])?\s*([A-Za-z_][\w$]*)")


def parse_verilog_ports(verilog: str, module: str = R.KERNEL_NAME) -> dict[str, tuple[str, int]]:
    """``{port: (direction, width)}`` of ``module`` in a Verilog text (ANSI or non-ANSI headers)."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", verilog, flags=re.S)
    text = re.sub(r"\(\*.*?\*\)", "", text, flags=re.S)                 # attributes
    m = re.search(rf"\bmodule\s+\\?{re.escape(module)}\b(.*?)\bendmodule\b", text, flags=re.S)
    if not m:
        raise ValueError(f"verilog: no module {module!r}")
    body = m.group(1)
    ports = {}
    for stmt in re.split(r"[;()]|,(?=\s*(?:input|output|inout)\b)", body):
        d = _PORT_DECL.search(stmt)
        if not d:
            continue
        direction, msb, lsb = d.group(1), d.group(2), d.group(3)
        width = abs(int(msb) - int(lsb)) + 1 if msb is not None else 1
        names = [d.group(4)] + re.findall(r",\s*([A-Za-z_][\w$]*)", stmt[d.end():])
        for name in names:
            ports[name] = (direction, width)
    return ports


def check_consistency(params: BuildParams, verilog: str, xml_text: str | None = None,
                      cfg_text: str | None = None) -> list[str]:
    """Problems (empty list when none) between the kernel Verilog and the generated build inputs:
    every AXI master in the RTL has an ``sp=`` line and a kernel.xml port and argument with the right
    offset and width; the control slave and the clocks Vitis infers are there."""
    xml_text = kernel_xml(params) if xml_text is None else xml_text
    cfg_text = connectivity_cfg(params) if cfg_text is None else cfg_text
    rmap = R.RegisterMap(params)
    ports = parse_verilog_ports(verilog)
    problems = []
    for p in ("ap_clk", "ap_rst_n", "ap_clk_2", "ap_rst_n_2"):
        if ports.get(p, ("", 0))[0] != "input":
            problems.append(f"RTL: no input port {p}")
    doubled = sorted(n for n in ports if re.match(r"(m\d+_axi|s_axi_control)__", n))
    if doubled:
        problems.append(f"RTL: ports such as {doubled[0]} have Amaranth's '__' member separator; Vitis "
                        "infers AXI interfaces only from '<interface>_<signal>' names (flatten the "
                        "interfaces in the top-level wrapper)")
    masters = sorted({m.group(1) for name in ports if (m := re.match(r"(m\d+_axi)_(?!_)", name))})
    if masters != list(rmap.master_ports):
        problems.append(f"RTL masters {masters} differ from the register map's {list(rmap.master_ports)}")
    for sig, width in (("awaddr", R.ADDRESS_BITS), ("araddr", R.ADDRESS_BITS), ("wdata", R.DATA_BITS)):
        got = ports.get(f"{R.CONTROL_PORT}_{sig}")
        if got is None or got[1] != width:
            problems.append(f"RTL: {R.CONTROL_PORT}_{sig} is {got}, expected {width} bits")
    root = ET.fromstring(xml_text)
    kern = root.find("kernel")
    xml_ports = {p.get("name"): p for p in kern.iter("port")}
    xml_args = {a.get("port"): a for a in kern.iter("arg")
                if a.get("addressQualifier") == "1" and a.get("name") != R.RECORD_ARG}
    record = rmap.record_arg
    if not any(a.get("name") == record.name and a.get("port") == record.port and a.get("addressQualifier") == "1"
               and int(a.get("offset"), 16) == record.offset for a in kern.iter("arg")):
        problems.append(f"kernel.xml: no pointer argument {record.name} on {record.port} at 0x{record.offset:X}")
    sp = dict(re.findall(r"^sp=\w+_1\.(\w+):(\S+)$", cfg_text, flags=re.M))
    for m in masters:
        wdata = ports.get(f"{m}_wdata")
        if wdata is None:
            problems.append(f"RTL: master {m} has no {m}_wdata")
        elif m not in xml_ports or int(xml_ports[m].get("dataWidth")) != wdata[1]:
            problems.append(f"kernel.xml: port {m} missing or not {wdata[1]} bits wide")
        if m not in sp:
            problems.append(f"connectivity.cfg: no sp= line for {m}")
        arg = xml_args.get(m)
        if arg is None:
            problems.append(f"kernel.xml: no pointer argument on {m}")
            continue
        want = next(a for a in rmap.pointer_args if a.port == m)
        if (int(arg.get("offset"), 16), int(arg.get("size"), 16), int(arg.get("id"))) != \
                (want.offset, want.size, want.index):
            problems.append(f"kernel.xml: argument on {m} is at {arg.get('offset')}/{arg.get('size')} "
                            f"id {arg.get('id')}, the register map says 0x{want.offset:X}/{want.size} "
                            f"id {want.index}")
        if sp.get(m) != f"HBM[{want.channel}]":
            problems.append(f"connectivity.cfg: {m} goes to {sp.get(m)}, expected HBM[{want.channel}]")
    has_irq = ports.get("interrupt", ("", 0))[0] == "output"
    if (kern.get("interrupt") == "true") != has_irq:
        problems.append(f"kernel.xml says interrupt={kern.get('interrupt')} but the RTL "
                        f"{'has' if has_irq else 'has no'} interrupt output")
    return problems


# -- the kernel RTL --------------------------------------------------------------------------------

def emit_kernel_verilog(params: BuildParams) -> str:
    """The kernel's Verilog with top module ``nantucket``, from hw.flow.catalog's "kernel" component.

    Raises ToolsMissing while the kernel is not in the catalog yet.
    """
    try:
        from nantucket.hw.flow import catalog
    except ImportError as e:
        raise ToolsMissing(f"kernel RTL: hw.flow.catalog is not available ({e})") from e
    if "kernel" not in getattr(catalog, "COMPONENTS", {}):
        raise ToolsMissing("kernel RTL: hw.flow.catalog has no 'kernel' component yet")
    component = catalog.build("kernel", lanes=params.lanes, log_core=params.log_core,
                              channels=params.channels)
    return catalog.verilog_of(component, R.KERNEL_NAME)


def kernel_constraints(verilog: str, ntt_clock_mhz: int = NTT_CLOCK_REQUEST_MHZ) -> str:
    """The clock-crossing constraint Tcl of the kernel Verilog; the dual-clock RAMs get one period of
    the requested NTT clock (the synchronizers carry their own limit in the RTL)."""
    from nantucket.hw.flow.constraints import cdc_tcl
    from nantucket.hw.kernel import VitisKernel
    return cdc_tcl(verilog, R.KERNEL_NAME, VitisKernel.CLOCK_NETS, ram_delay_ns=1000.0 / ntt_clock_mhz)


def xrt_ini(device_trace: bool) -> str:
    """XRT's runtime switches for a run of the xclbin next to it (``XRT_INI_PATH``): the host-side
    summary and native-API trace always; the device trace only for an xclbin linked with the
    profiling monitors (``profile``)."""
    lines = ["# Generated by hw/flow/vitis.py; XRT reads it from XRT_INI_PATH (make run sets it).",
             "[Debug]", "opencl_summary=true", "native_xrt_trace=true", "device_counters=true"]
    if device_trace:
        lines += ["device_trace=fine", "trace_buffer_size=64M", "stall_trace=all"]
    return "\n".join(lines) + "\n"


# -- tools and platform ----------------------------------------------------------------------------

def find_platform(platform: str) -> Path | None:
    """The platform's .xpfm: ``platform`` itself when it is a path to one, else
    ``<dir>/<platform>/<platform>.xpfm`` under PLATFORM_REPO_PATHS or /opt/xilinx/platforms."""
    p = Path(platform)
    if p.suffix == ".xpfm":
        return p if p.is_file() else None
    dirs = [d for d in os.environ.get("PLATFORM_REPO_PATHS", "").split(":") if d] or DEFAULT_PLATFORM_DIRS
    for d in dirs:
        cand = Path(d) / platform / f"{platform}.xpfm"
        if cand.is_file():
            return cand
    return None


def missing_tools(target: str, platform: str) -> list[str]:
    """What the build needs but cannot find: tool names and/or ``platform <name>``."""
    tools = ["vivado", "v++"] + (["emconfigutil"] if target == "hw_emu" else [])
    missing = [t for t in tools if shutil.which(t) is None]
    if find_platform(platform) is None:
        missing.append(f"platform {platform}")
    return missing


# -- the build -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class VitisBuild:
    """One Vitis build: parameters, target, platform and the directory everything goes to."""
    params: BuildParams = field(default_factory=BuildParams)
    target: str = "hw"
    platform: str = DEFAULT_PLATFORM
    out_dir: Path | None = None
    ntt_clock_mhz: int = NTT_CLOCK_REQUEST_MHZ
    #: extra v++ --link flags (VITIS_FLAGS), appended after the generated ones
    vpp_flags: tuple[str, ...] = ()
    #: extra v++ config files (VITIS_CFG), given after connectivity.cfg
    config_files: tuple[Path, ...] = ()
    #: add the pblocks of the SLR plan to the implementation hook (SLR_PLAN=1)
    slr_plan: bool = False
    #: link the profiling monitors (PROFILE=1) and switch the device trace on in xrt.ini
    profile: bool = False

    def __post_init__(self):
        if not isinstance(self.params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(self.params).__name__}")
        if self.target not in TARGETS:
            raise ValueError(f"target: must be one of {TARGETS}, got {self.target!r}")
        if not isinstance(self.platform, str) or not self.platform:
            raise ValueError(f"platform: expected a platform name or .xpfm path, got {self.platform!r}")
        if not isinstance(self.ntt_clock_mhz, int) or self.ntt_clock_mhz <= 0:
            raise ValueError(f"ntt_clock_mhz: expected a positive int, got {self.ntt_clock_mhz!r}")
        if isinstance(self.vpp_flags, str) or not all(isinstance(f, str) for f in self.vpp_flags):
            raise TypeError(f"vpp_flags: expected a sequence of strings, got {self.vpp_flags!r}")
        object.__setattr__(self, "vpp_flags", tuple(self.vpp_flags))
        cfgs = tuple(Path(c).resolve() for c in self.config_files)
        for c in cfgs:
            if not c.is_file():
                raise ValueError(f"config_files: no file {c}")
        object.__setattr__(self, "config_files", cfgs)
        out = Path(self.out_dir) if self.out_dir is not None else build_base() / self.target
        object.__setattr__(self, "out_dir", out.resolve())

    # paths
    @property
    def rtl_dir(self) -> Path: return self.out_dir / "rtl"
    @property
    def verilog_path(self) -> Path: return self.rtl_dir / f"{R.KERNEL_NAME}.v"
    @property
    def kernel_xml_path(self) -> Path: return self.out_dir / "kernel.xml"
    @property
    def package_tcl_path(self) -> Path: return self.out_dir / "package_xo.tcl"
    @property
    def connectivity_path(self) -> Path: return self.out_dir / "connectivity.cfg"
    @property
    def script_path(self) -> Path: return self.out_dir / "build.sh"
    @property
    def params_path(self) -> Path: return self.out_dir / "build_params.json"
    @property
    def xo_path(self) -> Path: return self.out_dir / f"{R.KERNEL_NAME}.xo"
    @property
    def xclbin_path(self) -> Path: return self.out_dir / f"{R.KERNEL_NAME}.xclbin"
    @property
    def cdc_path(self) -> Path: return self.out_dir / f"{R.KERNEL_NAME}_cdc.tcl"
    @property
    def slr_path(self) -> Path: return self.out_dir / f"{R.KERNEL_NAME}_slr.tcl"
    @property
    def impl_hook_path(self) -> Path: return self.out_dir / "impl_pre.tcl"
    @property
    def xrt_ini_path(self) -> Path: return self.out_dir / "xrt.ini"

    @property
    def kernel_frequency(self) -> str:
        """v++ --kernel_frequency: clock 0 (ap_clk, DMA) and clock 1 (ap_clk_2, NTT) in MHz."""
        return f"0:{int(round(self.params.dma_mhz))}|1:{self.ntt_clock_mhz}"

    def commands(self) -> list[tuple[str, list[str]]]:
        """(step name, argv) of every tool run, in order; run in ``out_dir``."""
        platform = str(find_platform(self.platform) or self.platform)
        steps = [
            ("package", ["vivado", "-mode", "batch", "-nojournal", "-log", "package_xo.log",
                         "-source", str(self.package_tcl_path)]),
            ("link", ["v++", "-l", "-t", self.target, "--platform", platform,
                      "--config", str(self.connectivity_path),
                      *[a for c in self.config_files for a in ("--config", str(c))],
                      "--kernel_frequency", self.kernel_frequency,
                      # The kernel's constraints run in Vivado's implementation (not in hw_emu).
                      *(["--vivado.prop", f"run.impl_1.STEPS.OPT_DESIGN.TCL.PRE={self.impl_hook_path}"]
                        if self.target == "hw" else []),
                      *(["--profile.data", "all:all:all", "--profile.stall", "all:all:all",
                         "--profile.exec", "all:all:all"] if self.profile else []),
                      "--temp_dir", str(self.out_dir / "_x"), "--log_dir", str(self.out_dir / "logs"),
                      "--report_dir", str(self.out_dir / "reports"),
                      *self.vpp_flags,
                      "-o", str(self.xclbin_path), str(self.xo_path)]),
        ]
        if self.target == "hw_emu":
            steps.append(("emconfig", ["emconfigutil", "--platform", platform, "--od", str(self.out_dir)]))
        return steps

    def write_inputs(self, verilog: str | None = None, log=print) -> dict[str, Path]:
        """Write every generated input to ``out_dir``; the Verilog too when given (or when the kernel
        is in hw.flow.catalog). Returns {what: path}. Never needs a Xilinx tool."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        written = {}
        if verilog is None:
            try:
                verilog = emit_kernel_verilog(self.params)
            except ToolsMissing as e:
                log(f"vitis: {e}; writing the other inputs only")
        interrupt = True
        if verilog is not None:
            self.rtl_dir.mkdir(exist_ok=True)
            self.verilog_path.write_text(verilog)
            written["verilog"] = self.verilog_path
            interrupt = parse_verilog_ports(verilog).get("interrupt", ("",))[0] == "output"
        xml_text = kernel_xml(self.params, interrupt=interrupt)
        texts = {
            "kernel.xml": (self.kernel_xml_path, xml_text),
            "connectivity": (self.connectivity_path, connectivity_cfg(self.params)),
            "package_tcl": (self.package_tcl_path, package_xo_tcl(
                self.params, [self.verilog_path], self.kernel_xml_path, self.xo_path, self.out_dir)),
            "params": (self.params_path, json.dumps(
                {"params": self.params.as_dict(), "target": self.target, "platform": self.platform,
                 "kernel_frequency": self.kernel_frequency, "vpp_flags": list(self.vpp_flags),
                 "config_files": [str(c) for c in self.config_files], "slr_plan": self.slr_plan,
                 "profile": self.profile}, indent=2) + "\n"),
            "xrt.ini": (self.xrt_ini_path, xrt_ini(self.profile)),
        }
        if verilog is not None:
            texts["constraints"] = (self.cdc_path, kernel_constraints(verilog, self.ntt_clock_mhz))
            hook = [f"# Generated by hw/flow/vitis.py for {self.params.tag()}: v++ runs it before opt_design.",
                    f"source {{{self.cdc_path}}}"]
            if self.slr_plan:
                from nantucket.hw.flow.slr_plan import slr_tcl
                texts["slr_plan"] = (self.slr_path, slr_tcl(self.params))
                hook.append(f"source {{{self.slr_path}}}")
            texts["impl_hook"] = (self.impl_hook_path, "\n".join(hook) + "\n")
        script = ["#!/bin/sh", f"# Generated by hw/flow/vitis.py for {self.params.tag()} {self.target}.",
                  "set -e", f"cd {shlex.quote(str(self.out_dir))}"]
        script += [shlex.join(argv) for _, argv in self.commands()]
        texts["script"] = (self.script_path, "\n".join(script) + "\n")
        for what, (path, text) in texts.items():
            path.write_text(text)
            written[what] = path
        self.script_path.chmod(0o755)
        if verilog is not None:
            problems = check_consistency(self.params, verilog, xml_text, texts["connectivity"][1])
            if problems:
                raise BuildFailed("generated inputs disagree with the RTL: " + "; ".join(problems))
        return written


def _run_step(name: str, argv: list[str], cwd: Path, log) -> None:
    """Run one tool, echoing its output with elapsed time; BuildFailed on a non-zero exit."""
    t0 = time.monotonic()
    logfile = cwd / f"{name}.out"
    log(f"vitis: [{name}] {shlex.join(argv)}")
    saw_hada = False
    with open(logfile, "w") as out, subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE,
                                                     stderr=subprocess.STDOUT, text=True) as proc:
        for line in proc.stdout:
            out.write(line)
            saw_hada |= HADA_ERROR in line
            el = int(time.monotonic() - t0)
            log(f"[{name} {el // 60:02d}:{el % 60:02d}] {line.rstrip()}")
    el = time.monotonic() - t0
    if proc.returncode != 0:
        hint = (f" (the known intermittent Vitis 2022.1 '{HADA_ERROR}' error: re-run the build)"
                if saw_hada else "")
        err = BuildFailed(f"{name} failed with exit status {proc.returncode} after {el:.0f} s; "
                          f"log: {logfile}{hint}")
        err.hada = saw_hada
        raise err
    log(f"vitis: [{name}] done in {el:.0f} s")


def build(vb: VitisBuild, inputs_only: bool = False, retries: int = 1, log=print,
          verilog: str | None = None) -> Path | None:
    """Write the inputs, then (unless inputs_only) check the tools and run package, link (and
    emconfigutil). Returns the xclbin path, or None for inputs_only. Raises ToolsMissing with a
    one-line message, or BuildFailed. ``verilog`` overrides the catalog's kernel RTL."""
    t0 = time.monotonic()
    written = vb.write_inputs(verilog, log=log)
    log(f"vitis: wrote {', '.join(p.name for p in written.values())} to {vb.out_dir}")
    if inputs_only:
        return None
    missing = missing_tools(vb.target, vb.platform)
    if "verilog" not in written:
        missing.insert(0, "kernel RTL (hw.flow.catalog 'kernel')")
    if missing:
        raise ToolsMissing(f"missing {', '.join(missing)}: {SETTINGS_HINT}")
    for name, argv in vb.commands():
        for attempt in range(retries + 1):
            try:
                _run_step(name, argv, vb.out_dir, log)
                break
            except BuildFailed as e:
                if not getattr(e, "hada", False) or attempt == retries:
                    raise
                log(f"vitis: {e}; re-running (attempt {attempt + 2} of {retries + 1})")
    el = time.monotonic() - t0
    log(f"vitis: built {vb.xclbin_path} in {el // 3600:.0f} h {el % 3600 / 60:.0f} min")
    return vb.xclbin_path


def main(argv=None) -> int:
    """``python scripts/vitis_build.py`` / ``make build``: see docs/build.md."""
    import argparse
    ap = argparse.ArgumentParser(prog="vitis_build", description="Vitis build of the nantucket kernel")
    ap.add_argument("--target", default="hw", choices=TARGETS)
    ap.add_argument("--platform", default=DEFAULT_PLATFORM)
    ap.add_argument("--field", default=BuildParams.field, help="the build's prime field (a preset name)")
    ap.add_argument("--lanes", type=int, help="default: the field's default build's (16, 32 in a 31-bit field)")
    ap.add_argument("--log-core", type=int, help="default: 12")
    ap.add_argument("--channels", type=int, help="default: 32")
    ap.add_argument("--ntt-clock-mhz", type=int, default=NTT_CLOCK_REQUEST_MHZ)
    ap.add_argument("--out-dir", type=Path)
    ap.add_argument("--vpp-flags", default="", help="extra v++ --link flags, one shell-quoted string")
    ap.add_argument("--config", type=Path, action="append", default=[],
                    help="extra v++ config file (repeatable), after connectivity.cfg")
    ap.add_argument("--slr-plan", action="store_true", help="add the SLR pblocks (docs/build.md)")
    ap.add_argument("--profile", action="store_true", help="link XRT's profiling monitors")
    ap.add_argument("--inputs-only", action="store_true", help="write the generated inputs and stop")
    ap.add_argument("--rtl", type=Path, metavar="FILE",
                    help="only write the kernel Verilog (top module nantucket) to FILE")
    ap.add_argument("--retries", type=int, default=1,
                    help=f"re-runs after the intermittent '{HADA_ERROR}' failure")
    args = ap.parse_args(argv)
    try:
        given = {k: v for k, v in (("lanes", args.lanes), ("log_core", args.log_core), ("channels", args.channels))
                 if v is not None}
        params = BuildParams.default_for(args.field, **given)
        if args.rtl is not None:
            text = emit_kernel_verilog(params)
            args.rtl.parent.mkdir(parents=True, exist_ok=True)
            tmp = args.rtl.with_name(args.rtl.name + ".tmp")
            tmp.write_text(text)
            tmp.replace(args.rtl)               # never a half-written file
            print(f"vitis: wrote {args.rtl} (top module {R.KERNEL_NAME}, {params.tag()})")
            return 0
        try:
            flags = shlex.split(args.vpp_flags)
        except ValueError as e:
            raise ValueError(f"--vpp-flags: {e}") from None
        vb = VitisBuild(params, args.target, args.platform, args.out_dir, args.ntt_clock_mhz,
                        vpp_flags=flags, config_files=args.config, slr_plan=args.slr_plan,
                        profile=args.profile)
        build(vb, inputs_only=args.inputs_only, retries=args.retries,
              log=lambda m: print(m, flush=True))
    except (ToolsMissing, BuildFailed, TypeError, ValueError) as e:
        print(f"vitis_build: {e}", file=sys.stderr)
        return 2
    return 0

"""Facts the docs state that change with the code: each place is read and compared with the one definition.

- the register map's VERSION (and the rest of the identification block) in docs/build.md's sample report,
  against ``hw.model.regmap`` and the default build;
- the default clocks wherever a doc states them as the default, against ``BuildParams``' ``dma_mhz`` and
  ``ntt_mhz``;
- the fields the card runs, in the README, pyproject.toml's description, the ``nantucket`` docstring and
  docs/api.md, against the field registry (``hw.model.field.FIELDS``);
- the cocotb benches docs/architecture.md lists, against the modules in sim/benches/.

Each check reads the number or the names out of the prose (whitespace, line breaks and Markdown emphasis
do not matter) and fails naming the file, the place and the value the code has. (docs/build.md's register
table is generated: scripts/regmap_doc.py, tests/test_regmap.py.)
"""

import re
import tomllib
from pathlib import Path

import pytest

import nantucket
from nantucket.hw.model import regmap as R
from nantucket.hw.model.field import FIELDS
from nantucket.hw.model.params import DEFAULT, BuildParams

REPO = Path(__file__).resolve().parent.parent


def _read(rel: str) -> str:
    return (REPO / rel).read_text()


def _flat(text: str) -> str:
    """Prose with its line breaks, runs of blanks and Markdown emphasis (``**``, backticks) removed."""
    return re.sub(r"\s+", " ", text.replace("**", "").replace("`", ""))


def _one(pattern: str, text: str, where: str) -> re.Match:
    found = list(re.finditer(pattern, text))
    assert len(found) == 1, f"{where}: expected one place matching {pattern!r}, found {len(found)} (moved? reworded?)"
    return found[0]


# -- the identification block in docs/build.md's sample report ------------------------------------------------

def _sample_identity() -> dict[str, int]:
    """KEY value pairs of the ``Identity`` line of build.md's sample report (hex or decimal)."""
    line = _one(r"(?m)^Identity\.*\s+ID block:(.*)$", _read("docs/build.md"), "docs/build.md's sample report").group(1)
    return {k: int(v, 0) for k, v in re.findall(r"\b([A-Z_]+) (0x[0-9A-Fa-f]+|\d+)\b", line)}


def test_build_md_sample_reports_this_register_map():
    """The sample's ID block is what a default card reads: VERSION from hw.model.regmap, the build's
    parameters, its native size range and its field's code."""
    ids = _sample_identity()
    want = {"MAGIC": R.MAGIC, "VERSION": R.VERSION, "LANES": DEFAULT.lanes, "LOG_CORE": DEFAULT.log_core,
            "CHANNELS": DEFAULT.channels, "MIN_LOG_N": DEFAULT.min_log_n, "MAX_LOG_N": DEFAULT.max_log_n,
            "FIELD": R.field_code(DEFAULT.field)}
    for name, value in want.items():
        assert ids.get(name) == value, (f"docs/build.md, the sample report's Identity line: {name} "
                                        f"{ids.get(name)}, the code's is {value}")


def test_every_id_register_is_in_the_sample():
    """A register added to the identification block appears in the sample too (STATUS is not printed)."""
    missing = [n for n in R.ID_REGISTERS if n != "STATUS" and n not in _sample_identity()]
    assert not missing, f"docs/build.md, the sample report's Identity line lacks {missing}"


# -- the default clocks ---------------------------------------------------------------------------------------

DMA, NTT = BuildParams().dma_mhz, BuildParams().ntt_mhz

#: (file, what the place is, a pattern whose groups are the clocks it states, the defaults they must be).
CLOCK_PLACES = [
    ("docs/build.md", "the link's --kernel_frequency (clock 0 at dma_mhz)",
     r'--kernel_frequency "0:(\d+)\|1:', (DMA,)),
    ("docs/build.md", "the link's clock 0 (dma_mhz ... by default)",
     r"build's dma_mhz \((\d+(?:\.\d+)?) MHz by default", (DMA,)),
    ("docs/build.md", '"The clock the projections assume": dma_mhz',
     r"dma_mhz \((\d+(?:\.\d+)?) MHz by default: the HBM", (DMA,)),
    ("docs/build.md", '"The clock the projections assume": ntt_mhz',
     r"ntt_mhz \((\d+(?:\.\d+)?) MHz by default", (NTT,)),
    ("docs/architecture.md", "the clock table's clock 0 (dma) row",
     r"\| clock 0 \| ap_clk [^\n]*?\| dma \|[^\n]*?\| (\d+(?:\.\d+)?) MHz \|", (DMA,)),
    ("docs/architecture.md", "the clock table's clock 1 (ntt) row",
     r"\| clock 1 \| ap_clk_2 [^\n]*?\| ntt \|[^\n]*?\| (\d+(?:\.\d+)?) MHz \|", (NTT,)),
    ("docs/architecture.md", "the block diagram's caption (DMA side, then the engine)",
     r"AXI masters at (\d+(?:\.\d+)?) MHz, the NTT engine at (\d+(?:\.\d+)?) MHz", (DMA, NTT)),
    ("docs/architecture.md", "the bandwidth budget's clocks (the defaults)",
     r"at (\d+(?:\.\d+)?) MHz NTT and (\d+(?:\.\d+)?) MHz DMA clock \(the defaults", (NTT, DMA)),
]


@pytest.mark.parametrize("rel, place, pattern, want", CLOCK_PLACES, ids=[p[1] for p in CLOCK_PLACES])
def test_docs_state_the_default_clocks(rel, place, pattern, want):
    text = _flat(_read(rel)) if "|" not in pattern else _read(rel).replace("`", "").replace("**", "")
    got = tuple(float(g) for g in _one(pattern, text, f"{rel}, {place}").groups())
    assert got == want, f"{rel}, {place}: says {got} MHz, BuildParams' defaults are {want} MHz"


# -- the fields the card runs ---------------------------------------------------------------------------------

def _families() -> set[str]:
    """The fields as prose names them: one name per prime (goldilocks and goldilocks-plonky2 share one)."""
    by_prime = {}
    for f in FIELDS.values():
        by_prime.setdefault(f.p, f.name.split("-")[0])
    return set(by_prime.values())


def _readme_intro() -> str:
    return _read("README.md").split("\n## ", 1)[0]


def _section(text: str, heading: str) -> str:
    return _one(rf"(?ms)^#+ {re.escape(heading)}\n(.*?)(?=^#)", text, heading).group(1)


FIELD_PLACES = {
    "README.md, the intro": _readme_intro,
    "pyproject.toml, project.description": lambda: tomllib.loads(_read("pyproject.toml"))["project"]["description"],
    "nantucket/__init__.py, the docstring's first paragraph": lambda: nantucket.__doc__.split("\n\n")[0],
    "docs/api.md, the intro": lambda: _read("docs/api.md").split("\n## ", 1)[0],
}


@pytest.mark.parametrize("place", FIELD_PLACES)
def test_every_field_is_named(place):
    """Every field of the registry runs on the card: each place that says what nantucket computes over
    names every one (by its family: BabyBear, KoalaBear, Goldilocks)."""
    text = FIELD_PLACES[place]().lower().replace("-", "")
    missing = sorted(f for f in _families() if f.replace("-", "") not in text)
    assert not missing, f"{place}: does not name {missing} (hw.model.field.FIELDS: {sorted(_families())})"


@pytest.mark.parametrize("place, text", [
    ("nantucket/__init__.py, the docstring's first paragraph", lambda: nantucket.__doc__.split("\n\n")[0]),
    ('README.md, "Fields"', lambda: _section(_read("README.md"), "Fields")),
    ("docs/api.md, the intro", lambda: _read("docs/api.md").split("\n## ", 1)[0]),
])
def test_field_presets_by_name(place, text):
    """The places that list the presets a caller names (field=, --field) list each registry name."""
    body = _flat(text())
    missing = [n for n in FIELDS if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", body)]
    assert not missing, f"{place}: lacks the preset names {missing} (hw.model.field.FIELD_NAMES)"


# -- the benches docs/architecture.md lists --------------------------------------------------------------------

def test_architecture_lists_every_bench():
    """docs/architecture.md's sim/benches/ line names every bench module there and no other."""
    line = _one(r"- sim/benches/: the cocotb benches, one module per block under test \((.*?)\) and their shared",
                _flat(_read("docs/architecture.md")), "docs/architecture.md, the sim/benches/ line").group(1)
    listed = set(re.findall(r"\b([a-z_]+)\b(?: \([^)]*\))?", re.sub(r"\([^)]*\)", "", line)))
    there = {p.stem for p in (REPO / "sim" / "benches").glob("*.py") if p.stem not in ("__init__", "lib")}
    assert listed == there, (f"docs/architecture.md, the sim/benches/ line: lists {sorted(listed - there)} that "
                             f"sim/benches/ lacks, lacks {sorted(there - listed)}")


def test_block_diagram_draws_the_default_clocks():
    """docs/img/block_diagram.svg (make diagrams) labels each domain with its default clock."""
    svg = _read("docs/img/block_diagram.svg")
    for domain, want in (("dma", DMA), ("ntt", NTT)):
        got = float(_one(rf"{domain} domain: [a-z_0-9]+, (\d+(?:\.\d+)?) MHz", svg,
                         f"docs/img/block_diagram.svg, the {domain} domain's label").group(1))
        assert got == want, (f"docs/img/block_diagram.svg, the {domain} domain's label: {got} MHz, BuildParams' "
                             f"default is {want} MHz (make diagrams)")

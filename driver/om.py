"""The offline model file (`.om`): a compiled program in one file.

A zip archive (stored, not compressed: weights barely compress and a stored
member can be read without inflating it) holding

* `program.mlir`  the final program as MLIR text, each weight a `dense_resource<name>`,
  the memory plan as attributes on its buffers (offsets, lifetimes,
  `ascend.workspace_size`);
* `weights.bin`   the weights' raw bytes, each at a 64-byte aligned offset (no hex
  text: the file is the weights plus the program, and loading reads them as they lie);
* `program.bin`   the same program in geir's binary form (ir/bytecode.py), which is what
  the loader reads: no parsing, no code run, each constant's bytes by name from
  `weights.bin` (ResNet-50: 16k ops in ~0.3 s, against seconds of parsing the text);
* `manifest.json` what a loader checks before reading: the format version, the
  device and options it was compiled for, the stage names, the inputs and
  outputs (name, shape, dtype), each weight's offset and size in `weights.bin`, and
  the SHA-256 of `program.bin`.

The text stays the program people and tools read (`unzip -p m.om program.mlir`). The binary
form is written from the module that was verified before saving, and is not verified again on
load: the digest says its bytes are the ones written (a file whose digest does not match is
an error, not a silent re-parse). Version 2 files (the weights as hex resource blobs inside
`program.mlir`) and version 3 files (no `program.bin`) still load, from the text, verified.

A geared model (driver/gears.py) holds every gear's program in `program.mlir`, each
a module `@gear_<i>` inside one top-level module, so a weight the gears share is one
resource blob; the manifest lists the gears (their shapes and the option).

The bytes depend only on the model and the options (fixed member order and
timestamps): two compiles give the same file.

GE's .om is the same idea: the graph, the weights and the memory plan in one
file that the runtime loads without recompiling.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import asdict
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from geir.driver.pipelines import PipelineOptions
from geir.errors import GeirError
from geir.ir import bytecode
from geir.dialects import make_context

FORMAT = "geir-om"
VERSION = 4
"""2: memory spaces are strings (`"gm"`), not `#ascend.space<gm>` (docs/ascend.md);
3: the weights as raw bytes in `weights.bin`; 4: the program's binary form in `program.bin`."""
READS = (2, 3, VERSION)
"""The versions this geir loads."""
PROGRAM, MANIFEST, WEIGHTS, BINARY = "program.mlir", "manifest.json", "weights.bin", "program.bin"
WEIGHT_ALIGN = 64
"""Bytes each weight's offset in `weights.bin` is a multiple of."""
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
"""Every member's timestamp: the earliest a zip can hold (reproducible builds)."""


def is_om(path: str | Path) -> bool:
    from geir.frontend.onnx import existing_file

    file = existing_file(path)
    return Path(path).suffix == ".om" if file is None else (file.suffix == ".om" or zipfile.is_zipfile(file))


def save_om(compiled, path: str | Path, gears=None, ranks=None) -> None:
    """Write a CompiledModel as an offline model file; a GearedModel (driver/gears.py) passes
    itself as `gears` too: every gear's program is written; a DistributedModel
    (driver/distributed.py) as `ranks`: every rank's program, as modules `@rank_<i>`."""
    from xdsl.dialects.builtin import StringAttr

    from geir.ir.text import print_module

    module = compiled.module
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "device": compiled.options.device,
        "options": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(compiled.options).items()},
        "stages": compiled.stage_names,
        "unavailable_passes": compiled.unavailable,
        "inputs": [_spec(n, s, d) for n, s, d in compiled.input_specs()],
        "outputs": compiled.output_names(),
    }
    if gears is not None:
        manifest["gears"] = gears.manifest()
        from xdsl.dialects.builtin import ArrayAttr, SymbolRefAttr

        from geir.dialects import ascend as a

        programs = [p.module.clone() for p in gears.programs]
        for i, m in enumerate(programs):
            m.sym_name = StringAttr(f"gear_{i}")
        select = a.GearsOp.create(attributes={
            "programs": ArrayAttr([SymbolRefAttr(f"gear_{i}") for i in range(len(programs))]),
            "option": StringAttr(manifest["gears"]["option"])})
        module = ModuleOp([*programs, select])
        module.verify()
    if ranks is not None:
        manifest["ranks"] = ranks.manifest()
        programs = [p.module.clone() for p in ranks.programs]
        for i, m in enumerate(programs):
            m.sym_name = StringAttr(f"rank_{i}")
        module = ModuleOp(programs)
        module.verify()
    blobs: dict[str, bytes] = {}
    program = print_module(module, blobs=blobs)
    weights, table, offset = [], {}, 0
    for name, data in blobs.items():
        pad = -offset % WEIGHT_ALIGN
        weights += [b"\0" * pad, data]
        offset += pad
        table[name] = [offset, len(data)]
        offset += len(data)
    manifest["weights"] = table
    try:
        binary = bytecode.encode(module, external={data: name for name, data in blobs.items()})
        manifest["program_sha256"] = hashlib.sha256(binary).hexdigest()
    except bytecode.BytecodeError:  # a use before its definition in program order: the text alone
        binary, manifest["version"] = None, 3
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(_member(MANIFEST), json.dumps(manifest, indent=2))
        z.writestr(_member(PROGRAM), program)
        if binary is not None:
            z.writestr(_member(BINARY), binary)
        with z.open(_member(WEIGHTS), "w", force_zip64=offset >= 1 << 31) as f:
            for chunk in weights:
                f.write(chunk)


def _member(name: str) -> zipfile.ZipInfo:
    """A member whose header depends on nothing but its name: no time of writing, no
    host's permissions, so two compiles of a model give the same bytes."""
    info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
    info.create_system = 3  # unix, whatever the host
    info.external_attr = 0o644 << 16
    return info


def load_om(path: str | Path) -> tuple[PipelineOptions, ModuleOp | list[ModuleOp], list[str], dict | None]:
    """Read an offline model file: (its compile options, its verified program - one per gear
    for a geared model -, the passes that were not available when it was compiled, the
    manifest's gears or None). `geir.load` makes a CompiledModel (GearedModel) of it."""
    path = Path(path)
    manifest, module = read_program(path)
    options = manifest.get("options", {})
    for key in ("disable_passes", "disable_fusions"):
        options[key] = tuple(options.get(key, ()))
    ranks = manifest.get("ranks")
    if ranks is not None:  # a multi-device model: each rank's program (om_ranks says how they run)
        programs = [m for m in module.ops if isinstance(m, ModuleOp)]
        if len(programs) != ranks.get("count"):
            raise GeirError(f"{path}: the manifest lists {ranks.get('count')} ranks, the program holds {len(programs)}")
        for m in programs:
            m.detach()
            m.sym_name = None
        module = programs
    gears = manifest.get("gears")
    if gears is not None:
        programs = gear_programs(module)
        count = len(gears.get("shapes") or gears.get("ranges") or ())  # gears, or range buckets
        if programs is None or len(programs) != count:
            raise GeirError(f"{path}: the manifest lists {count} gears, the program holds "
                            f"{0 if programs is None else len(programs)}")
        module = programs
    return PipelineOptions(**options), module, list(manifest.get("unavailable_passes", [])), gears


def read_program(path: str | Path) -> tuple[dict, ModuleOp]:
    """(The manifest, the verified top-level program with its weights) of an offline model
    file: as written, a geared or multi-device model's programs still inside it."""
    from geir.ir.text import parse_module

    path = Path(path)
    if not path.is_file():
        raise GeirError(f"no such file: {path}")
    try:
        with zipfile.ZipFile(path) as z:
            manifest = json.loads(z.read(MANIFEST))
            version = manifest.get("version")
            binary = z.read(BINARY) if version == VERSION else None
            text = z.read(PROGRAM).decode() if binary is None else ""
            weights = z.read(WEIGHTS) if version in (3, VERSION) else b""
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as e:
        raise GeirError(f"{path} is not a geir offline model: {e}") from None
    if manifest.get("format") != FORMAT or manifest.get("version") not in READS:
        raise GeirError(
            f"{path}: unsupported offline model format {manifest.get('format')!r} "
            f"version {manifest.get('version')!r} (this geir reads {FORMAT} {', '.join(map(str, READS))})"
        )
    view = memoryview(weights)
    blobs = {}
    for name, where in manifest.get("weights", {}).items():
        if not (isinstance(where, list) and len(where) == 2 and all(isinstance(n, int) for n in where)):
            raise GeirError(f"{path}: the manifest places weight '{name}' at {where!r}, not [offset, size]")
        offset, size = where
        if offset < 0 or size < 0 or offset + size > len(weights):
            raise GeirError(f"{path}: weight '{name}' lies outside {WEIGHTS} ({offset} + {size} > {len(weights)} bytes)")
        blobs[name] = view[offset:offset + size]
    if binary is None:
        module = parse_module(text, make_context(), name=f"{path}:{PROGRAM}", blobs=blobs)
        module.verify()
        return manifest, module
    if hashlib.sha256(binary).hexdigest() != manifest.get("program_sha256"):
        raise GeirError(f"{path}: {BINARY} does not match the manifest's digest (a damaged or altered file)")
    try:
        return manifest, bytecode.decode(binary, make_context(), blobs)
    except bytecode.BytecodeError as e:
        raise GeirError(f"{path}:{BINARY}: {e}") from None


def om_ranks(path: str | Path) -> dict | None:
    """The manifest's ranks of a multi-device offline model (driver/distributed.py), None for
    any other file."""
    try:
        with zipfile.ZipFile(path) as z:
            return json.loads(z.read(MANIFEST)).get("ranks")
    except (OSError, zipfile.BadZipFile, KeyError, json.JSONDecodeError):
        return None


def is_geared(path: str | Path) -> bool:
    """An offline model holding several gears (from its manifest alone; False for a file
    that is no offline model, whose loading then says what is wrong)."""
    try:
        with zipfile.ZipFile(path) as z:
            return json.loads(z.read(MANIFEST)).get("gears") is not None
    except (OSError, zipfile.BadZipFile, KeyError, json.JSONDecodeError):
        return False


def gear_programs(module: ModuleOp) -> list[ModuleOp] | None:
    """The programs of a geared module (its `ascend.gears` op's, in order, detached and
    unnamed so each runs alone), or None for a module without one."""
    from geir.dialects import ascend as a

    select = next((op for op in module.ops if isinstance(op, a.GearsOp)), None)
    if select is None:
        return None
    programs = select.program_modules()
    for m in programs:
        m.detach()
        m.sym_name = None
    return programs


def _spec(name, shape, dtype) -> dict:
    return {"name": name, "shape": list(shape), "dtype": str(dtype)}

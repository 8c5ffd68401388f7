"""RESIZE_BILINEAR's error bound (`bounds.resize_bilinear_terms`): a driver that places each sample
at ``x / (out / in)`` in float32 (onnxruntime's way), not at ``x`` times the quotient rounded to
float32 (NNAPI's CPU implementation's), is a few ulps of a position off, which moves a result by
that much of the difference of two neighbours; the bound accepts it, and the seeded bug of the
operation still fails."""

from __future__ import annotations

import numpy as np
import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import OperandType, OperationType
from harness.judging.builders import ModelBuilder
from harness.judging.oracle import assert_conforms, run_scenario
from harness.judging.scenario import Scenario
from harness.plugins.mutants import MUTANTS
from harness.strategies.domains import request
from reference_driver import ReferenceDevice
from reference_driver.ops import KERNELS, Kernel

F32, INT32, BOOL = OperandType.TENSOR_FLOAT32, OperandType.INT32, OperandType.BOOL


def _resize(x: np.ndarray, out_h: int, out_w: int, align: bool, half: bool) -> Scenario:
    builder = ModelBuilder()
    given = builder.input(F32, x.shape)
    flags = [builder.constant(BOOL, flag) for flag in (False, align, half)]
    builder.operation(OperationType.RESIZE_BILINEAR, [given, builder.scalar(out_w), builder.scalar(out_h), *flags], F32,
                      (x.shape[0], out_h, out_w, x.shape[3]))
    model = Scenario(builder.subgraph(), bytes(builder.values), notes=("RESIZE_BILINEAR",))
    return request(model, [x], [x.shape[0] * out_h * out_w * x.shape[3] * 4])


def _positions(size: int, out: int, align: bool, half: bool) -> np.ndarray:
    """Each output's source position, the quotient taken per position in float32."""
    steps = np.arange(out, dtype=np.float32)
    if align and out > 1:
        return steps * np.float32(size - 1) / np.float32(out - 1)
    ratio = np.float32(out) / np.float32(size)
    return (steps + np.float32(0.5)) / ratio - np.float32(0.5) if half else steps / ratio


def _dividing() -> ReferenceDevice:
    def run(values, ins, out_op, out):
        x = np.asarray(values[0], np.float32)
        out_w, out_h = int(values[1]), int(values[2])
        align, half = bool(values[4]), bool(values[5])
        rows, columns = _positions(x.shape[1], out_h, align, half), _positions(x.shape[2], out_w, align, half)
        result = np.empty((x.shape[0], out_h, out_w, x.shape[3]), np.float32)
        for y, py in enumerate(rows):
            top, bottom = max(int(np.floor(py)), 0), min(int(np.ceil(py)), x.shape[1] - 1)
            down = np.float32(py - np.float32(max(np.floor(py), 0)))
            for c, px in enumerate(columns):
                left, right = max(int(np.floor(px)), 0), min(int(np.ceil(px)), x.shape[2] - 1)
                across = np.float32(px - np.float32(max(np.floor(px), 0)))
                upper = x[:, top, left] * (1 - across) + x[:, top, right] * across
                lower = x[:, bottom, left] * (1 - across) + x[:, bottom, right] * across
                result[:, y, c] = upper * (1 - down) + lower * down
        return result

    device = ReferenceDevice()
    device.kernels[OperationType.RESIZE_BILINEAR] = Kernel(KERNELS[OperationType.RESIZE_BILINEAR].validate, run)
    return device


def _judge(device, scenario: Scenario) -> None:
    assert_conforms("POOL-2", scenario, run_scenario(ReferenceDevice(), scenario), run_scenario(device, scenario))


@pytest.mark.parametrize("align, half", [(False, False), (True, False), (False, True)],
                         ids=["asymmetric", "align-corners", "half-pixel"])
def test_positions_computed_by_division_pass(align: bool, half: bool) -> None:
    device, differed = _dividing(), 0
    rng = np.random.default_rng(7)
    for size in ((3, 5), (6, 7), (9, 4)):
        for out in ((7, 11), (13, 5), (4, 17)):
            x = rng.uniform(-8, 8, (1, *size, 2)).astype(np.float32)
            scenario = _resize(x, *out, align, half)
            if run_scenario(device, scenario).outputs != run_scenario(ReferenceDevice(), scenario).outputs:
                differed += 1
                _judge(device, scenario)
    assert differed, "placing the samples by division never differed from the reference"


def test_the_seeded_bug_fails() -> None:
    x = np.random.default_rng(3).uniform(-8, 8, (1, 5, 6, 2)).astype(np.float32)
    with pytest.raises(ConformanceError, match="POOL-2"):
        _judge(MUTANTS["resize-bilinear-ignores-half-pixel-centers"].factory(), _resize(x, 9, 11, False, True))

"""Hypothesis strategies for scenarios: pure functions of draws, no driver calls."""

from .layouts import request_layouts, scenarios
from .models import ModelCase, model_cases
from .values import arrays, declared_dimensions, operand_types, quantization, shapes

__all__ = [
    "ModelCase",
    "arrays",
    "declared_dimensions",
    "model_cases",
    "operand_types",
    "quantization",
    "request_layouts",
    "scenarios",
    "shapes",
]

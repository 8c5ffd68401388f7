"""Custom calls (SPEC section 5): targets, XLA's calling conventions, red zones."""

from harness.custom_calls.shapes import Leaf, Shape, TupleShape, leaves
from harness.custom_calls.targets import CallCase, CustomCallError, CustomCallTarget, TargetRegistry

__all__ = ["CallCase", "CustomCallError", "CustomCallTarget", "Leaf", "Shape", "TargetRegistry", "TupleShape", "leaves"]

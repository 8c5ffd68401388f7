"""What the CONV_2D generator sends: only what NNAPI's CPU implementation runs (CHOICE-8)."""

from __future__ import annotations

from hypothesis import given, settings

from harness.strategies.models import conv_2d_models
from reference_driver import ReferenceDevice


@settings(max_examples=400, database=None, deadline=None)
@given(conv_2d_models(ReferenceDevice().capabilities()))
def test_explicit_padding_is_narrower_than_the_dilated_filter(case) -> None:
    """NNAPI's CPU implementation refuses padding on a side as wide as the dilated filter or wider,
    and NeuralNetworks.h leaves it open: a driver may refuse it, so no model asks for it.  The
    reference refuses it too, so a suite run on the reference alone would not show one sent."""
    made = dict(case.choices)
    if made["implicit padding"]:
        return
    for axis, name, sides in (("h", "height", ("top", "bottom")), ("w", "width", ("left", "right"))):
        span = (made[f"filter {name}"] - 1) * made.get(f"dilation {axis}", 1) + 1
        assert all(made[f"pad {side}"] < span for side in sides), (case.label, made)
